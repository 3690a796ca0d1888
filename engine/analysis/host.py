"""The analysis process's own loop: what it does with the questions the app's asker sends (gui/asker.py,
through gui/analysis.py's pipe).

Every message is numbered by the asker (a ticket). The process answers in LANES, one thread each, each
answering its questions one at a time in the order they came: the `now` lane answers what a pane shows from
one step (a prompt's attention, a G, the run listing) and the `long` lane what reads every saved step (a head
timeline, route shares, distributions), so a light question never waits behind a long one. A ticket can be
cancelled while it waits (it is then skipped) or while it runs: the work stops at its next progress report or
checkpoint (engine/progress.py), between pieces, and the process says it stopped. Long work's reports go back to
the asker at most PROGRESS_HZ times a second, where the time left is estimated.

The two lanes share what the process keeps (engine/analysis/door.py): what they share is locked for a piece of
work at a time, never for the whole of a long answer, so a light question about the run a long one reads waits
at most for one piece of it.

Messages in: ("ask", number, lane) followed by the question's pickled bytes (unpickled here, so one that cannot
be read fails alone), ("cancel", number). Out: ("done", number, answer), ("failed", number, one line, traceback
or None), ("cancelled", number), ("progress", number, done, total, unit). Qt-free: the process never imports Qt.
"""

from __future__ import annotations

import os
import pickle
import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable

from ..errors import UserError
from ..progress import Cancelled, reporting

NOW, LONG = "now", "long"
LANES = (NOW, LONG)
PROGRESS_HZ = 5  # reports sent back at most this often per question (a head timeline reports every piece)


class Ticket:
    """One question in the process: the listener its work reports to (engine/progress.py), and its cancel flag."""

    def __init__(self, number: int, send: Callable[[tuple], None]):
        self.number, self._send = number, send
        self.cancelled = threading.Event()
        self._last = 0.0

    def check(self) -> None:
        if self.cancelled.is_set():
            raise Cancelled

    def __call__(self, done: int, total: int, unit: str) -> None:
        self.check()
        now = time.monotonic()
        if now - self._last >= 1 / PROGRESS_HZ or done >= total:
            self._last = now
            self._send(("progress", self.number, done, total, unit))


class Host:
    """The process's side of the pipe `conn`: `serve()` reads messages until the app closes it."""

    def __init__(self, conn, answer: Callable, lanes: tuple[str, ...] = LANES):
        self.conn, self._answer = conn, answer
        self._send_lock = threading.Lock()
        self._tickets: dict[int, Ticket] = {}
        self._queues = {lane: queue.SimpleQueue() for lane in lanes}
        for lane, q in self._queues.items():
            threading.Thread(target=self._work, args=(q,), name=f"lane-{lane}", daemon=True).start()

    def serve(self) -> None:
        while True:
            try:
                header = self.conn.recv()
                kind, number = header[0], header[1]
                payload = self.conn.recv_bytes() if kind == "ask" else None
            except (EOFError, OSError):  # the app closed the pipe, or is gone
                return
            if kind == "cancel":
                ticket = self._tickets.get(number)
                if ticket is not None:
                    ticket.cancelled.set()
                continue
            ticket = self._tickets[number] = Ticket(number, self.send)
            try:
                question = pickle.loads(payload)  # published weights are received here, in order (live.py)
            except Exception as e:
                self._finish(ticket, ("failed", number, f"the question could not be read: {e}", None))
                continue
            self._queues[header[2]].put((ticket, question))

    def send(self, message: tuple) -> None:
        try:
            data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:  # an answer that cannot cross the pipe is a bug: said in one line, kept whole
            message = ("failed", message[1], f"{type(e).__name__}: the answer could not be sent: {e}",
                       traceback.format_exc())
            data = pickle.dumps(message)
        with self._send_lock:
            try:
                self.conn.send_bytes(data)
            except OSError:  # the app is gone; the parent watch ends this process
                pass

    def _work(self, lane: queue.SimpleQueue) -> None:
        while True:
            ticket, question = lane.get()
            if ticket.cancelled.is_set():
                self._finish(ticket, ("cancelled", ticket.number))
                continue
            try:
                message = ("done", ticket.number, reporting(ticket, self._answer, question))
            except Cancelled:
                message = ("cancelled", ticket.number)
            except UserError as e:
                message = ("failed", ticket.number, str(e), None)
            except BaseException as e:  # a bug: one line for the user, the traceback for stderr
                message = ("failed", ticket.number, f"{type(e).__name__}: {e}", traceback.format_exc())
            del question
            self._finish(ticket, message)

    def _finish(self, ticket: Ticket, message: tuple) -> None:
        self._tickets.pop(ticket.number, None)
        self.send(message)


def serve(conn, start: Callable[[int], None] | None = None, parent_pid: int | None = None) -> None:
    """The spawned process's target: `start(parent_pid)` first (gui/processes.py's: one torch thread, a lower
    priority, exit when the app is gone), then answer until the pipe closes."""
    if start is not None:
        start(parent_pid if parent_pid is not None else os.getppid())
    from .door import answer

    Host(conn, answer).serve()
    sys.stdout.flush()
