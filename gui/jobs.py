"""GUI-side waits off the GUI thread, on Qt's thread pool (the GUI thread only renders): the architecture pane's
inspection of its draft (which waits for the child process that reads the corpus, engine/configs/inspection.py)
and the training controller's device probe. Nothing here computes on a thread of the app: everything asked of a
run is a question for the analysis process, through the window's asker (gui/asker.py,
docs/design.md#how-a-pane-gets-its-numbers), the Forms pane's work is the symbolic process's
(gui/panes/forms/process.py) and exports run in a process each (gui/exports.py).

`LatestJob` runs one function at a time. While one runs, a newer request replaces any request still waiting,
so a view that asks faster than it can be answered falls behind by at most one result instead of building a
queue. Results and errors come back as signals, delivered on the GUI thread through Qt's queued connections.
Functions must take and return owned data (copies, numpy arrays), never widgets.

`JobQueue` is the same runner for requests that must all be answered (the device probe): it keeps every request
and runs them one after another, in order.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt, QThreadPool, Signal

from engine.errors import UserError


class _Relay(QObject):
    """Lives on the GUI thread; emitting from another thread queues the call to its receivers."""

    sig_finished = Signal(object, object, object, int)  # tag, result, error message (None: success), epoch


class LatestJob(QObject):
    sig_done = Signal(object, object)   # tag, result
    sig_failed = Signal(object, str)    # tag, a one-line message for the user

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._epoch = 0
        self._relay = _Relay(self)
        # queued even when the answer is emitted on this thread (a future already finished when its callback
        # is added, seen under load): an answer never re-enters submit(), so a request made meanwhile waits
        self._relay.sig_finished.connect(self._on_finished, Qt.ConnectionType.QueuedConnection)
        self._running = False
        self._queue: list[tuple[Any, Callable, tuple]] = []

    @property
    def busy(self) -> bool:
        return self._running

    def forget(self, *_why: Any) -> None:
        """Drop every request still waiting and every answer still to come (what they were about is gone)."""
        self._epoch += 1
        self._queue.clear()

    def submit(self, tag: Any, fn: Callable, *args: Any) -> None:
        """Run fn(*args) now, or after the running call, dropping an older request still waiting."""
        if self._running:
            self._queue[:] = [(tag, fn, args)]
            return
        self._start(tag, fn, args)

    def _start(self, tag: Any, fn: Callable, args: tuple) -> None:
        self._running = True
        relay, epoch = self._relay, self._epoch

        def finish(result: Any, error: str | None) -> None:
            try:
                relay.sig_finished.emit(tag, result, error, epoch)
            except RuntimeError:  # the owner was deleted while this ran
                pass

        self._launch(fn, args, finish)

    def _launch(self, fn: Callable, args: tuple, finish: Callable[[Any, str | None], None]) -> None:
        """Run fn(*args) on Qt's thread pool and call finish(result, error message or None) from there."""
        def work() -> None:
            try:
                result, error = fn(*args), None
            except UserError as e:
                result, error = None, str(e)
            except Exception as e:  # a bug: keep its traceback on stderr, show one line to the user
                traceback.print_exc(file=sys.stderr)
                result, error = None, f"{type(e).__name__}: {e}"
            finish(result, error)

        QThreadPool.globalInstance().start(work)

    def _on_finished(self, tag: Any, result: Any, error: str | None, epoch: int) -> None:
        self._running = False
        if self._queue:
            self._start(*self._queue.pop(0))
        if epoch != self._epoch:
            return
        if error is None:
            self.sig_done.emit(tag, result)
        else:
            self.sig_failed.emit(tag, error)


class JobQueue(LatestJob):
    """Like LatestJob, but no request is dropped: each waits its turn."""

    def submit(self, tag: Any, fn: Callable, *args: Any) -> None:
        """Run fn(*args) now, or after every request submitted before it."""
        if self._running:
            self._queue.append((tag, fn, args))
            return
        self._start(tag, fn, args)
