"""The sample run: the induction lesson, already trained, so that a newcomer's first look at every pane (loss,
heads forming, attention over saved steps, a weight's coefficient) has something in it at once.

Shipping one would put ~12 MB of weights in the package (its 33 snapshots and checkpoints), so it is trained
on first use instead, in the background: `gpt-explorer train` in a child process (a QProcess, reaped when it
ends), at low priority and on one thread, into `<runs folder>/sample`. On a loaded 2-core machine the lesson's
800 steps took 46 s so (`gpt-explorer train --preset induction-lesson --set train.torch_threads=1`, load 8).
The app starts it while the welcome is read (gui/first_run/welcome.py); asked for before it is done, the run
opens when it is. Closing the app stops it with SIGTERM, which checkpoints; the next start resumes it.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QObject, QProcess, Signal

from engine.configs.config import ExperimentConfig
from engine.configs.presets import load_preset

SAMPLE_PRESET = "induction-lesson"
FOLDER_NAME = "sample"
STOP_WAIT_MS = 5_000  # SIGTERM lets it finish its step and checkpoint: a few seconds at most
# The child lowers its own priority first: the sample must not slow the window or a run trained in it. It watches
# the app (whose pid comes first in its arguments: read in the child, its parent may already be gone), and when the
# app is gone (killed, crashed: nothing of its own stopped the sample) stops as SIGTERM does, with a checkpoint,
# instead of training on alone for a minute.
BOOT = ("import os, signal, sys\nif hasattr(os, 'nice'): os.nice(10)\nfrom engine.child_job import watch_parent\n"
        "watch_parent(int(sys.argv.pop(1)), lambda: os.kill(os.getpid(), signal.SIGTERM))\n"
        "from gui.cli import main\nsys.exit(main(sys.argv[1:]))")
PROGRESS = re.compile(r"^step (\d+)/(\d+)")


def is_finished(path: Path) -> bool:
    """Whether `path` is a run that has trained all its steps."""
    from engine.rundir.runs import Run, RunError

    try:
        run = Run(path)
    except RunError:
        return False
    steps = run.checkpoint_steps()
    return bool(steps) and steps[-1] >= run.config.train.steps


class SampleRun(QObject):
    """The sample's folder and the process that trains it. `ensure()` starts training when it is not done;
    `sig_ready` says it is, `sig_progress` how far it is, `sig_failed` why it could not be trained."""

    sig_progress = Signal(int, int)   # step, total
    sig_ready = Signal(str)           # the run's folder
    sig_failed = Signal(str)          # one line

    def __init__(self, folder: Path, config: ExperimentConfig | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self.path = Path(folder)
        self.config = config or load_preset(SAMPLE_PRESET)
        self.process: QProcess | None = None
        self.progress: tuple[int, int] = (0, self.config.train.steps)
        self.error: str | None = None
        self._config_file: Path | None = None
        self._said: list[str] = []

    @property
    def training(self) -> bool:
        return self.process is not None

    def ready(self) -> bool:
        return not self.training and is_finished(self.path)

    def ensure(self) -> None:
        """Start training the sample unless it is trained or training (ready: sig_ready now)."""
        if self.training:
            return
        if is_finished(self.path):
            self.sig_ready.emit(str(self.path))
            return
        self.error = None
        args = ["-c", BOOT, str(os.getpid()), "train", "--run", str(self.path)]
        if not (self.path / "config.toml").is_file():  # a new run; else train resumes it exactly
            handle, name = tempfile.mkstemp(prefix="gpt-explorer-sample-", suffix=".toml")
            with open(handle, "w", encoding="utf-8") as f:
                f.write(self.config.to_toml())
            self._config_file = Path(name)
            args += ["--config", name, "--set", "train.torch_threads=1"]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._said = []
        self.process = p = QProcess(self)
        p.setProcessChannelMode(QProcess.ProcessChannelMode.MergedChannels)
        p.readyReadStandardOutput.connect(self._on_output)
        p.finished.connect(self._on_finished)
        p.errorOccurred.connect(self._on_error)
        p.start(sys.executable, args)

    def stop(self) -> None:
        """End the training (SIGTERM: it checkpoints, and the next ensure() resumes it) and wait for it."""
        p = self.process
        if p is None:
            return
        p.finished.disconnect(self._on_finished)
        p.terminate()
        if not p.waitForFinished(STOP_WAIT_MS):
            p.kill()
            p.waitForFinished(STOP_WAIT_MS)
        self._done()

    def _on_output(self) -> None:
        text = bytes(self.process.readAllStandardOutput()).decode("utf-8", "replace")
        for line in text.splitlines():
            line = line.strip()
            if line:
                self._said = (self._said + [line])[-20:]
            m = PROGRESS.match(line)
            if m:
                self.progress = (int(m.group(1)), int(m.group(2)))
                self.sig_progress.emit(*self.progress)

    def _on_finished(self, code: int, _status) -> None:
        self._done()
        if is_finished(self.path):
            self.sig_ready.emit(str(self.path))
            return
        errors = [s for s in self._said if s.startswith("gpt-explorer: error:")]
        self.error = (errors[-1].removeprefix("gpt-explorer: error: ") if errors
                      else f"training stopped with status {code}: {self._said[-1] if self._said else 'no output'}")
        self.sig_failed.emit(self.error)

    def _on_error(self, error) -> None:
        if error == QProcess.ProcessError.FailedToStart:
            self._done()
            self.error = f"cannot start {sys.executable}: {self.process_error}"
            self.sig_failed.emit(self.error)

    def _done(self) -> None:
        if self.process is not None:
            self.process_error = self.process.errorString()
            self.process.deleteLater()
            self.process = None
        if self._config_file is not None:
            self._config_file.unlink(missing_ok=True)
            self._config_file = None
