"""The one owner of training: turns the Session's requests (train, pause, resume, step, stop, save, sample)
into a TrainingWorker, and the worker's signals back into Session state. Panes never hold the worker.

The shown run continues from its own latest checkpoint when the builder's config only edits its training
(engine/training/continuation.py: an imported GPT-2 given more steps fine-tunes from its weights; it used to
start a new run from random weights without a word) and it has steps left; an edit its weights cannot follow
(a new shape or vocabulary) asks first, naming what a new run will not keep; Train on a finished run asks
whether to continue it for more steps or start a new one; otherwise Train starts a new run directory under the
runs folder of the settings. The trainer is imported and built in the worker thread, so torch never loads on
the GUI thread.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt, Signal

from engine.analysis.questions import Sample
from engine.configs.config import ExperimentConfig
from engine.model.sampling import SampleRequest
from engine.training.preparation import corpus_preparation
from engine.workspace import OpenRun

from . import settings
from .child_work import ChildWork
from .jobs import JobQueue
from .widgets import dialogs
from .session import Session
from .torch_import import ensure_torch
from .worker import TrainingWorker, device_name

QUEUED = Qt.ConnectionType.QueuedConnection
CHECK_APART_BYTES = 32 * 1024  # a tokenizer file larger than this is opened in a child first (a 5,000-token
# BPE's is ~150 KB and held the interpreter lock ~0.3 s; a character vocabulary's is a few hundred bytes)


def new_run_path(root: Path, name: str) -> Path:
    """root/<name>-<timestamp>, made unique."""
    slug = re.sub(r"[^\w.-]+", "-", name).strip("-.") or "run"
    base = Path(root) / f"{slug}-{time.strftime('%Y%m%d-%H%M%S')}"
    path, i = base, 1
    while path.exists():
        i += 1
        path = base.with_name(f"{base.name}-{i}")
    return path


def _device_of(name: str) -> str:
    ensure_torch()
    from engine.training.device import pick_device

    return device_name(pick_device(name))


class TrainingController(QObject):
    sig_run_shown = Signal(str)         # a run asked for with open_run is open now (its path)
    sig_device_changed = Signal(str)    # "CPU", "CUDA: <name>", ...

    def __init__(self, session: Session, parent: QObject | None = None):
        super().__init__(parent)
        self.session = session
        self.worker: TrainingWorker | None = None
        self._training: OpenRun | None = None  # the run the worker trains: what it reports belongs to it
        self._jobs = JobQueue(self)
        self._opening = None  # gui.child_work.ChildWork checking a large run before it is shown
        self._connect()

    def _connect(self) -> None:
        s = self.session
        s.sig_training_requested.connect(self._on_training_requested)
        s.sig_sample_requested.connect(self._on_sample_requested)
        s.sig_weights_wanted_changed.connect(self._on_weights_wanted_changed)
        self._jobs.sig_done.connect(self._on_job_done)
        self._jobs.sig_failed.connect(self._on_job_failed)

    @property
    def run_dir(self) -> Path | None:
        """The open run's folder (None: no run open, or a new one whose trainer has not made it yet)."""
        open_run = self.session.open_run
        return None if open_run is None else open_run.path

    @property
    def alive(self) -> bool:
        return self.worker is not None and not self.worker.isFinished()

    # ---- acts ------------------------------------------------------------------------------

    def train(self) -> None:
        if self.alive:  # paused or pausing: Train (F5) resumes
            self.worker.resume()
            if self.session.training_state == "pausing":  # the worker never came to rest
                self.session.set_training_state("running")
        elif self._check_config():
            more = self._ask_more_steps()
            if more is not None:
                self._start(paused=False, more=more)

    def _ask_more_steps(self) -> int | None:
        """0 unless Train must ask: when the builder's edit needs a new run (0 once the user agrees), or the
        shown run has finished (the steps to continue it for; 0: a new run); None when the user cancels."""
        plan = self._plan(self.session.config)
        if plan is None:
            return 0
        if plan.action != "continue":  # a new shape or vocabulary: say what the new run will not keep
            return 0 if dialogs.ask_new_run(self.parent(), plan.reason, plan.lost) else None
        run = self.session.run
        trained = run.checkpoint_steps()[-1]
        if trained < self.session.config.train.steps:
            return 0
        answer = dialogs.ask_finished_run(self.parent(), trained, max(1, run.config.train.steps // 2))
        return None if answer is None else answer[1]

    def _plan(self, cfg: ExperimentConfig):
        """What training the shown run with `cfg` means (engine/training/continuation.py), or None when no run
        with a checkpoint is shown."""
        run = self.session.run
        if self.run_dir is None or run is None or not run.checkpoint_steps():
            return None
        from engine.training.continuation import plan_edit  # a run is open: its modules are loaded

        return plan_edit(run, cfg)

    def step(self) -> None:
        if not self.alive:
            more = self._ask_more_steps() if self._check_config() else None
            if more is None:
                return
            self._start(paused=True, more=more)
        self.worker.step_once()

    def pause(self) -> None:
        """Pause after the step under way; the state says so at once (a step that evaluates takes seconds)."""
        if self.alive:
            self.worker.pause()
            if self.session.training_state == "running":
                self.session.set_training_state("pausing")

    def resume(self) -> None:
        self.train()

    def stop(self) -> None:
        if self.alive:
            self.worker.stop()

    def save_checkpoint(self) -> None:
        if self.alive:
            self.worker.request_checkpoint()
        else:
            self.session.post_message("Nothing to save: no training is running (a run saves a checkpoint "
                                      "by itself when it stops or finishes).", "info")

    def probe_device(self) -> None:
        """Find the device the config would train on, off the GUI thread (it imports torch)."""
        self._jobs.submit("device", _device_of, self.session.config.train.device)

    def open_run(self, path: str | Path) -> None:
        """Show an existing run (its config, history and samples); Train resumes it. RunError if unusable.
        A run whose tokenizer file is large (a BPE's: GPT-2's takes ~3 s of Python to parse, check and hash) is
        opened with every check in a child process first, and shown when that answers (sig_run_shown); the
        app's own Run of it then reads the tokenizer only if something asks for it."""
        from engine.rundir.runs import TOKENIZER, Run, check_run

        path = Path(path)
        try:
            large = (path / TOKENIZER).stat().st_size > CHECK_APART_BYTES
        except OSError:  # missing: Run says so, in one line
            large = False
        if self._opening is not None:  # the latest choice wins: a run still being checked is never shown after it
            self._opening.cancel()
            self._opening = None
            self.session.post_status("")
        if not large:
            self._show_opened(Run(path))
            return
        self.session.post_status(f"Opening {path.name}: reading its tokenizer in a process of its own…")
        self._opening = ChildWork(check_run, str(path), name=f"open {path.name}", parent=self)
        self._opening.sig_done.connect(lambda _warnings, p=path: self._on_run_checked(p))
        self._opening.sig_failed.connect(lambda message, p=path: self._on_run_check_failed(p, message))

    def _on_run_checked(self, path: Path) -> None:
        from engine.errors import UserError
        from engine.rundir.runs import Run

        self._opening = None
        self.session.post_status("")
        try:
            self._show_opened(Run(path, checked=True))
        except UserError as e:  # changed on disk since it was checked
            self._on_run_check_failed(path, str(e))

    def _on_run_check_failed(self, path: Path, message: str) -> None:
        self._opening = None
        self.session.post_status("")
        self.session.post_message(f"Cannot open the run {path.name}: {message}. Choose a folder made by Train or "
                                  "`gpt-explorer train`.")

    def _show_opened(self, run) -> None:
        self.shutdown()
        self.session.set_run(run)  # one event: the run, its config in the builder, where training stands
        for warning in run.warnings:
            self.session.post_message(warning, "warning")
        self.sig_run_shown.emit(str(run.path))

    def new_run(self) -> None:
        self.shutdown()
        self.session.set_run(None)

    def shutdown(self) -> None:
        """Stop training and wait for the worker: its generator writes a resumable checkpoint."""
        if self.worker is not None:
            self.worker.stop()
            self.worker.wait()
            # deliver what it said last (final report, state, weights) before anyone changes the state
            QCoreApplication.sendPostedEvents(None, QEvent.Type.MetaCall)
            self.worker.deleteLater()
            self.worker = None
        self._training = None

    # ---- starting --------------------------------------------------------------------------

    def _check_config(self) -> bool:
        problems = self.session.config_problems
        if problems:  # F5 is answered: a disabled action said nothing
            self.session.post_message("The config cannot be trained yet: " + "; ".join(map(str, problems))
                                      + ". Fix it beside its field in the Architecture pane.")
        return not problems

    def _resumable(self, cfg: ExperimentConfig) -> bool:
        """The shown run continues with the builder's config: its weights can follow the edit, and it has steps
        left to train (an imported run, edited or not, fine-tunes from its own weights)."""
        plan = self._plan(cfg)
        return plan is not None and plan.action == "continue" and \
            self.session.run.checkpoint_steps()[-1] < cfg.train.steps

    def _start(self, paused: bool, more: int = 0) -> None:
        """`more` > 0: continue the finished run shown for that many more steps. A new run replaces the
        open one at once, before its trainer has made its folder: nothing of the previous run stays on
        screen while torch loads."""
        cfg = self.session.config
        resume = more > 0 or self._resumable(cfg)
        run_dir = self.run_dir if resume else new_run_path(settings.runs_root(), cfg.name)
        total = self.session.run.checkpoint_steps()[-1] + more if more > 0 else None
        # the corpus made ready in a child first; a resumed run's with its own tokenizer (Trainer.resume)
        prepare = corpus_preparation(cfg.data, cfg.model.n_ctx, run_dir if resume else None)
        self.shutdown()
        state = "paused" if paused else "running"
        if resume:  # with the builder's edits of its training settings
            def make():
                from engine.training.trainer import Trainer
                return Trainer.resume(run_dir, config=cfg, steps=total)
        else:
            self.session.replace_run(OpenRun(cfg), training=state)  # the new run and its training: one event

            def make():
                from engine.training.trainer import Trainer
                return Trainer(cfg, run_dir)
        self._training = self.session.open_run
        worker = TrainingWorker(make, paused=paused, weights_every=self.session.weights_every, prepare=prepare)
        worker.sig_started.connect(self._on_worker_started, QUEUED)
        worker.sig_step_reported.connect(self.session.report_step, QUEUED)
        worker.sig_weights_ready.connect(self._on_weights_ready, QUEUED)
        worker.sig_state_changed.connect(self.session.set_training_state, QUEUED)
        worker.sig_failed.connect(self.session.post_message, QUEUED)
        worker.sig_sample_ready.connect(self.session.sig_sample_ready, QUEUED)
        worker.sig_checkpoint_saved.connect(self._on_checkpoint_saved, QUEUED)
        worker.sig_preparing.connect(self._on_preparing, QUEUED)
        self.worker = worker
        self.session.set_training_state(state)
        worker.start()

    # ---- handlers --------------------------------------------------------------------------

    def _on_training_requested(self, action: str) -> None:
        acts = {"train": self.train, "pause": self.pause, "resume": self.resume, "step": self.step,
                "stop": self.stop, "save": self.save_checkpoint}
        acts[action]()

    def _on_worker_started(self, info) -> None:
        from engine.rundir.runs import Run, RunError

        self.sig_device_changed.emit(info.device_name)
        if info.notice:
            self.session.post_message(info.notice, "warning")
        self.session.set_config(info.config)  # the builder shows the config as the trainer resolved it
        training = self._training
        if training is None or info.run_dir is None:
            return
        path = Path(info.run_dir)
        if training.path is None or training.path.resolve() != path.resolve():
            try:  # the trainer just made the folder with the tokenizer it hands here: not read a second time on
                # this thread (a BPE's file held it ~0.3 s, GPT-2's vocabulary ~3 s)
                training.attach(Run(path, checked=True), info.config, info.tokenizer)
            except RunError as e:
                self.session.post_message(str(e), "warning")

    def _on_weights_ready(self, step: int, weights: dict) -> None:
        """Weights the worker copied belong to the run it trains, open or not any more."""
        if self._training is not None:
            self._training.publish(step, weights)

    def _on_sample_requested(self, request: SampleRequest) -> None:
        if self.alive:
            self.worker.request_sample(request)
        elif self.run_dir is not None:  # a run at rest: its newest checkpoint samples in the analysis process
            self.session.asker.ask(Sample(str(self.run_dir), request),
                                   lambda text: self.session.sig_sample_ready.emit(request, text),
                                   self.session.post_message)
        else:
            self.session.post_message("There is no model to sample from yet: press Train, or open a run.",
                                      "warning")

    def _on_weights_wanted_changed(self, every: int) -> None:
        if self.worker is not None:
            self.worker.weights_every = every

    def _on_preparing(self, text: str) -> None:
        self.session.post_message(text, "info")

    def _on_checkpoint_saved(self, path: str) -> None:
        if self._training is not None:
            self._training.steps_changed()
        self.session.post_message(f"Checkpoint saved: {path}", "info")

    def _on_job_done(self, tag, result) -> None:
        if tag == "device":
            self.sig_device_changed.emit(result)

    def _on_job_failed(self, tag, message: str) -> None:
        if tag == "device":
            self.sig_device_changed.emit(f"device unavailable: {message}")
        else:
            self.session.post_message(message)
