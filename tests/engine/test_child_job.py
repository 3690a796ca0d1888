"""Work in a child process of its own (engine/child_job.py): where it runs, its progress and events, its outcome,
a one-line failure, a cancel that ends it at once, and a child that dies; and the same work (and an import,
engine/importers/process.py) on a thread for the tests whose point is not the process."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time

import pytest

from engine.child_job import ChildJob
from tests.child_work import CAP_S, counted, die, fail


def test_work_runs_in_another_process_and_reports_before_its_outcome(tmp_path):
    events = ChildJob(counted, 3).wait(CAP_S)
    assert events[-3:-1] == [("progress", 3, 3, "items"), ("note", 3)]
    assert events[-1][0] == "done" and events[-1][1] != os.getpid()


def test_a_failure_is_one_line(tmp_path):
    (kind, message), = ChildJob(fail, tmp_path / "a.csv").wait(CAP_S)
    assert kind == "failed" and message == "OSError: [Errno 28] No space left on device"


def test_cancel_ends_the_child_at_once():
    gate = multiprocessing.get_context("spawn").Event()  # never set: the work waits until ended
    job = ChildJob(counted, 1, gate)
    seen = []
    while ("note", 1) not in seen:
        seen += job.wait(0.1)
    job.cancel()
    assert job.finished and not job._process.is_alive() and job.poll() == []


def test_a_child_that_dies_is_a_failure(tmp_path):
    events = ChildJob(die, tmp_path / "d.txt").wait(CAP_S)
    assert events[-1][0] == "failed" and "stopped unexpectedly" in events[-1][1]


def test_on_a_thread_the_same_work_says_the_same_and_cannot_be_cancelled(children_in_thread, tmp_path):
    events = ChildJob(counted, 3).wait(CAP_S)
    assert events[-3:-1] == [("progress", 3, 3, "items"), ("note", 3)] and events[-1] == ("done", os.getpid())
    (kind, message), = ChildJob(fail, tmp_path / "a.csv").wait(CAP_S)
    assert kind == "failed" and message == "OSError: [Errno 28] No space left on device"
    gate = threading.Event()
    job = ChildJob(counted, 1, gate)
    with pytest.raises(RuntimeError, match="cannot be ended"):
        job.cancel()
    gate.set()
    assert job.wait(CAP_S)[-1] == ("done", os.getpid())


def test_an_import_on_a_thread_tells_its_stages_then_what_it_wrote(children_in_thread, tmp_path):
    from engine.importers.process import ImportProcess
    from engine.rundir.runs import Run
    from tests.engine.importers.test_nanogpt import write_out_dir

    write_out_dir(tmp_path / "out")
    job = ImportProcess("nanogpt", tmp_path / "out", tmp_path / "run")
    events = []
    while not job.finished:
        events += job.poll()
        time.sleep(0.01)
    assert events[0][0] == "stage" and events[-1][0] == "done" and events[-1][1].run_dir == tmp_path / "run"
    assert Run(tmp_path / "run").latest_step() == 250 and job.reap()
