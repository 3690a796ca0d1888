"""The GUI's one door to a run's numbers: `AnalysisJob.ask(question)` with a question object of
engine/analysis/questions.py, answered in ONE spawned helper process (gui/processes.py: one worker, exits
with the app) by engine/analysis/door.py's `answer`.

Each view holds an `AnalysisJob`: gui/jobs.py's `LatestJob` whose questions go to the process. A job has at
most one question out; a newer one waits in the GUI process and replaces any older one still waiting, so a
view that asks faster than the process answers falls behind by one answer at most and never builds a queue.
All jobs' questions meet in one `Scheduler`, which keeps one question in the process and sends next, of those
asked until the event loop turns, a question about what is on screen before one that reads every saved step
(`background`: the head timeline of GPT-2 small held the process for minutes while the heatmaps waited), a
view on screen before a hidden one, then the oldest. Answers come back as
`sig_done(question, answer)` or `sig_failed(question, message)` on the GUI thread through a queued signal;
the GUI thread never waits for the process. Work in another process, not a thread: the forms engine and the
probes are mostly Python, and on a thread they held the interpreter lock long enough to stall the GUI's
paints (measured: 50–180 ms).
"""

from __future__ import annotations

import atexit
import itertools
import sys
import threading
import traceback
from collections.abc import Callable
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QWidget

from engine.analysis.door import answer
from engine.analysis.live import Mirror
from engine.analysis.questions import Question
from engine.errors import UserError

from .jobs import JobQueue, LatestJob
from .processes import helper_pool

_executor: ProcessPoolExecutor | None = None
_mirror = Mirror()  # the published weights the process holds (engine/analysis/live.py)
_lock = threading.Lock()


def executor() -> ProcessPoolExecutor:
    """The app's analysis process, started on the first question."""
    global _executor, _mirror
    with _lock:
        if _executor is None:
            _executor, _mirror = helper_pool(), Mirror()
        return _executor


def _send(question: Question) -> tuple[ProcessPoolExecutor, Future]:
    """Send a question to the analysis process (a new one if it stopped), published weights only when the
    process does not hold them yet."""
    ex = executor()
    try:
        return ex, ex.submit(answer, _mirror.outgoing(question))
    except (BrokenProcessPool, RuntimeError):
        restart_after(ex)
        ex = executor()
        return ex, ex.submit(answer, _mirror.outgoing(question))


def shutdown() -> None:
    """End the analysis process (the app calls it on exit; a killed app's worker ends by itself)."""
    global _executor
    with _lock:
        ex, _executor = _executor, None
    scheduler.clear()
    if ex is not None:
        ex.shutdown(wait=False, cancel_futures=True)


atexit.register(shutdown)


def restart_after(ex: ProcessPoolExecutor) -> None:
    global _executor
    with _lock:
        if _executor is ex:
            _executor = None  # the next question starts a new process


def ask_and_wait(question: Question):
    """The answer, waited for on the calling thread: only for work already off the GUI thread (an export on
    a JobQueue thread), never from the GUI thread."""
    ex, future = _send(question)
    try:
        return future.result()
    except BrokenProcessPool:
        restart_after(ex)
        raise UserError("the analysis process stopped unexpectedly; try again") from None


def outcome(future: Future, ex: ProcessPoolExecutor) -> tuple[Any, str | None]:
    """(answer, None) or (None, a one-line message) of a finished question."""
    try:
        return future.result(), None
    except CancelledError:  # shutdown() cancelled it before it ran (the app closing, mostly)
        return None, "the analysis process was stopped before answering; try again"
    except UserError as e:
        return None, str(e)
    except BrokenProcessPool:
        restart_after(ex)
        return None, "the analysis process stopped unexpectedly; try again"
    except Exception as e:  # a bug: keep its traceback (the process's, chained) on stderr
        traceback.print_exception(e, file=sys.stderr)
        return None, f"{type(e).__name__}: {e}"


@dataclass(order=True)
class _Waiting:
    rank: tuple                      # (background, not on screen, order asked): the smallest goes first
    question: Question = field(compare=False)
    finish: Callable = field(compare=False)


class Scheduler:
    """Keeps one question in the analysis process and chooses the next: a view on screen first."""

    def __init__(self):
        self._lock = threading.Lock()
        self._waiting: list[_Waiting] = []
        self._out = False
        self._order = itertools.count()

    def enqueue(self, question: Question, on_screen: bool, finish: Callable[[Any, str | None], None]) -> None:
        """Called on the GUI thread; what is asked in the same turn of the event loop is ranked together."""
        rank = (question.background, not on_screen, next(self._order))
        with self._lock:
            self._waiting.append(_Waiting(rank, question, finish))
        QTimer.singleShot(0, self._pump)

    def clear(self) -> None:
        with self._lock:
            waiting, self._waiting, self._out = self._waiting, [], False
        for w in waiting:
            w.finish(None, "the analysis process was stopped before answering; try again")

    def _pump(self) -> None:
        with self._lock:
            if self._out or not self._waiting:
                return
            nxt = min(self._waiting)
            self._waiting.remove(nxt)
            self._out = True
        try:
            ex, future = _send(nxt.question)
        except RuntimeError:  # the interpreter is exiting (no process can start): nothing more is asked
            with self._lock:
                self._out = False
            nxt.finish(None, "the analysis process was stopped before answering; try again")
            return
        future.add_done_callback(lambda f: self._done(nxt, ex, f))

    def _done(self, waiting: _Waiting, ex: ProcessPoolExecutor, future: Future) -> None:
        waiting.finish(*outcome(future, ex))
        with self._lock:
            self._out = False
        self._pump()


scheduler = Scheduler()


def _on_screen(widget) -> bool:
    """Whether the view owning a job is seen: the nearest pane's `seen()`, else the widget's visibility."""
    w = widget
    while w is not None:
        if hasattr(w, "seen"):
            return bool(w.seen())
        w = w.parent() if callable(getattr(w, "parent", None)) else None
    return isinstance(widget, QWidget) and widget.isVisible()


class _InProcess:
    """Questions asked through the scheduler instead of functions run on a thread (a mixin of jobs.py's)."""

    def ask(self, question: Question, tag: Any = None) -> None:
        """Ask `question`; its answer comes as sig_done(tag, answer) or sig_failed(tag, message), the tag
        being the question itself unless another is given."""
        self.submit(question if tag is None else tag, answer, question)

    def _launch(self, fn: Callable, args: tuple, finish: Callable[[Any, str | None], None]) -> None:
        (question,) = args
        scheduler.enqueue(question, _on_screen(self.parent()), finish)


class AnalysisJob(_InProcess, LatestJob):
    """A view's questions: a newer one replaces an older one still waiting."""


class AnalysisQueue(_InProcess, JobQueue):
    """Questions that must all be answered, in the order asked (a sample a user asked for, an export)."""
