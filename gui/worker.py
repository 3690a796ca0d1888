"""Training in a worker thread (docs/design.md#processes-threads-and-caches).

`TrainingWorker` is a QThread that builds a `engine.training.trainer.Trainer` and pulls `Trainer.steps()`; first,
when the corpus is more than a character vocabulary's, it has a child process make the corpus ready (read,
fitted and encoded into the token cache: engine/training/preparation.py) and waits for it without the
interpreter lock, so the trainer it builds then reads the cache instead of tokenising beside the GUI thread
(a GPT-2 BPE's one encode held the lock ~36 s); Stop ends that child at once. Pause,
single step, resume and stop are flags checked between steps (the generator pauses by not being asked for
its next report, and closing it writes a checkpoint, so a stopped run resumes). Everything it tells the
GUI goes out as a signal, delivered through a queued connection: step reports, weight copies (every
`weights_every` steps, when a pane asked for them, and whenever training comes to rest), samples and
checkpoints. Work the GUI asks of the live model (a sample, a checkpoint) is queued and done between steps,
so the model is only ever touched by this thread.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QThread, Signal

from engine.child_job import ChildJob
from engine.errors import UserError
from engine.model.sampling import SampleRequest

from .torch_import import ensure_torch

_STEP, _STOP, _REST = "step", "stop", "rest"
PREPARING = ("Reading and tokenising the corpus in a process of its own; training starts when it is ready "
             "(the first time for a tokenizer and a corpus, a GPT-2 vocabulary takes a few seconds).")


@dataclass(frozen=True)
class TrainerInfo:
    """What the GUI may know of a trainer once it is built (never the trainer itself)."""

    run_dir: str | None
    config: object        # the resolved ExperimentConfig (vocab_size set)
    tokenizer: object
    device: str           # "cpu", "cuda", ...
    device_name: str      # what the status bar shows: the CUDA device's name, or "CPU", and the precision
    step: int
    notice: str | None = None  # a sentence for the banner that does not stop training (compile fell back)


def _how(trainer) -> str:
    from engine.training.acceleration import precision_name

    return precision_name(trainer.autocast_dtype) + (" · compiled" if trainer.compiled else "")


def describe_error(e: BaseException) -> str:
    """One sentence for the banner: what happened and what to do. Bugs keep their traceback on stderr."""
    text = str(e)
    if isinstance(e, MemoryError) or "out of memory" in text.lower():
        return ("Out of memory: the model or the batch is too big for this device. Lower the batch size, "
                "the context length or d_model, or train on the CPU. The run was kept and can be resumed.")
    if isinstance(e, UserError):
        return text
    traceback.print_exception(e, file=sys.stderr)
    first = text.splitlines()[0][:200] if text else ""
    return (f"Training stopped on an internal error ({type(e).__name__}: {first}). "
            "The details are on the terminal; the run's last checkpoint is kept.")


def device_name(device) -> str:
    if getattr(device, "type", str(device)) == "cuda":
        import torch

        return f"CUDA: {torch.cuda.get_device_name(device)}"
    return {"cpu": "CPU", "mps": "Apple MPS"}.get(getattr(device, "type", str(device)), str(device))


class TrainingWorker(QThread):
    sig_started = Signal(object)          # TrainerInfo
    sig_step_reported = Signal(object)    # engine.training.trainer.StepReport
    sig_weights_ready = Signal(int, object)  # step, {name: CPU tensor}
    sig_state_changed = Signal(str)       # running | paused | stopped | finished | error
    sig_failed = Signal(str)              # a sentence for the banner
    sig_sample_ready = Signal(object, str)  # SampleRequest, text
    sig_checkpoint_saved = Signal(str)    # path
    sig_preparing = Signal(str)           # a sentence: the corpus is being made ready in a child process

    def __init__(self, make_trainer: Callable[[], object], *, paused: bool = False, weights_every: int = 0,
                 prepare: Callable[[], object] | None = None, parent=None):
        """`prepare`: picklable work run in a child process before the trainer is built (None: none)."""
        super().__init__(parent)
        self._make_trainer = make_trainer
        self._prepare = prepare
        self.preparation_pid: int | None = None  # the child that made the corpus ready (tests read it)
        self._cond = threading.Condition()
        self._paused, self._stop, self._budget = paused, False, 0
        self._jobs: deque[Callable] = deque()
        self.weights_every = weights_every   # read between steps; an int store is atomic
        self._published = -1
        self._state = ""

    # ---- called from the GUI thread --------------------------------------------------------

    def pause(self) -> None:
        with self._cond:
            self._paused, self._budget = True, 0
            self._cond.notify_all()

    def resume(self) -> None:
        with self._cond:
            self._paused = False
            self._cond.notify_all()

    def step_once(self) -> None:
        with self._cond:
            self._paused = True
            self._budget += 1
            self._cond.notify_all()

    def stop(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()

    def request_sample(self, request: SampleRequest) -> None:
        def job(trainer):
            text = trainer.sample(request.prompt, request.n_tokens, request.temperature,
                                  request.top_k, request.seed)
            self.sig_sample_ready.emit(request, text)
        self._queue(job)

    def request_checkpoint(self) -> None:
        self._queue(lambda trainer: self.sig_checkpoint_saved.emit(str(trainer.save_checkpoint())))

    def _queue(self, job: Callable) -> None:
        with self._cond:
            self._jobs.append(job)
            self._cond.notify_all()

    # ---- the worker thread -----------------------------------------------------------------

    def run(self) -> None:
        try:
            if self._prepare is not None and not self._prepared():
                self._set_state("stopped")
                return
            ensure_torch()
            trainer = self._make_trainer()
        except BaseException as e:  # noqa: BLE001 — reported as a banner, never a traceback dialog
            self.sig_failed.emit(describe_error(e))
            self._set_state("error")
            return
        self.sig_started.emit(TrainerInfo(
            str(trainer.writer.path) if trainer.writer is not None else None, trainer.cfg,
            trainer.tokenizer, trainer.device.type, f"{device_name(trainer.device)} · {_how(trainer)}",
            trainer.step, trainer.compile_message))
        self._publish(trainer)
        self._train(trainer)

    def _prepared(self) -> bool:
        """Run `prepare` in a child process and wait for it; False when stopped meanwhile (the child is ended).
        A failure raises a UserError with the child's one line."""
        job = ChildJob(self._prepare, name="corpus")
        self.preparation_pid = job.pid
        self.sig_preparing.emit(PREPARING)
        while True:
            with self._cond:
                stopping = self._stop
            if stopping:
                job.cancel()
                return False
            for event in job.wait(0.2):
                if event[0] == "failed":
                    raise UserError(event[1])
                if event[0] == "done":
                    return True

    def _train(self, trainer) -> None:
        steps = trainer.steps()
        end = "stopped"
        try:
            while (job := self._next_job()) != _STOP:
                if job == _REST:
                    self._publish(trainer)  # panes show the weights training rests on
                    self._set_state("paused")
                    continue
                if job != _STEP:
                    self._run_job(job, trainer)
                    continue
                report = next(steps, None)
                if report is None or report.event == "done":
                    if report is not None:
                        self._report(report, trainer)
                    end = "finished"
                    break
                if report.event == "nan":
                    self.sig_step_reported.emit(report)
                    self.sig_failed.emit(report.message or "the loss is not finite; training stopped")
                    end = "error"
                    break
                self._report(report, trainer)
        except BaseException as e:  # noqa: BLE001
            self.sig_failed.emit(describe_error(e))
            end = "error"
        finally:
            try:
                steps.close()  # writes a checkpoint so the run resumes where it stopped
            except BaseException as e:  # noqa: BLE001
                self.sig_failed.emit("The checkpoint could not be written on stopping: " + describe_error(e))
            self._publish(trainer)
            self._set_state(end)

    def _report(self, report, trainer) -> None:
        self.sig_step_reported.emit(report)
        every = self.weights_every
        if self._paused or (every and report.step % every == 0):
            self._publish(trainer)  # a single step always shows its weights

    def _run_job(self, job: Callable, trainer) -> None:
        try:
            job(trainer)
        except BaseException as e:  # noqa: BLE001 — a failed sample must not end training
            self.sig_failed.emit(describe_error(e))

    def _next_job(self):
        """Block while paused with nothing to do; return a queued job, a step, stop, or (once, on
        coming to rest) _REST."""
        with self._cond:
            while True:
                if self._stop:
                    return _STOP
                if self._jobs:
                    return self._jobs.popleft()
                if not self._paused:
                    self._set_state("running")
                    return _STEP
                if self._budget > 0:
                    self._budget -= 1
                    return _STEP
                if self._state != "paused":
                    return _REST
                self._cond.wait()

    def _publish(self, trainer) -> None:
        if self.weights_every and trainer.step != self._published:
            self._published = trainer.step
            self.sig_weights_ready.emit(trainer.step, trainer.weights_copy())

    def _set_state(self, state: str) -> None:
        if state != self._state:
            self._state = state
            self.sig_state_changed.emit(state)
