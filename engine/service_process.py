"""A long-lived helper process that answers questions on lanes, streams parts of an answer, reports how far a
long one is and can be told to stop one: the app's analysis process (gui/analysis.py, asked by gui/asker.py) and
its symbolic process, the Forms pane's work and formula typesetting (gui/symbolic_process.py,
docs/design.md#processes-threads-and-caches). Qt-free; the GUI relays its callbacks to the GUI thread.

The process keeps a state between questions (`make_state()`: derived forms, a console's variables), made
once in the process. A question is a picklable object with `lane` (a name) and `answer(state, job)`; each
lane has one thread in the process, so a long question on one lane (a console line that runs for a minute)
never holds up another lane's (a weight's terms), while the questions of one lane run in the order asked.
`job.emit(part)` sends a part of the answer at once (a batch of rows); `job.stopped` turns true when the
parent cancels the question, which the answer checks between pieces of work. Every answer also runs as the
listener of engine/progress.py: `report(done, total, unit)` inside it is sent to the parent (at most
PROGRESS_HZ times a second, the last always) and, like `checkpoint()`, raises `Cancelled` once the question was
cancelled, which ends it as cancelled. A question still waiting in its lane when cancelled is never run; a
cancelled question ends with ("failed", CANCELLED).

Why a process and why lanes: the forms engine is pure Python, and on a thread of the app's process it held
the interpreter lock the GUI thread needs to paint (benchmarks/forms_pane.py: a 0.2 s console line held the
GUI thread 152–169 ms). Spawned, never forked (the app has threads whose locks a fork would copy); the process
exits when the app does, however it ends: its end of the pipe then reads end-of-file.

    service = ServiceProcess(Desk)
    n = service.ask(question, lambda n, kind, payload: …)   # kind: "part", "progress" (done, total, unit),
    service.cancel(n); service.close()                      # "done" or "failed" (a one-line message)

Questions are pickled and written by a thread of the parent (a copy of published weights may be hundreds of
MB: never on the caller's thread) in the order asked, and read in that order by the process.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from .progress import Cancelled, reporting

STOPPED = "the helper process stopped unexpectedly; try again"
CANCELLED = "cancelled"   # the message of a question that ended because it was cancelled
# When the app quits, its helper processes are ended rather than waited for: they keep nothing that must be saved
# (their caches are written whole or not at all). Each was once waited for 2 s before it was killed anyway, 4 of
# the 8 s a quit took here (close() did not reach the process then: see _write).
QUIT_WAIT_S = 0.0
PROGRESS_HZ = 5           # a question's progress reports are sent at most this often (the last always)


class Job:
    """What an answer is given besides the state: a way to send parts and to learn it was cancelled; also the
    listener of its engine/progress.py reports."""

    def __init__(self, number: int, send: Callable[[tuple], None]):
        self.number = number
        self._send = send
        self._cancelled = threading.Event()
        self._reported = 0.0

    @property
    def stopped(self) -> bool:
        return self._cancelled.is_set()

    def emit(self, part: Any) -> None:
        self._send(("part", self.number, part))

    def cancel(self) -> None:
        self._cancelled.set()

    def check(self) -> None:
        """engine.progress.checkpoint(): end the answer here (Cancelled) if it was cancelled."""
        if self.stopped:
            raise Cancelled

    def __call__(self, done: int, total: int, unit: str) -> None:
        """engine.progress.report(): say how far the answer is, or end it here if it was cancelled."""
        self.check()
        now = time.monotonic()
        if now - self._reported >= 1 / PROGRESS_HZ or done >= total:
            self._reported = now
            self._send(("progress", self.number, (done, total, unit)))


def _answer(state, question, job):
    return question.answer(state, job)


def _message(e: BaseException) -> str:
    from .errors import UserError

    if isinstance(e, UserError):
        return str(e)
    traceback.print_exception(e, file=sys.stderr)  # a bug: its traceback on the terminal, one line for the window
    first = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {first}"


def serve(conn, make_state: Callable[[], Any], setup: Callable[[Any], None] | None = None,
          answer: Callable[[Any, Any, Job], Any] = _answer, in_thread: bool = False) -> None:
    """In the child: answer questions from `conn` until it closes (the parent stopped or died), each by
    `answer(state, question, job)` (by default the question's own `answer(state, job)`). `in_thread`: on a
    thread of the asking process instead (tests), which this leaves as it was when the pipe closes."""
    from .training.thread_policy import for_helper

    if not in_thread:
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
                send(("failed", number, CANCELLED))
                continue
            try:
                message = ("done", number, reporting(job, answer, state, question, job))
            except Cancelled:
                message = ("failed", number, CANCELLED)
            except BaseException as e:  # noqa: BLE001 — every failure is one line for the parent
                message = ("failed", number, _message(e))
            del question
            jobs.pop(number, None)
            try:
                send(message)
            except OSError:  # the parent is gone (its main loop ends the process): no one to tell
                return
            except Exception as e:  # an answer that cannot be pickled is a bug of the question
                send(("failed", number, _message(e)))

    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):  # the parent is gone
            message = ("stop",)
        if message[0] == "stop":  # lane threads may be mid-answer: nothing of theirs is wanted
            if in_thread:
                conn.close()  # the parent's reader reads end-of-file, as from an ended process
                return
            os._exit(0)
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
    """The parent's side: starts the process on the first question (again after it died), sends questions
    from a writer thread, and calls each question's callback from its reader thread (from the caller's when
    no process could start). `outgoing()`, when given, makes for each new process a function that every
    question passes through before it is sent, in the order asked (gui/analysis.py: published weights cross
    once, engine/analysis/live.py)."""

    def __init__(self, make_state: Callable[[], Any], setup: Callable[[Any], None] | None = None, name: str = "helper",
                 answer: Callable[[Any, Any, Job], Any] = _answer, outgoing: Callable[[], Callable] | None = None,
                 in_thread: bool = False):
        """`in_thread`: answer on a thread of this process instead of a spawned one (tests that patch what the
        process would compute)."""
        self._make_state, self._setup, self._name, self._answer = make_state, setup, name, answer
        self._outgoing, self._in_thread = outgoing, in_thread
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)
        self._callbacks: dict[int, Callable[[int, str, Any], None]] = {}
        self._conn = None
        self._process = None
        self._outbox: queue.SimpleQueue | None = None   # what the writer thread of the running process sends
        self._prepare: Callable = lambda question: question

    @property
    def pid(self) -> int | None:
        return None if self._process is None else getattr(self._process, "pid", os.getpid())

    def ask(self, question, callback: Callable[[int, str, Any], None]) -> int:
        """Send `question`; returns its number, and `callback(number, kind, payload)` follows for each part
        and progress report, and once for the end."""
        number = next(self._numbers)
        with self._lock:
            self._connection()
            self._callbacks[number] = callback
            self._outbox.put(("ask", number, self._prepare(question)))
        return number

    def cancel(self, number: int) -> None:
        with self._lock:
            if number in self._callbacks and self._outbox is not None:
                self._outbox.put(("cancel", number))

    def close(self, wait: float = 2.0) -> None:
        """End the process, letting it exit by itself for `wait` seconds before it is killed (the app quitting
        waits for nothing: the process keeps nothing that must be saved); questions still out are answered as
        failed."""
        with self._lock:
            process, outbox = self._process, self._outbox
            self._conn = self._process = self._outbox = None
        if outbox is not None:
            outbox.put(None)  # the writer tells the process to stop once what was asked before is sent
        if process is not None:
            process.join(wait)
            if process.is_alive() and not self._in_thread:
                process.kill()
                process.join(1)  # collected, not left a zombie
        self._fail_all("the helper process was stopped before answering")

    def _connection(self):
        """The pipe to a running process (called with the lock held)."""
        if self._conn is None:
            ctx = multiprocessing.get_context("spawn")
            ours, theirs = ctx.Pipe()
            args = (theirs, self._make_state, self._setup, self._answer, self._in_thread)
            if self._in_thread:
                process = threading.Thread(target=serve, args=args, name=self._name, daemon=True)
                process.start()
            else:
                process = ctx.Process(target=serve, args=args, name=self._name, daemon=True)
                process.start()
                theirs.close()
            self._conn, self._process, self._outbox = ours, process, queue.SimpleQueue()
            self._prepare = self._outgoing() if self._outgoing is not None else (lambda question: question)
            threading.Thread(target=self._write, args=(ours, self._outbox), name=f"{self._name} writer",
                             daemon=True).start()
            threading.Thread(target=self._read, args=(ours,), name=f"{self._name} reader", daemon=True).start()
        return self._conn

    def _write(self, conn, outbox: queue.SimpleQueue) -> None:
        while True:
            message = outbox.get()
            try:
                if message is None:
                    # Said, not shown by closing our end: the reader is blocked reading it, and a descriptor
                    # closed under a read stays open until that read returns, so the process never read
                    # end-of-file and a close() that found the reader there waited out its `wait` and killed it.
                    conn.send(("stop",))
                    return
                conn.send(message)
            except (OSError, EOFError):  # the process is gone: the reader fails what it had
                self._lost(conn)
                return
            except Exception as e:  # a question that cannot be pickled fails alone
                with self._lock:
                    callback = self._callbacks.pop(message[1], None)
                if callback is not None:
                    callback(message[1], "failed", _message(e))

    def _read(self, conn) -> None:
        while True:
            try:
                kind, number, payload = conn.recv()
            except (EOFError, OSError):  # the process ended (told to stop, killed or died)
                self._lost(conn)
                return
            with self._lock:
                ongoing = kind in ("part", "progress")
                callback = self._callbacks.get(number) if ongoing else self._callbacks.pop(number, None)
            if callback is not None:
                callback(number, kind, payload)

    def _lost(self, conn) -> None:
        """The process behind `conn` ended: forget it, and fail what it had not answered."""
        with self._lock:
            if conn is None or self._conn is not conn:
                return
            outbox, self._conn, self._process, self._outbox = self._outbox, None, None, None
        outbox.put(None)  # its writer ends (the pipe is closed once neither thread holds it)
        self._fail_all(STOPPED)

    def _fail_all(self, message: str) -> None:
        with self._lock:
            callbacks, self._callbacks = self._callbacks, {}
        for number, callback in callbacks.items():
            callback(number, "failed", message)
