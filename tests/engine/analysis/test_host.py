"""The analysis process's loop (engine/analysis/host.py), driven over a pipe in this process: each lane answers
on its own thread, so a light question is answered while a long one runs; a cancelled question stops at its next
progress report and says so; a long answer's reports come back; a failure is one line."""

import pickle
import threading
from dataclasses import dataclass
from multiprocessing import Pipe

from engine.analysis.host import LONG, NOW, Host
from engine.errors import UserError
from engine.progress import report

WAIT = 60


@dataclass(frozen=True)
class Echo:
    value: object
    lane: str = NOW


@dataclass(frozen=True)
class Gated:
    """Reports progress until its gate is set (or it is cancelled), then answers its value."""

    gate: str
    value: object = "done"
    lane: str = LONG


GATES: dict[str, threading.Event] = {}


def answer(question):
    if isinstance(question, Gated):
        k = 0
        while not GATES[question.gate].wait(0.005):
            k += 1
            report(k, 10**9, "ticks")
        return question.value
    if question.value == "mistake":
        raise UserError("a user's mistake, said in one line")
    if question.value == "bug":
        raise KeyError("no such thing")
    return question.value


class Line:
    """The app's end of the pipe: sends questions, collects what comes back by ticket."""

    def __init__(self):
        self.conn, child = Pipe(duplex=True)
        threading.Thread(target=Host(child, answer).serve, daemon=True).start()
        self.got: dict[int, list] = {}
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def ask(self, number: int, question) -> None:
        self.conn.send(("ask", number, question.lane))
        self.conn.send_bytes(pickle.dumps(question))

    def cancel(self, number: int) -> None:
        self.conn.send(("cancel", number))

    def _read(self) -> None:
        while True:
            try:
                message = self.conn.recv()
            except (EOFError, OSError):
                return
            with self.cond:
                self.got.setdefault(message[1], []).append(message)
                self.cond.notify_all()

    def wait(self, number: int, kind: str) -> tuple:
        with self.cond:
            assert self.cond.wait_for(lambda: any(m[0] == kind for m in self.got.get(number, [])), WAIT), \
                f"no {kind} for {number}: {self.got.get(number)}"
            return next(m for m in self.got[number] if m[0] == kind)


def test_a_light_question_is_answered_while_a_long_one_runs():
    GATES["a"] = threading.Event()
    line = Line()
    line.ask(1, Gated("a"))
    line.wait(1, "progress")       # the long one is running
    line.ask(2, Echo(42))
    assert line.wait(2, "done")[2] == 42
    assert not any(m[0] == "done" for m in line.got[1])
    GATES["a"].set()
    assert line.wait(1, "done")[2] == "done"


def test_a_cancelled_question_stops_at_its_next_report_and_says_so():
    GATES["b"] = threading.Event()
    line = Line()
    line.ask(1, Gated("b"))
    line.wait(1, "progress")
    line.cancel(1)
    line.wait(1, "cancelled")
    GATES["b"].set()
    line.ask(2, Echo("after"))     # the lane goes on with what comes next
    assert line.wait(2, "done")[2] == "after"
    assert not any(m[0] == "done" for m in line.got[1])


def test_a_question_cancelled_while_it_waits_is_never_started():
    GATES["c"] = threading.Event()
    line = Line()
    line.ask(1, Gated("c"))
    line.wait(1, "progress")
    line.ask(2, Gated("c", "second"))  # waits behind the first in the long lane
    line.cancel(2)
    GATES["c"].set()
    line.wait(1, "done")
    line.wait(2, "cancelled")
    assert 2 not in {m[1] for m in sum(line.got.values(), []) if m[0] == "progress"}


def test_failures_come_back_as_one_line_and_a_bug_with_its_traceback():
    line = Line()
    line.ask(1, Echo("mistake"))
    line.ask(2, Echo("bug"))
    kind, _, message, trace = line.wait(1, "failed")
    assert message == "a user's mistake, said in one line" and trace is None
    kind, _, message, trace = line.wait(2, "failed")
    assert message.startswith("KeyError") and "\n" not in message and "Traceback" in trace


def test_a_long_answers_reports_come_back_with_what_they_count():
    GATES["d"] = threading.Event()
    line = Line()
    line.ask(1, Gated("d"))
    _, _, done, total, unit = line.wait(1, "progress")
    GATES["d"].set()
    line.wait(1, "done")
    assert total == 10**9 and unit == "ticks" and done >= 1


def test_reports_are_sent_at_most_a_few_times_a_second_and_the_last_always(monkeypatch):
    from engine.analysis import host

    now, sent = [100.0], []
    monkeypatch.setattr(host.time, "monotonic", lambda: now[0])
    ticket = host.Ticket(7, sent.append)
    for k in range(10):  # ten reports within a tenth of a second
        ticket(k, 10, "parts")
        now[0] += 0.01
    ticket(10, 10, "parts")  # the last: always said
    assert [m[2] for m in sent] == [0, 10]
