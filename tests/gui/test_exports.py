"""The app's one export queue (gui/exports.py): exports written in a process of their own, progress and a
Cancel that ends it at once, files only whole, a message naming where and how many pages, and no export
dropped for a newer one; its part of the status bar."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gui.exports import ExportRequest, Exports, ExportStatus
from gui.session import Session
from tests.child_work import CAP_S, Sheet, fail, write_one, write_pid

WAIT = 1000 * CAP_S


@pytest.fixture
def out(tmp_path):
    """A folder of its own (tmp_path holds the settings too)."""
    (tmp_path / "out").mkdir()
    return tmp_path / "out"


@pytest.fixture
def served(qtbot):
    session = Session()
    exports = Exports(session)
    messages: list[tuple[str, str]] = []
    session.sig_message_posted.connect(lambda level, text: messages.append((level, text)))
    status = ExportStatus(exports)
    qtbot.addWidget(status)
    yield session, exports, status, messages
    exports.cancel()


def test_progress_is_shown_and_cancel_leaves_no_file(qtbot, served, out):
    session, exports, status, messages = served
    sheet = Sheet(3)
    progress = []
    exports.sig_progress.connect(lambda _r, *p: progress.append(p))
    session.request_export(ExportRequest(out / "w.svg", sheet))
    qtbot.waitUntil(lambda: (1, 3, "pages written") in progress, timeout=WAIT)
    assert not status.isHidden() and status.label.text() == "Exporting w.svg: 1 of 3 pages written"
    assert status.bar.maximum() == 3 and status.bar.value() == 1
    (hidden,) = out.iterdir()  # written, but not under its name
    assert hidden.name.startswith(".w.svg.") and (hidden / "w.svg").is_file() and not (out / "w.svg").exists()
    with qtbot.waitSignal(exports.sig_cancelled, timeout=WAIT):
        status.cancel_button.click()  # the sheet is still waiting in its second page: only ending it stops it
    assert not list(out.iterdir())  # neither page 1 nor the hidden folder it was written in
    assert messages == [("info", "Export of w.svg cancelled; nothing was written.")]
    assert status.isHidden()


def test_a_second_export_asked_during_a_long_one_is_written_too(qtbot, served, out):
    session, exports, status, messages = served
    long, short = Sheet(3), Sheet(1)
    started = []
    exports.sig_started.connect(lambda r: started.append(r.path.name))
    session.request_export(ExportRequest(out / "long.png", long))
    assert long.written[0].wait(CAP_S)
    session.request_export(ExportRequest(out / "short.csv", short))
    assert exports.waiting == 1 and status.label.text().endswith("· 1 more waiting")
    finished = []
    exports.sig_finished.connect(lambda r, paths: finished.append(paths))
    long.go()
    short.go()
    qtbot.waitUntil(lambda: len(finished) == 2, timeout=WAIT)
    assert finished == [[out / "long.png", out / "long-p2.png", out / "long-p3.png"],
                        [out / "short.csv"]]
    assert started == ["long.png", "short.csv"]
    assert [text for _, text in messages] == [
        f"Exported 3 pages in {out}: long.png … long-p3.png", f"Exported {out / 'short.csv'}"]
    assert sorted(p.name for p in out.iterdir()) == ["long-p2.png", "long-p3.png", "long.png", "short.csv"]


def test_a_failed_export_says_why_and_the_next_still_runs(qtbot, served, out):
    session, exports, status, messages = served

    done = []
    exports.sig_finished.connect(lambda r, paths: done.append(paths))
    session.request_export(ExportRequest(out / "a.csv", fail, what="the norms"))
    session.request_export(ExportRequest(out / "b.csv", write_one))
    qtbot.waitUntil(lambda: len(done) == 1, timeout=WAIT)
    assert messages[0] == ("error", f"Export of the norms failed: cannot write {out / 'a.csv'}: "
                                    "No space left on device")
    assert [p.name for p in out.iterdir()] == ["b.csv"]


def test_cancel_all_stops_the_running_export_and_drops_those_waiting(qtbot, served, out):
    session, exports, status, messages = served
    long, waiting = Sheet(3), Sheet(1)
    session.request_export(ExportRequest(out / "long.png", long))
    assert long.written[0].wait(CAP_S)
    assert status.cancel_all_button.isHidden()  # nothing waits yet: Cancel alone says it
    session.request_export(ExportRequest(out / "next.csv", waiting))
    assert not status.cancel_all_button.isHidden()
    cancelled = []
    exports.sig_cancelled.connect(lambda r: cancelled.append(r.path.name))
    status.cancel_all_button.click()
    qtbot.waitUntil(lambda: len(cancelled) == 2, timeout=WAIT)
    assert cancelled == ["long.png", "next.csv"] and not waiting.written[0].is_set()  # the waiting one never began
    assert not list(out.iterdir()) and status.isHidden()
    assert [text for _, text in messages] == ["Export of long.png cancelled; nothing was written.",
                                              "Export of next.csv cancelled; nothing was written."]


def test_an_export_is_written_by_another_process_while_the_gui_thread_serves_events(qtbot, served, out):
    """Where the work ran: the file names a process that is not this one; while the
    sheet waits in that process, the GUI thread turns its event loop (a queued call is served)."""
    session, exports, status, messages = served
    sheet = Sheet(2)
    session.request_export(ExportRequest(out / "s.txt", sheet))
    assert sheet.written[0].wait(CAP_S)
    served_meanwhile = []
    from PySide6.QtCore import QTimer

    QTimer.singleShot(0, lambda: served_meanwhile.append(exports.running is not None))
    qtbot.waitUntil(lambda: bool(served_meanwhile), timeout=WAIT)
    assert served_meanwhile == [True]  # served while the export was still running
    with qtbot.waitSignal(exports.sig_finished, timeout=WAIT):
        sheet.go()
    with qtbot.waitSignal(exports.sig_finished, timeout=WAIT):
        session.request_export(ExportRequest(out / "pid.txt", write_pid))
    assert int((out / "pid.txt").read_text()) != os.getpid()


def test_a_write_that_cannot_be_sent_to_the_export_process_fails_in_one_line(qtbot, served, out):
    session, exports, status, messages = served
    with qtbot.waitSignal(exports.sig_failed, timeout=WAIT) as got:
        session.request_export(ExportRequest(out / "x.csv", lambda at: at.write_text("1")))
    assert got.args[1].startswith("this export cannot run in the export process") and not list(out.iterdir())
