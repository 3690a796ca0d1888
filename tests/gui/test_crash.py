"""An error nobody expected: logged to a rotating file in the data folder and shown in a dialog with its
traceback, the log's path and Copy report, while the app and its training go on (issue 40)."""

from __future__ import annotations

import sys
import threading

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication

from gui import log as app_log
from gui.crash import CrashDialog, CrashReporter

from .conftest import QT_NOISE, tiny_config

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]


@pytest.fixture
def log_file(tmp_path):
    path = app_log.start_log(tmp_path / "logs")
    yield path
    for handler in list(app_log.log.handlers):
        app_log.log.removeHandler(handler)
        handler.close()


def shown_dialog(qtbot, reporter) -> CrashDialog:
    qtbot.waitUntil(lambda: reporter.dialog is not None and reporter.dialog.isVisible(), timeout=10_000)
    return reporter.dialog


@pytest.mark.qt_no_exception_capture
def test_an_error_in_a_slot_is_logged_and_shown_and_training_goes_on(qtbot, make_window, corpus_file, log_file):
    w = make_window(tiny_config(corpus_file, steps=100_000))
    reporter = CrashReporter(w)
    reporter.install()
    try:
        w.actions["train"].trigger()
        qtbot.waitUntil(lambda: w.session.training_state == "running", timeout=30_000)

        def broken_slot():
            raise ZeroDivisionError("provoked on purpose")

        QTimer.singleShot(0, broken_slot)
        dialog = shown_dialog(qtbot, reporter)
    finally:
        reporter.uninstall()
    assert "ZeroDivisionError: provoked on purpose" in dialog.text.toPlainText()
    assert "broken_slot" in dialog.text.toPlainText() and str(log_file) in dialog.intro.text()
    logged = log_file.read_text(encoding="utf-8")
    assert "unexpected error" in logged and "ZeroDivisionError: provoked on purpose" in logged
    # the window and its training are untouched
    step = w.session.run.latest_step() if w.session.run else 0
    reports = []
    w.session.sig_step_reported.connect(reports.append)
    qtbot.waitUntil(lambda: len(reports) >= 3, timeout=30_000)
    assert w.isVisible() and w.session.training_state == "running" and reports[-1].step > step

    qtbot.mouseClick(dialog.copy_button, Qt.MouseButton.LeftButton)
    copied = QApplication.clipboard().text()
    assert copied.startswith("GPT Explorer: ") and "torch: " in copied and str(log_file) in copied
    assert "ZeroDivisionError: provoked on purpose" in copied


def test_an_error_on_another_thread_reaches_the_dialog_and_later_ones_join_it(qtbot, log_file):
    reporter = CrashReporter()
    previous = threading.excepthook
    reporter.install()
    try:
        thread = threading.Thread(target=lambda: 1 / 0, name="worker-x")
        thread.start()
        thread.join()
        dialog = shown_dialog(qtbot, reporter)
        try:
            raise KeyError("second")
        except KeyError:
            reporter.handle(*sys.exc_info())
        qtbot.waitUntil(lambda: dialog.errors == 2)
    finally:
        reporter.uninstall()
    assert threading.excepthook is previous
    text = dialog.text.toPlainText()
    assert "ZeroDivisionError" in text and "KeyError: 'second'" in text and "2 unexpected errors" in dialog.windowTitle()
    assert "in thread worker-x" in log_file.read_text(encoding="utf-8")
    dialog.close()


def test_the_log_rotates_and_a_folder_that_cannot_be_written_is_no_log(tmp_path, log_file):
    for i in range(app_log.MAX_BYTES // 5_000 + 5):
        app_log.log.info("x" * 5_000)
    assert log_file.stat().st_size <= app_log.MAX_BYTES and log_file.with_name(log_file.name + ".1").is_file()
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the folder should be")
    assert app_log.start_log(blocked / "logs") is None
