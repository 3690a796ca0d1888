"""The long-lived helper process with lanes (engine/service_process.py): where the work runs, parts before
the answer, one lane never waiting for another, cancelling, and a process that dies."""

from __future__ import annotations

import os
import queue
import sys
import threading
import time
from pathlib import Path

import pytest

from engine.service_process import CANCELLED, STOPPED, ServiceProcess
from tests.engine import service_questions as sq

CAP = 120  # seconds: a generous cap on waiting for an event, never the assertion


class Events:
    """Every callback's (number, kind, payload), in the order they came."""

    def __init__(self):
        self.q: queue.Queue = queue.Queue()

    def __call__(self, number, kind, payload):
        self.q.put((number, kind, payload))

    def next(self):
        return self.q.get(timeout=CAP)

    def until_end(self, number):
        got = []
        while True:
            event = self.next()
            got.append(event)
            if event[0] == number and event[1] != "part":
                return got


@pytest.fixture
def service():
    s = ServiceProcess(sq.make_state, name="test")
    yield s
    s.close()


def test_questions_are_answered_in_another_process_that_loads_neither_qt_nor_torch(service):
    events = Events()
    n = service.ask(sq.WhereAmI(), events)
    (number, kind, (pid, heavy)), = events.until_end(n)
    assert (number, kind) == (n, "done") and pid != os.getpid() and pid == service.pid and heavy == []


def test_parts_come_before_the_answer_in_order(service):
    events = Events()
    n = service.ask(sq.Parts(5), events)
    assert events.until_end(n) == [(n, "part", k) for k in range(5)] + [(n, "done", "all")]


def test_a_lane_busy_until_cancelled_does_not_hold_up_another_lane(service):
    events = Events()
    slow = service.ask(sq.UntilCancelled(), events)
    assert events.next() == (slow, "part", "started")
    quick = service.ask(sq.WhereAmI(), events)  # answered while the slow lane is still busy
    assert events.next()[:2] == (quick, "done")
    service.cancel(slow)
    assert events.next() == (slow, "done", "stopped")


def test_a_question_cancelled_while_waiting_in_its_lane_never_runs(service):
    events = Events()
    slow = service.ask(sq.UntilCancelled(), events)
    assert events.next() == (slow, "part", "started")
    waiting = service.ask(sq.Waits(), events)
    service.cancel(waiting)
    service.cancel(slow)
    ends = {events.next()[:2], events.next()[:2]}
    assert ends == {(slow, "done"), (waiting, "failed")}
    asked = service.ask(sq.Asked(), events)
    assert events.until_end(asked)[-1] == (asked, "done", ["slow"])


def test_a_failure_is_one_line_and_the_process_goes_on(service):
    events = Events()
    n = service.ask(sq.Fails(), events)
    assert events.until_end(n) == [(n, "failed", "a clear message")]
    m = service.ask(sq.Parts(1), events)
    assert events.until_end(m)[-1] == (m, "done", "all")


def test_a_process_that_dies_fails_what_was_asked_and_the_next_question_starts_another(service):
    events = Events()
    first = service.ask(sq.WhereAmI(), events)
    pid = events.until_end(first)[-1][2][0]
    died = service.ask(sq.Dies(), events)
    assert events.until_end(died) == [(died, "failed", STOPPED)]
    again = service.ask(sq.WhereAmI(), events)
    assert events.until_end(again)[-1][2][0] not in (pid, os.getpid())


def test_a_long_answer_reports_how_far_it_is_and_a_cancel_stops_it_at_its_next_report(service):
    events = Events()
    n = service.ask(sq.Reports(), events)
    number, kind, (done, total, unit) = events.next()
    assert (number, kind, total, unit) == (n, "progress", 10**9, "ticks")
    service.cancel(n)
    ends = [e for e in events.until_end(n) if e[1] != "progress"]
    assert ends == [(n, "failed", CANCELLED)]


def test_reports_are_sent_at_most_a_few_times_a_second_and_the_last_always(monkeypatch):
    from engine import service_process

    now, sent = [100.0], []
    monkeypatch.setattr(service_process.time, "monotonic", lambda: now[0])
    job = service_process.Job(7, sent.append)
    for k in range(10):  # ten reports within a tenth of a second
        job(k, 10, "parts")
        now[0] += 0.01
    job(10, 10, "parts")  # the last: always said
    assert [m[2][0] for m in sent] == [0, 10]


def test_the_process_takes_one_torch_thread_at_a_lower_priority_than_the_app(service):
    from engine.training.thread_policy import HELPER_NICENESS

    events = Events()
    n = service.ask(sq.ThreadsAndNiceness(), events)
    threads, niceness = events.until_end(n)[-1][2]
    assert threads == 1 and niceness == min(os.nice(0) + HELPER_NICENESS, 19)  # 19: the lowest priority


def until_blocked_reading(thread_name: str) -> None:
    """Return once the thread so named is blocked reading its pipe: inside multiprocessing's read and asleep, as
    the kernel says (Linux's /proc); at once where it cannot tell."""
    (thread,) = [t for t in threading.enumerate() if t.name == thread_name]
    stat = Path(f"/proc/self/task/{thread.native_id}/stat")
    if not stat.exists():
        return
    deadline = time.monotonic() + CAP
    while time.monotonic() < deadline:
        frame = sys._current_frames().get(thread.ident)
        asleep = stat.read_text().rsplit(")", 1)[1].split()[0] == "S"
        if frame is not None and frame.f_code.co_name == "_recv" and asleep:
            return
        time.sleep(0.001)


def test_a_closed_process_exits_by_itself_even_with_a_lane_busy(service):
    """close() waits for the process to exit; it is told to, so it never waits out its time and kills it. It was
    told by the parent closing its end of the pipe, which the process never saw while the parent's reader was
    blocked reading that end (a descriptor closed under a read stays open until the read returns): most closes
    waited out their 2 s and killed it."""
    events = Events()
    n = service.ask(sq.UntilCancelled(), events)
    assert events.next() == (n, "part", "started")
    process = service._process
    until_blocked_reading("test reader")  # the case where it never was told
    service.close(wait=CAP)
    assert process.exitcode == 0  # exited by itself; killed after the wait would be -9
    assert events.until_end(n)[-1][:2] == (n, "failed")


def test_closing_without_a_wait_ends_a_busy_process_at_once_and_collects_it():
    """The app quitting ends its helpers at once (issue 40: each was waited for 2 s before it was killed anyway,
    4 of a quit's 8 s), and the ended process is collected, never left a zombie."""
    s = ServiceProcess(sq.make_state, name="test")
    events = Events()
    n = s.ask(sq.UntilCancelled(), events)
    assert events.next() == (n, "part", "started")  # busy: it will not exit by itself
    process = s._process
    s.close(wait=0)
    assert not process.is_alive() and process.exitcode is not None
    assert events.until_end(n)[-1][:2] == (n, "failed")
