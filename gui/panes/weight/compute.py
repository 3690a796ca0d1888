"""What the weight pane computes off the GUI thread: coefficient records step by step.

`CoefficientFeeder` holds the open run's `engine.coefficients.cache.CoefficientStore` (built on a pool
thread: it imports torch) and fills it one step at a time through a `LatestJob`: the step on screen first,
then the rest of the timeline for the charts, each job computing one step's record and the update from the
previous saved step. The GUI thread only peeks at what is in memory, so scrubbing never waits; a step not yet
in memory asks for it and shows when it arrives.

Records are computed in the app's analysis process (gui/analysis.py, started on first use; the pane asks
it for formulas directly): the forms engine is mostly Python, and on a pool thread it held the interpreter
lock so that the GUI thread, whose every pyqtgraph paint calls back into Python, stalled 50–180 ms at a time
while scrubbing (measured here with a 5 ms timer probe). The pool thread only waits for the process, reads
the result and the cache.
"""

from __future__ import annotations

import functools
from concurrent.futures.process import BrokenProcessPool

from PySide6.QtCore import QObject, QThreadPool, Signal

from engine.errors import UserError

from ... import analysis
from ...jobs import LatestJob
from ...worker import ensure_torch

_POOL: QThreadPool | None = None


def pool() -> QThreadPool:
    """The pane's own threads: they mostly wait for the computing process, and must not queue behind other
    panes' long jobs on Qt's global pool (two threads on a 2-core machine)."""
    global _POOL
    if _POOL is None:
        _POOL = QThreadPool()
        _POOL.setMaxThreadCount(2)
    return _POOL


def pooled_job(parent: QObject) -> LatestJob:
    """A LatestJob on the pane's own thread pool."""
    return LatestJob(parent, pool=pool())


def in_process(fn, *args):
    """fn(*args) in the app's analysis process (gui/analysis.py), waited for on the pane's pool thread."""
    ex = analysis.executor()
    try:
        return ex.submit(fn, *args).result()
    except BrokenProcessPool:
        analysis.restart_after(ex)
        raise UserError("the process computing coefficients stopped unexpectedly; try again") from None


def _open_store(run):
    ensure_torch()
    from engine.coefficients.cache import CoefficientStore, compute_record

    # engine functions only cross to the other process, so it never imports Qt; the process starts with
    # the first record asked for (the pane asks only while it is seen)
    return CoefficientStore(run, compute=functools.partial(in_process, compute_record, str(run.path), "float32"))


def _compute(store, weight: str, step: int):
    store.record(weight, step)
    store.update(weight, step)
    return weight, step


class CoefficientFeeder(QObject):
    sig_store_ready = Signal(object)     # the CoefficientStore (or None when the run has none)
    sig_computed = Signal(str, int)      # weight, step: its record (and update, if any) is in memory
    sig_failed = Signal(str)             # a sentence for the user

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.store = None
        self.weight: str | None = None
        self.current: int | None = None
        self.steps: list[int] = []
        self._run = None
        self._busy_with: tuple | None = None
        self._failed: set[tuple] = set()
        self._job = pooled_job(self)
        self._job.sig_done.connect(self._on_done)
        self._job.sig_failed.connect(self._on_failed)

    @property
    def busy(self) -> bool:
        return self._job.busy

    def open_run(self, run) -> None:
        self.store, self._run, self._failed = None, run, set()
        if run is not None:
            self._busy_with = ("open", id(run))
            self._job.submit(self._busy_with, _open_store, run)
        else:
            self.sig_store_ready.emit(None)

    def want(self, weight: str | None, current: int | None, steps: list[int]) -> None:
        """Show `weight` at step `current`; fill the other `steps` for the charts after it."""
        self.weight, self.current, self.steps = weight, current, list(steps)
        self._next()

    def missing(self) -> list[int]:
        """Steps to compute, the one on screen first: its record, or an update that can now be made."""
        store, w = self.store, self.weight
        if store is None or w is None:
            return []
        summaries, geometry = store.summaries(w), store.geometry(w)
        first = self.steps[0] if self.steps else None  # the first saved step has no update reaching it
        todo = [s for s in self.steps if (s not in summaries or (s != first and s not in geometry))
                and (w, s) not in self._failed]
        if self.current in todo:
            todo.remove(self.current)
            todo.insert(0, self.current)
        if self.current is not None and store.peek(w, self.current) is None and self.current not in todo:
            todo.insert(0, self.current)  # in the summaries but evicted from memory: read it back
        return todo

    def _next(self) -> None:
        if self._job.busy or self.store is None:
            return
        todo = self.missing()
        if todo:
            self._busy_with = (self.weight, todo[0])
            self._job.submit(self._busy_with, _compute, self.store, self.weight, todo[0])

    def _on_done(self, tag, result) -> None:
        if tag[0] == "open":
            if tag[1] != id(self._run):
                return
            self.store = result
            self.sig_store_ready.emit(result)
        elif result is not None and self.store is not None:
            self.sig_computed.emit(*result)
        self._next()

    def _on_failed(self, tag, message: str) -> None:
        if tag[0] == "open":
            self.sig_failed.emit(f"Coefficients need the run's probe batch: {message}")
            return
        self._failed.add(tag)
        self.sig_failed.emit(f"Coefficient of {tag[0]} at step {tag[1]}: {message}")
        self._next()


