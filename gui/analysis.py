"""The app's analysis process, seen from the app: a spawned helper (gui/processes.py: exits with the app) that
answers questions of engine/analysis/questions.py in lanes (engine/analysis/host.py), and the pipe to it.

`send(number, question, reply)` sends a numbered question to its lane, `cancel(number)` stops it there, and
`reply(message)` hears what came back: ("done", number, answer), ("failed", number, one line, traceback),
("cancelled", number), ("progress", number, done, total, unit), or ("failed", ...) for every question still
out when the process stopped. `reply` is called on this module's reader thread: the asker (gui/asker.py), the
one object that asks, moves what it hears to the GUI thread. Nothing here waits on the GUI thread: questions
are pickled and written by a sender thread, answers read and unpickled by a reader thread.

Work in another process, not a thread: the forms engine and the probes are mostly Python, and on a thread they
held the interpreter lock long enough to stall the GUI's paints (measured: 50–180 ms). Weights training
published cross to the process once (engine/analysis/live.py's Mirror), in the order they are sent.
"""

from __future__ import annotations

import atexit
import itertools
import os
import pickle
import queue
import sys
import threading
from collections.abc import Callable

from engine.analysis.host import NOW
from engine.analysis.live import Mirror
from engine.errors import UserError

from .processes import start_helper

STOPPED = "the analysis process stopped unexpectedly; try again"
Reply = Callable[[tuple], None]


class AnalysisProcess:
    """One spawned analysis process and the threads that talk to it. `in_thread`: the same loop on a thread
    of this process instead (tests that patch what the process would compute)."""

    def __init__(self, in_thread: bool = False):
        import multiprocessing

        from engine.analysis import host

        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe(duplex=True)
        if in_thread:
            from engine.analysis.door import answer

            self.process = threading.Thread(target=host.Host(child, answer).serve, daemon=True, name="analysis")
            self.process.start()
        else:
            self.process = ctx.Process(target=host.serve, args=(child, start_helper, os.getpid()), daemon=True,
                                       name="analysis")
            self.process.start()
            child.close()
        self.mirror = Mirror()  # the published weights this process holds
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._replies: dict[int, Reply] = {}  # number -> who hears about it
        self.alive = True
        threading.Thread(target=self._write, name="analysis-send", daemon=True).start()
        threading.Thread(target=self._read, name="analysis-read", daemon=True).start()

    @property
    def pid(self) -> int:
        return getattr(self.process, "pid", os.getpid())

    def send(self, number: int, question, reply: Reply) -> None:
        with self._lock:
            if not self.alive:
                reply(("failed", number, STOPPED, None))
                return
            self._replies[number] = reply
            # published weights are named by the mirror in the order sent, as the process receives them
            self._outbox.put(("ask", number, question.lane, self.mirror.outgoing(question)))

    def cancel(self, number: int) -> None:
        self._outbox.put(("cancel", number))

    def close(self) -> None:
        """End the process: it exits when its pipe closes (the questions still out are answered as failed)."""
        self._outbox.put(None)

    def _write(self) -> None:
        while True:
            item = self._outbox.get()
            try:
                if item is None:
                    self._conn.close()
                    return
                if item[0] == "ask":
                    kind, number, lane, question = item
                    try:
                        payload = pickle.dumps(question, protocol=pickle.HIGHEST_PROTOCOL)
                    except Exception as e:  # a bug in what was asked: it fails alone
                        self._hear(("failed", number, f"the question could not be sent: {e}", None))
                        continue
                    self._conn.send((kind, number, lane))
                    self._conn.send_bytes(payload)
                else:
                    self._conn.send(item)
            except OSError:  # the process is gone: the reader says so to everyone waiting
                return

    def _read(self) -> None:
        while True:
            try:
                message = self._conn.recv()
            except (EOFError, OSError):
                break
            except Exception as e:  # an answer that cannot be unpickled here
                print(f"analysis process: an answer could not be read: {e}", file=sys.stderr)
                continue
            self._hear(message)
        with self._lock:
            self.alive = False
            waiting, self._replies = self._replies, {}
        for number, reply in waiting.items():
            reply(("failed", number, STOPPED, None))
        self.process.join(timeout=5)

    def _hear(self, message: tuple) -> None:
        number = message[1]
        with self._lock:
            reply = self._replies.get(number) if message[0] == "progress" else self._replies.pop(number, None)
        if reply is not None:
            reply(message)


_numbers = itertools.count(1)
_process: AnalysisProcess | None = None
_process_lock = threading.Lock()


def number() -> int:
    """A new ticket number, unique in the app (several windows may share the process, as the tests' do)."""
    return next(_numbers)


def process() -> AnalysisProcess:
    """The app's analysis process, started on the first question (and again after it stopped)."""
    global _process
    with _process_lock:
        if _process is None or not _process.alive:
            _process = AnalysisProcess()
        return _process


def shutdown() -> None:
    """End the analysis process (the app calls it on exit; a killed app's process ends by itself)."""
    global _process
    with _process_lock:
        proc, _process = _process, None
    if proc is not None:
        proc.close()


atexit.register(shutdown)


def ask_and_wait(question, timeout: float | None = None):
    """The answer, waited for on the calling thread: only for work already off the GUI thread (a test's setup,
    an export on its own thread), never from the GUI thread. A failure is a UserError with its line."""
    done = threading.Event()
    got: list = []

    def reply(message: tuple) -> None:
        if message[0] != "progress":
            got.append(message)
            done.set()

    process().send(number(), question, reply)
    if not done.wait(timeout):
        raise TimeoutError(f"no answer to {type(question).__name__} in {timeout} s")
    kind, _, *rest = got[0]
    if kind == "done":
        return rest[0]
    if kind == "failed" and rest[1]:
        print(rest[1], file=sys.stderr)
    raise UserError(rest[0] if kind == "failed" else "the question was cancelled")


__all__ = ["NOW", "AnalysisProcess", "ask_and_wait", "number", "process", "shutdown"]
