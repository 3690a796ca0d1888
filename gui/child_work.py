"""A piece of work in a child process (engine/child_job.py), watched from the GUI thread: opening a large run,
forking one, deleting one. A timer reads what the child said every POLL_MS, never waiting, and hands it on as
signals; the GUI thread does none of the work and never blocks on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from engine.child_job import ChildJob

POLL_MS = 50


class ChildWork(QObject):
    """fn(*args, **kwargs) started at once in a child process; one sig_done or sig_failed follows."""

    sig_event = Signal(object)   # ("progress", done, total, unit), or another event the work tells
    sig_done = Signal(object)    # what fn returned
    sig_failed = Signal(str)     # a one-line message

    def __init__(self, fn: Callable, *args: Any, name: str = "job", parent: QObject | None = None, **kwargs: Any):
        super().__init__(parent)
        self.job = ChildJob(fn, *args, name=name, **kwargs)
        self._timer = QTimer(self, interval=POLL_MS)
        self._timer.timeout.connect(self._poll)
        self._timer.start()

    @property
    def running(self) -> bool:
        return not self.job.finished

    def cancel(self) -> None:
        """End the child now; no sig_done or sig_failed follows."""
        self._timer.stop()
        self.job.cancel()

    def _poll(self) -> None:
        for event in self.job.poll():
            if event[0] == "done":
                self._timer.stop()
                self.sig_done.emit(event[1])
            elif event[0] == "failed":
                self._timer.stop()
                self.sig_failed.emit(event[1])
            else:
                self.sig_event.emit(event)
