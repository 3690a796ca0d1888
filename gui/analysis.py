"""The one way panes get numbers off the GUI thread: `AnalysisJob`, a small adapter over ONE spawned
helper process (gui/processes.py: one worker, exits with the app) that runs engine/analysis/service.py.

Each pane holds its own `AnalysisJob` (its request key, in effect) and calls `submit(tag, fn, *args)` with a
Qt-free, top-level `fn`; weights training published go in as `engine.analysis.live.Published`, sent once.
An AnalysisJob is gui/jobs.py's `LatestJob` run in the process instead of on a thread: at most one request
in the process, a newer one waiting in the GUI process and replacing any older one still waiting, so a pane
that asks faster than the process answers falls behind by one answer at most and never builds a queue.
Answers come back as `sig_done(tag, result)` or `sig_failed(tag, message)` on the GUI thread through a
queued signal; the GUI thread never waits for the process. Work in another process, not a thread: the
forms engine and the probes are mostly Python, and on a thread they held the interpreter lock long enough
to stall the GUI's paints (measured: 50–180 ms).
"""

from __future__ import annotations

import atexit
import sys
import threading
import traceback
from collections.abc import Callable
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from engine.analysis.live import Mirror
from engine.errors import UserError

from .jobs import LatestJob
from .processes import helper_pool

_executor: ProcessPoolExecutor | None = None
_mirror = Mirror()  # the published weights the process holds (engine/analysis/live.py)
_lock = threading.Lock()


def executor() -> ProcessPoolExecutor:
    """The app's analysis process, started on the first request."""
    global _executor, _mirror
    with _lock:
        if _executor is None:
            _executor, _mirror = helper_pool(), Mirror()
        return _executor


def send(fn: Callable, args: tuple) -> tuple[ProcessPoolExecutor, Future]:
    """Submit fn(*args) to the analysis process (a new one if it stopped), published weights sent only
    when the process does not hold them yet."""
    ex = executor()
    try:
        return ex, ex.submit(fn, *_mirror.outgoing(args))
    except (BrokenProcessPool, RuntimeError):
        restart_after(ex)
        ex = executor()
        return ex, ex.submit(fn, *_mirror.outgoing(args))


def shutdown() -> None:
    """End the analysis process (the app calls it on exit; a killed app's worker ends by itself)."""
    global _executor
    with _lock:
        ex, _executor = _executor, None
    if ex is not None:
        ex.shutdown(wait=False, cancel_futures=True)


atexit.register(shutdown)


def restart_after(ex: ProcessPoolExecutor) -> None:
    global _executor
    with _lock:
        if _executor is ex:
            _executor = None  # the next request starts a new process


class AnalysisJob(LatestJob):
    """A LatestJob whose requests run in the analysis process instead of on a thread of this one."""

    def _launch(self, fn: Callable, args: tuple, finish: Callable[[Any, str | None], None]) -> None:
        ex, future = send(fn, args)

        def done(f: Future) -> None:
            result, error = None, None
            try:
                result = f.result()
            except CancelledError:  # shutdown() cancelled it before it ran (the app closing, mostly)
                error = "the analysis process was stopped before answering; try again"
            except UserError as e:
                error = str(e)
            except BrokenProcessPool:
                restart_after(ex)
                error = "the analysis process stopped unexpectedly; try again"
            except Exception as e:  # a bug: keep its traceback (the process's, chained) on stderr
                traceback.print_exception(e, file=sys.stderr)
                error = f"{type(e).__name__}: {e}"
            finish(result, error)

        future.add_done_callback(done)
