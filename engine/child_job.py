"""One piece of work in a child process of its own, with its progress, its outcome and a cancel that ends it at once:
an export, a corpus made ready before Train, a fork or a delete of a run
(docs/design.md#processes-threads-and-caches). The app's GUI process then never runs that work's Python, so the
interpreter lock its GUI thread needs to paint is never held by it; and a cancel does not wait for the work's next
check, it ends the process.

The child is spawned (the app has threads whose locks a fork would copy). It is not daemonic, since its work may
start children of its own (a large BPE fit does, engine/text/bpe_fit.py), but it ends with the app all the same:
it watches its parent and exits when the parent is gone, and the jobs still running when the app exits are
ended first.
`fn(*args, **kwargs)` must be picklable: a function of the engine, or a `functools.partial` of one with plain
arguments; the child imports its module, so it never lives in `gui`. Inside, `report(done, total, unit)`
(engine/progress.py) reaches the parent, at most every PROGRESS_EVERY_S but always the last, and
`tell(kind, *values)` any other event the parent reads with poll (an export says which hidden folder it writes).

    job = ChildJob(fn, *args)
    job.poll()          # never waits: [("progress", 3, 20, "frames"), …, ("done", result)] or ("failed", "one line")
    job.wait(timeout)   # the same, waiting for the outcome (from a thread that may block, never the GUI's)
    job.cancel()        # the child ends now
"""

from __future__ import annotations

import atexit
import contextvars
import multiprocessing
import os
import queue
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Callable
from typing import Any

PROGRESS_EVERY_S = 0.1  # a report is sent at most this often (a sheet reports every row)
PARENT_POLL_S = 0.5     # how often a child looks whether its parent is still there
_events: contextvars.ContextVar = contextvars.ContextVar("child_job_events", default=None)  # the job's queue, where
# it runs (a child process runs one job; a job on a thread has its own context)
_running: weakref.WeakSet = weakref.WeakSet()  # in the parent: the jobs not finished, ended at exit


@atexit.register
def _end_all() -> None:
    """The app is exiting: end the children still working (multiprocessing would wait for them)."""
    for job in list(_running):
        job.cancel()


def tell(kind: str, *values: Any) -> None:
    """Send the parent an event (kind, *values); nothing outside a child job."""
    events = _events.get()
    if events is not None:
        events.put((kind, *values))


def watch_parent(parent: int, end: Callable[[], None] | None = None) -> None:
    """From now on, a thread of this process looks every PARENT_POLL_S whether `parent` is still its parent, and
    when it is gone calls `end` once (None: exit at once). A child the app starts must not outlive it: a crash or a
    kill of the app runs none of its own clean-up."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        (end or (lambda: os._exit(1)))()

    threading.Thread(target=watch, name="watch-parent", daemon=True).start()


def _work(fn: Callable, args: tuple, kwargs: dict, events, parent: int) -> None:
    """In the child: run fn, telling `events` its progress and then its outcome."""
    from .training.thread_policy import for_helper

    watch_parent(parent)
    for_helper()  # one torch thread, a lower priority: training keeps its cores
    _run(fn, args, kwargs, events)


def _run(fn: Callable, args: tuple, kwargs: dict, events) -> None:
    """fn(*args, **kwargs), telling `events` its progress and then its outcome (in the child, or on a thread)."""
    from .errors import UserError
    from .progress import reporting

    _events.set(events)
    last = [0.0, ""]

    def progress(done: int, total: int, unit: str) -> None:
        now = time.monotonic()
        if done >= total or unit != last[1] or now - last[0] >= PROGRESS_EVERY_S:
            last[:] = [now, unit]
            events.put(("progress", done, total, unit))

    try:
        result = reporting(progress, lambda: fn(*args, **kwargs))
    except UserError as e:
        events.put(("failed", str(e)))
    except Exception as e:  # a bug: its traceback on stderr, one line for the window
        traceback.print_exc(file=sys.stderr)
        events.put(("failed", f"{type(e).__name__}: {e}"))
    else:
        events.put(("done", result))


class ChildJob:
    """fn(*args, **kwargs), started at once in a child process."""

    # Tests whose point is not the process set this (tests/conftest.py's children_in_thread): the same work, events
    # and outcome on a thread of this process, which cannot be cancelled. A spawned child that needs torch imports
    # it, ~1.3 s of CPU, several times what a test's small fork or export does (the suite's census of children).
    in_thread = False

    def __init__(self, fn: Callable, *args: Any, name: str = "job", **kwargs: Any):
        self.finished = False
        self._on_thread = self.in_thread  # as started, whatever the class says later
        if self._on_thread:
            self._events = queue.Queue()
            self._process = threading.Thread(target=_run, args=(fn, args, kwargs, self._events), name=name,
                                             daemon=True)
            self._process.start()
            return
        ctx = multiprocessing.get_context("spawn")
        self._events = ctx.Queue()
        self._process = ctx.Process(target=_work, args=(fn, args, kwargs, self._events, os.getpid()), name=name)
        self._process.start()  # pickles fn and its arguments: an unpicklable one raises here
        _running.add(self)

    @property
    def pid(self) -> int | None:
        return os.getpid() if self._on_thread else self._process.pid

    def poll(self) -> list[tuple]:
        """What the child said since the last poll, never waiting: ("progress", done, total, unit) and other
        events its work sends, then one ("done", result) or ("failed", a one-line message), also when the child
        died without a word."""
        out = []
        while not self.finished:
            try:
                out.append(self._events.get_nowait())
            except queue.Empty:
                break
            if out[-1][0] in ("done", "failed"):
                self._end()
        if not self.finished and not self._process.is_alive():
            try:  # its last words may still be in the pipe
                out.append(self._events.get(timeout=0.5))
            except queue.Empty:
                out.append(("failed", "the work stopped unexpectedly "
                                      f"(exit code {getattr(self._process, 'exitcode', None)})"))
            self._end()
        return out

    def wait(self, timeout: float | None = None) -> list[tuple]:
        """poll(), blocking until the outcome or `timeout` seconds (None: no limit); the caller's thread waits
        on the pipe without the interpreter lock."""
        out, deadline = [], None if timeout is None else time.monotonic() + timeout
        while not self.finished:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            try:
                out.append(self._events.get(timeout=min(0.5, left) if left is not None else 0.5))
            except queue.Empty:
                out += self.poll()
                continue
            if out[-1][0] in ("done", "failed"):
                self._end()
        return out

    def cancel(self) -> None:
        """End the child now (what it leaves half-made is the caller's to remove)."""
        if self.finished:
            return
        if self._on_thread:
            raise RuntimeError("work on a thread cannot be ended: a test that cancels it runs it in a child")
        self._process.terminate()
        self._process.join(5)
        self._end()

    def _end(self) -> None:
        if not self.finished:
            self.finished = True
            _running.discard(self)
            if not self._on_thread:
                self._events.close()
                self._process.join(0)  # reaped if it has exited (it does, right after its outcome)
