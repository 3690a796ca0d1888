"""How long work says how far it is, and how it is stopped: the one mechanism for every long answer of the
analysis process (a head timeline, route shares, distributions) and every export.

Work calls `report(done, total, unit)` between pieces ("step 3 of 12", "frames") and `checkpoint()` where it
could stop but has nothing to count. Whoever runs the work listens through `reporting(listener, fn, ...)`: the
listener hears each report and raises `Cancelled` once it was asked to stop, so the work ends at its next
report or checkpoint, between pieces, never with a file half written. Outside `reporting` (the command line, a
test calling a function directly) both do nothing, so the same functions run unchanged everywhere.

The listener is a context variable, so each thread (the analysis process's lanes, an export thread) has its
own.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass


class Cancelled(Exception):
    """Raised inside long work by `report` or `checkpoint` once whoever runs it asked it to stop."""


Listener = Callable[[int, int, str], None]  # done, total, unit; may raise Cancelled
_LISTENER: ContextVar[Listener | None] = ContextVar("progress_listener", default=None)


def report(done: int, total: int, unit: str = "") -> None:
    """Tell whoever runs this work that `done` of `total` `unit` are done; raises Cancelled when it asked the
    work to stop (so call it between pieces of work)."""
    listener = _LISTENER.get()
    if listener is not None:
        listener(done, total, unit)


def checkpoint() -> None:
    """Stop here (Cancelled) if whoever runs this work asked it to, without saying how far it is."""
    listener = _LISTENER.get()
    check = getattr(listener, "check", None)
    if check is not None:
        check()


def reporting(listener: Listener, fn: Callable, *args):
    """fn(*args) with every `report` (and `checkpoint`, when the listener has a `check()`) inside it passed to
    `listener`, on this thread."""
    token = _LISTENER.set(listener)
    try:
        return fn(*args)
    finally:
        _LISTENER.reset(token)


@dataclass(frozen=True)
class Progress:
    """How far a long answer is: `done` of `total` `unit`, and the seconds left at the rate seen so far (None
    until there is a rate to go by)."""

    done: int
    total: int
    unit: str = ""
    left_s: float | None = None

    def __str__(self) -> str:
        what = f"{self.done:,} of {self.total:,} {self.unit}".strip()
        return what if self.left_s is None else f"{what}, about {duration(self.left_s)} left"


class Rate:
    """The estimate of the time left of one long answer, from its reports: the rate since the first report
    that came with work done after it. Kept by whoever asks, across the slices of a question asked again
    (a head timeline), so the estimate spans the whole answer."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._start: tuple[float, int] | None = None  # (time, done) of the first report

    def progress(self, done: int, total: int, unit: str = "") -> Progress:
        now = self._clock()
        if self._start is None or done < self._start[1]:
            self._start = (now, done)
        t0, d0 = self._start
        left = None
        if done > d0 and total >= done:
            left = (now - t0) / (done - d0) * (total - done)
        return Progress(done, total, unit, left)


def duration(seconds: float) -> str:
    """12.3 -> '12 s', 130 -> '2 min 10 s', inf -> '—'."""
    if not math.isfinite(seconds):
        return "—"
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"
