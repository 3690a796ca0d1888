"""A planned run trained in the terminal, by `gpt-explorer train` and by rank 0 of several processes
(engine/cli/_parallel.py): its first lines, the progress (one updating line on a terminal, plain lines
otherwise), Ctrl-C or SIGTERM stopping between steps, and the exit status.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from pathlib import Path


def train_in_terminal(trainer, run_dir: Path) -> int:
    """Train a planned run to its last step, showing it; the exit status: 0 done, 1 a non-finite loss, 130
    stopped by Ctrl-C (a checkpoint saved)."""
    from ..configs.sizes import human_count, parameter_count
    from ..text.corpus import corpus_label

    cfg = trainer.cfg
    out = sys.stdout
    for warning in getattr(trainer, "warnings", ()):
        print(f"gpt-explorer: warning: {warning}", file=sys.stderr)
    if trainer.step >= cfg.train.steps:
        print(f"{run_dir} already finished at step {trainer.step}; pass --steps N (more than "
              f"{trainer.step}) to train it further", file=out)
        return 0
    from ..configs.limits import memory_warning

    # a GPU's memory is not the machine's: the trainer refuses a run beyond it
    memory = memory_warning(cfg) if trainer.device.type == "cpu" else None
    if memory:
        print(f"gpt-explorer: warning: {memory}", file=sys.stderr)
    verb = f"resuming at step {trainer.step}" if trainer.step else "new run"
    print(f"{verb}: {run_dir}", file=out)
    print(f"model {cfg.name}: {human_count(parameter_count(cfg.model))} parameters; corpus "
          f"{corpus_label(cfg.data.corpus)}, {human_count(len(trainer.dataset.train))} training tokens; "
          f"device {trainer.device.type}, {trainer.threads} thread(s); {_how(trainer)}", file=out)
    if trainer.compile_message:
        print(f"note: {trainer.compile_message}", file=sys.stderr)
    progress = Progress(out)
    if trainer.step and trainer.writer is not None:  # a resumed run shows its last validation loss
        from ..rundir.runs import Run

        vals = [r["val_loss"] for r in Run(run_dir).metrics() if r.get("val_loss") is not None]
        progress.val = vals[-1] if vals else None
    stop = _StopFlag()
    gen = trainer.steps()
    last = None
    with stop:
        for report in gen:
            last = report
            progress.update(report)
            if stop.requested:
                gen.close()  # writes a checkpoint between steps
                break
    progress.finish()
    if last is not None and last.event == "nan":
        print(f"gpt-explorer: training stopped: {last.message}", file=sys.stderr)
        return 1
    if stop.requested:
        print(f"stopped at step {trainer.step}; checkpoint saved. Resume with: gpt-explorer train --run "
              f"{run_dir}", file=sys.stderr)
        return 130
    print(f"done: {run_dir} (sample with: gpt-explorer sample --run {run_dir})", file=out)
    return 0


def _how(trainer) -> str:
    """Precision, compilation and processes, as the first lines of a run show them."""
    from ..training.acceleration import precision_name

    how = precision_name(trainer.autocast_dtype)
    if trainer.compiled:
        how += ", compiled"
    if trainer.group.world > 1:
        how += f", {trainer.group.world} processes"
    return how


class _StopFlag:
    """Ctrl-C (or SIGTERM) sets a flag read between steps, so stopping never interrupts a step half-way."""

    def __init__(self):
        self.requested = False
        self._previous = None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
            self._previous_term = signal.signal(signal.SIGTERM, self._on_sigint)  # `kill`: the same checkpoint
        return self

    def _on_sigint(self, signum, frame):
        self.requested = True

    def __exit__(self, *exc):
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            signal.signal(signal.SIGTERM, self._previous_term)
        return False


class Progress:
    """Training progress on a stream: one line rewritten in place on a terminal (at most 10 times a
    second), plain lines otherwise (every evaluation and every 5% of the steps). Samples are printed
    at evaluation steps."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stdout
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.val: float | None = None
        self._shown = 0.0
        self._width = 0

    def line(self, r) -> str:
        val = "—" if self.val is None else f"{self.val:.4f}"
        bits = "" if r.train_bpc is None else f"  {r.train_bpc:.3f} bits/char"
        return (f"step {r.step}/{r.total_steps}  loss {r.train_loss:.4f}  val {val}{bits}  "
                f"{r.tokens_per_s:,.0f} tok/s  {_duration(r.wall_s)} elapsed  {_duration(r.eta_s)} left")

    def update(self, r) -> None:
        if r.val_loss is not None:
            self.val = r.val_loss
        if r.event == "nan":
            return
        every = max(r.total_steps // 20, 1)
        notable = r.val_loss is not None or r.event is not None
        if self.tty:
            now = time.monotonic()
            if notable or now - self._shown >= 0.1:
                self._rewrite(self.line(r))
                self._shown = now
        elif notable or r.step % every == 0:
            print(self.line(r), file=self.stream, flush=True)
        if r.sample:
            self._print_sample(r)

    def _rewrite(self, text: str) -> None:
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()
        self._width = len(text)

    def _print_sample(self, r) -> None:
        if self.tty:
            self.stream.write("\r" + " " * self._width + "\r")
            self._width = 0
        text = r.sample.strip("\n")[:300].replace("\n", "\n    ")
        print(f"  sample at step {r.step}:\n    {text}", file=self.stream, flush=True)

    def finish(self) -> None:
        if self.tty and self._width:
            self.stream.write("\n")
            self.stream.flush()


def _duration(seconds: float) -> str:
    if seconds != seconds or seconds == float("inf"):
        return "?"
    s = int(round(seconds))
    h, m = s // 3600, s % 3600 // 60
    return f"{h}h{m:02d}m" if h else f"{m}m{s % 60:02d}s"
