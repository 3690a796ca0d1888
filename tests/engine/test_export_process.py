"""An export in a child process of its own (engine/export_process.py): progress, the files written, a one-line
failure, and a cancel or a crash that leave nothing behind."""

from __future__ import annotations

import os
import time

from engine.export_process import ExportProcess
from tests.child_work import CAP_S, Sheet, die, fail, write_pid


def until_end(job: ExportProcess) -> list[tuple]:
    events, deadline = [], time.monotonic() + CAP_S
    while not job.finished and time.monotonic() < deadline:
        events += job.poll()
        time.sleep(0.01)
    return events


def test_an_export_reports_its_pages_and_is_written_whole_by_another_process(tmp_path):
    sheet = Sheet(2)
    sheet.go()
    events = until_end(ExportProcess(tmp_path / "s.txt", sheet))
    assert ("progress", 2, 2, "pages written") in events
    assert events[-1] == ("done", [tmp_path / "s.txt", tmp_path / "s-p2.txt"])
    until_end(ExportProcess(tmp_path / "pid.txt", write_pid))
    assert int((tmp_path / "pid.txt").read_text()) != os.getpid()


def test_a_failure_is_one_line_and_leaves_nothing(tmp_path):
    events = until_end(ExportProcess(tmp_path / "a.csv", fail))
    assert events[-1] == ("failed", f"cannot write {tmp_path / 'a.csv'}: No space left on device")
    assert not list(tmp_path.iterdir())


def test_cancel_ends_the_process_at_once_and_removes_what_it_wrote(tmp_path):
    sheet = Sheet(3)  # never let go: it waits in its first page until ended
    job = ExportProcess(tmp_path / "w.svg", sheet)
    assert sheet.written[0].wait(CAP_S)
    assert [p.name.startswith(".w.svg.") for p in tmp_path.iterdir()] == [True]
    job.cancel()
    assert job.finished and not list(tmp_path.iterdir())


def test_a_process_that_dies_mid_file_is_a_failure_that_leaves_nothing(tmp_path):
    events = until_end(ExportProcess(tmp_path / "d.png", die))
    assert events[-1][0] == "failed" and "stopped unexpectedly" in events[-1][1]
    assert not list(tmp_path.iterdir())
