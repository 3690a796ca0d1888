"""Errors nobody expected: written to the log (gui/log.py) and shown in a dialog with the traceback, the log's
path and a Copy report button, while the app goes on.

Without this, an exception in a slot or a paint went to a terminal the user does not see (PySide6 prints it
and carries on) and left no trace once the window closed. `CrashReporter.install` takes Python's two hooks:
`sys.excepthook` (the GUI thread: Qt's slots and event handlers end there) and `threading.excepthook` (a
worker thread's uncaught error). A thread's error is carried to the GUI thread by a queued signal; the dialog
never closes the window and never stops training, whose worker checkpoints as it always does. While one
dialog is open, later errors are added to it (a paint that fails fails at every frame) rather than stacked.
"""

from __future__ import annotations

import sys
import threading
import traceback

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QWidget

from . import log as app_log
from .about import APP_NAME, version_report
from .widgets.report_dialog import ReportDialog

INTRO = ("<b>{app} met an error it did not expect.</b><p>The app goes on: your run is on disk (training, if it "
         "was running, goes on and keeps saving checkpoints). What happened is below and in the log, "
         "<code>{log}</code>. Copy report puts it on the clipboard with the versions, for a bug report.</p>")


def format_error(exc_type, exc, tb) -> str:
    return "".join(traceback.format_exception(exc_type, exc, tb)).rstrip()


class CrashDialog(ReportDialog):
    def __init__(self, error: str, log_file, parent: QWidget | None = None):
        shown = str(log_file) if log_file is not None else "(no log: the data folder cannot be written)"
        super().__init__(f"{APP_NAME}: an unexpected error", INTRO.format(app=APP_NAME, log=shown), error,
                         "Copy report", parent)
        self.setObjectName("crash_dialog")
        self.log_file = log_file
        self.errors = 1

    def add_error(self, error: str) -> None:
        """Another error while this one is read: appended below, the count in the title."""
        self.errors += 1
        self.text.appendPlainText("\n" + "-" * 72 + "\n" + error)
        self.setWindowTitle(f"{APP_NAME}: {self.errors} unexpected errors")

    def report(self) -> str:
        return f"{version_report()}\nLog: {self.log_file}\n\n{self.text.toPlainText()}\n"


class CrashReporter(QObject):
    """Logs every uncaught error and shows it; `install()` makes it Python's hook for both kinds of thread."""

    sig_error = Signal(str)  # a formatted traceback, delivered on the GUI thread

    def __init__(self, parent_widget: QWidget | None = None):
        super().__init__(parent_widget)
        self.parent_widget = parent_widget
        self.dialog: CrashDialog | None = None
        self._previous = None
        self.sig_error.connect(self._show, Qt.ConnectionType.QueuedConnection)

    def install(self) -> None:
        self._previous = (sys.excepthook, threading.excepthook)
        sys.excepthook = self.handle
        threading.excepthook = lambda a: self.handle(a.exc_type, a.exc_value, a.exc_traceback, a.thread)

    def uninstall(self) -> None:
        if self._previous is not None:
            sys.excepthook, threading.excepthook = self._previous
            self._previous = None

    def handle(self, exc_type, exc, tb, thread=None) -> None:
        """Log the error, print it where Python would, and show it (from any thread)."""
        if issubclass(exc_type, KeyboardInterrupt):
            sys.__excepthook__(exc_type, exc, tb)
            return
        error = format_error(exc_type, exc, tb)
        where = f" in thread {thread.name}" if thread is not None else ""
        app_log.log.error("unexpected error%s\n%s", where, error)
        print(error, file=sys.__stderr__)
        self.sig_error.emit(error)

    def _show(self, error: str) -> None:
        if self.dialog is not None and self.dialog.isVisible():
            self.dialog.add_error(error)
            return
        self.dialog = CrashDialog(error, app_log.current_log(), self.parent_widget)
        self.dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.dialog.destroyed.connect(self._forget)
        self.dialog.show()  # not exec(): a nested event loop inside whatever slot failed is asking for more

    def _forget(self, *_) -> None:
        self.dialog = None
