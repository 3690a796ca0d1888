"""LatestJob answers only the newest waiting request; JobQueue answers every request, in order."""

import threading

import pytest

from engine.errors import UserError
from gui.jobs import JobQueue, LatestJob
from tests.child_work import CAP_S


def _blocked_first(job, tags):
    """Submit tags while the first one is held running, so the rest must wait; return the answers."""
    gate = threading.Event()
    done = []
    job.sig_done.connect(lambda tag, result: done.append((tag, result)))
    job.submit(tags[0], lambda: gate.wait(CAP_S) and tags[0])  # a cap: the gate is opened below
    for tag in tags[1:]:
        job.submit(tag, lambda t=tag: t)
    gate.set()
    return done


def test_latest_job_drops_requests_overtaken_while_waiting(qtbot):
    job = LatestJob()
    done = _blocked_first(job, ["a", "b", "c", "d"])
    qtbot.waitUntil(lambda: not job.busy and len(done) == 2)
    assert done == [("a", "a"), ("d", "d")]


def test_job_queue_answers_every_request_in_order(qtbot):
    job = JobQueue()
    done = _blocked_first(job, ["device", ("sample", 1), ("sample", 2), "export"])
    qtbot.waitUntil(lambda: len(done) == 4)
    assert [tag for tag, _ in done] == ["device", ("sample", 1), ("sample", 2), "export"]
    assert [result for _, result in done] == ["device", ("sample", 1), ("sample", 2), "export"]


@pytest.mark.parametrize("error, expected", [(UserError("the corpus is empty"), "the corpus is empty"),
                                             (KeyError("x"), "KeyError: 'x'")])
def test_a_failure_is_one_line_and_the_queue_goes_on(qtbot, error, expected):
    job = JobQueue()
    failed, done = [], []
    job.sig_failed.connect(lambda tag, message: failed.append((tag, message)))
    job.sig_done.connect(lambda tag, result: done.append(tag))

    def fail():
        raise error

    job.submit("bad", fail)
    job.submit("good", lambda: 1)
    qtbot.waitUntil(lambda: done == ["good"])
    assert failed == [("bad", expected)]
