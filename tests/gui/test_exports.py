"""The app's one export queue (gui/exports.py): progress and Cancel, files only whole, a message naming
where and how many pages, and no export dropped for a newer one; its part of the status bar."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from engine.figures.export import report_progress
from gui.exports import ExportRequest, Exports, ExportStatus
from gui.session import Session

WAIT = 20000


class Sheet:
    """A write of `pages` pages, page by page, that stops after each page until let go: the test decides
    what happens between pages (cancel, another request) without timing anything."""

    def __init__(self, pages: int = 3):
        self.pages = pages
        self.gates = [threading.Event() for _ in range(pages)]
        self.written: list[Path] = []

    def __call__(self, at: Path) -> Path:
        for k in range(self.pages):
            page = at if k == 0 else at.with_name(f"{at.stem}-p{k + 1}{at.suffix}")
            page.write_text(f"page {k + 1}")
            self.written.append(page)
            report_progress(k + 1, self.pages, "pages written")  # where a cancel stops it
            assert self.gates[k].wait(WAIT / 1000)
        return at

    def go(self) -> None:
        for gate in self.gates:
            gate.set()


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
    assert sheet.written[0].exists() and not (out / "w.svg").exists()  # written, but not under its name
    with qtbot.waitSignal(exports.sig_cancelled, timeout=WAIT):
        status.cancel_button.click()
        assert status.label.text().startswith("Cancelling w.svg") and not status.cancel_button.isEnabled()
        sheet.go()
    assert not list(out.iterdir())  # neither page 1 nor the hidden folder it was written in
    assert messages == [("info", "Export of w.svg cancelled; nothing was written.")]
    assert status.isHidden()


def test_a_second_export_asked_during_a_long_one_is_written_too(qtbot, served, out):
    session, exports, status, messages = served
    long, short = Sheet(3), Sheet(1)
    started = []
    exports.sig_started.connect(lambda r: started.append(r.path.name))
    session.request_export(ExportRequest(out / "long.png", long))
    qtbot.waitUntil(lambda: len(long.written) == 1, timeout=WAIT)
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

    def fail(at: Path):
        at.write_text("half")
        raise OSError(28, "No space left on device")

    done = []
    exports.sig_finished.connect(lambda r, paths: done.append(paths))
    session.request_export(ExportRequest(out / "a.csv", fail, what="the norms"))
    session.request_export(ExportRequest(out / "b.csv", lambda at: at.write_text("1")))
    qtbot.waitUntil(lambda: len(done) == 1, timeout=WAIT)
    assert messages[0] == ("error", f"Export of the norms failed: cannot write {out / 'a.csv'}: "
                                    "No space left on device")
    assert [p.name for p in out.iterdir()] == ["b.csv"]


def test_cancel_all_stops_the_running_export_and_drops_those_waiting(qtbot, served, out):
    session, exports, status, messages = served
    long, waiting = Sheet(3), Sheet(1)
    session.request_export(ExportRequest(out / "long.png", long))
    qtbot.waitUntil(lambda: len(long.written) == 1, timeout=WAIT)
    assert status.cancel_all_button.isHidden()  # nothing waits yet: Cancel alone says it
    session.request_export(ExportRequest(out / "next.csv", waiting))
    assert not status.cancel_all_button.isHidden()
    cancelled = []
    exports.sig_cancelled.connect(lambda r: cancelled.append(r.path.name))
    status.cancel_all_button.click()
    long.go()
    qtbot.waitUntil(lambda: len(cancelled) == 2, timeout=WAIT)
    assert cancelled == ["long.png", "next.csv"] and waiting.written == []  # the waiting one never began
    assert not list(out.iterdir()) and status.isHidden()
    assert [text for _, text in messages] == ["Export of long.png cancelled; nothing was written.",
                                              "Export of next.csv cancelled; nothing was written."]
