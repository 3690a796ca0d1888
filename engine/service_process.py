"""A long-lived helper process that answers questions on lanes, streams parts of an answer and can be told to
stop one: the Forms pane's forms process (docs/design.md#processes-threads-and-caches). Qt-free; the GUI
relays its callbacks to the GUI thread.

The process keeps a state between questions (`make_state()`: derived forms, a console's variables), made
once in the process. A question is a picklable object with `lane` (a name) and `answer(state, job)`; each
lane has one thread in the process, so a long question on one lane (a console line that runs for a minute)
never holds up another lane's (a weight's terms), while the questions of one lane run in the order asked.
`job.emit(part)` sends a part of the answer at once (a batch of rows); `job.stopped` turns true when the
parent cancels the question, which the answer checks between pieces of work. A question still waiting in its
lane when cancelled is never run.

Why a process and why lanes: the forms engine is pure Python, and on a thread of the app's process it held
the interpreter lock the GUI thread needs to paint (benchmarks/forms_pane.py: a 0.2 s console line held the
GUI thread 152–169 ms). Spawned, never forked (the app has threads whose locks a fork would copy); the process
exits when the app does, however it ends: its end of the pipe then reads end-of-file.

    service = ServiceProcess(Desk)
    n = service.ask(question, lambda n, kind, payload: …)   # kind: "part", "done" or "failed" (a one-line message)
    service.cancel(n); service.close()
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import queue
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any

STOPPED = "the helper process stopped unexpectedly; try again"


class Job:
    """What an answer is given besides the state: a way to send parts and to learn it was cancelled."""

    def __init__(self, number: int, send: Callable[[tuple], None]):
        self.number = number
        self._send = send
        self._cancelled = threading.Event()

    @property
    def stopped(self) -> bool:
        return self._cancelled.is_set()

    def emit(self, part: Any) -> None:
        self._send(("part", self.number, part))

    def cancel(self) -> None:
        self._cancelled.set()


def _message(e: BaseException) -> str:
    from .errors import UserError

    if isinstance(e, UserError):
        return str(e)
    traceback.print_exception(e, file=sys.stderr)  # a bug: its traceback on the terminal, one line for the window
    first = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {first}"


def serve(conn, make_state: Callable[[], Any], setup: Callable[[Any], None] | None = None) -> None:
    """In the child: answer questions from `conn` until it closes (the parent stopped or died)."""
    from .training.thread_policy import for_helper

    for_helper()
    state = make_state()
    if setup is not None:
        setup(state)
    lock = threading.Lock()
    lanes: dict[str, queue.SimpleQueue] = {}
    jobs: dict[int, Job] = {}

    def send(message: tuple) -> None:
        with lock:
            conn.send(message)

    def run_lane(waiting: queue.SimpleQueue) -> None:
        while True:
            number, question = waiting.get()
            job = jobs.get(number)
            if job is None or job.stopped:
                jobs.pop(number, None)
                send(("failed", number, "cancelled"))
                continue
            try:
                message = ("done", number, question.answer(state, job))
            except BaseException as e:  # noqa: BLE001 — every failure is one line for the parent
                message = ("failed", number, _message(e))
            jobs.pop(number, None)
            try:
                send(message)
            except Exception as e:  # an answer that cannot be pickled is a bug of the question
                send(("failed", number, _message(e)))

    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            os._exit(0)  # the parent is gone: lane threads may be mid-answer, nothing of theirs is wanted
        if message[0] == "ask":
            _, number, question = message
            jobs[number] = Job(number, send)
            lane = lanes.get(question.lane)
            if lane is None:
                lane = lanes[question.lane] = queue.SimpleQueue()
                threading.Thread(target=run_lane, args=(lane,), name=f"lane {question.lane}", daemon=True).start()
            lane.put((number, question))
        elif message[0] == "cancel":
            job = jobs.get(message[1])
            if job is not None:
                job.cancel()


class ServiceProcess:
    """The parent's side: starts the process on the first question (again after it died), sends questions,
    and calls each question's callback from its reader thread (from the caller's when no process could start)."""

    def __init__(self, make_state: Callable[[], Any], setup: Callable[[Any], None] | None = None, name: str = "helper"):
        self._make_state, self._setup, self._name = make_state, setup, name
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)
        self._callbacks: dict[int, Callable[[int, str, Any], None]] = {}
        self._conn = None
        self._process = None

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def ask(self, question, callback: Callable[[int, str, Any], None]) -> int:
        """Send `question`; returns its number, and `callback(number, kind, payload)` follows for each part and
        once for the end."""
        number = next(self._numbers)
        for last in (False, True):  # a process that died between two questions is started again, once
            with self._lock:
                conn = self._connection()
                self._callbacks[number] = callback
                try:
                    conn.send(("ask", number, question))
                    return number
                except (OSError, EOFError):
                    del self._callbacks[number]
            if last:
                callback(number, "failed", STOPPED)
                return number
            self._lost(conn)
        return number

    def cancel(self, number: int) -> None:
        with self._lock:
            if number in self._callbacks and self._conn is not None:
                try:
                    self._conn.send(("cancel", number))
                except (OSError, EOFError):
                    pass

    def close(self) -> None:
        """End the process; questions still out are answered as failed."""
        with self._lock:
            conn, process, self._conn, self._process = self._conn, self._process, None, None
        if conn is not None:
            conn.close()  # the child reads end-of-file and exits
        if process is not None:
            process.join(2)
            if process.is_alive():
                process.kill()
        self._fail_all("the helper process was stopped before answering")

    def _connection(self):
        """The pipe to a running process (called with the lock held)."""
        if self._conn is None:
            ctx = multiprocessing.get_context("spawn")
            ours, theirs = ctx.Pipe()
            process = ctx.Process(target=serve, args=(theirs, self._make_state, self._setup), name=self._name,
                                  daemon=True)
            process.start()
            theirs.close()
            self._conn, self._process = ours, process
            threading.Thread(target=self._read, args=(ours,), name=f"{self._name} reader", daemon=True).start()
        return self._conn

    def _read(self, conn) -> None:
        while True:
            try:
                kind, number, payload = conn.recv()
            except (EOFError, OSError, TypeError):  # TypeError: close() closed the pipe under this recv
                self._lost(conn)
                return
            with self._lock:
                callback = self._callbacks.get(number) if kind == "part" else self._callbacks.pop(number, None)
            if callback is not None:
                callback(number, kind, payload)

    def _lost(self, conn) -> None:
        """The process behind `conn` ended: forget it, and fail what it had not answered."""
        with self._lock:
            if conn is None or self._conn is not conn:
                return
            self._conn, self._process = None, None
        self._fail_all(STOPPED)

    def _fail_all(self, message: str) -> None:
        with self._lock:
            callbacks, self._callbacks = self._callbacks, {}
        for number, callback in callbacks.items():
            callback(number, "failed", message)
