"""Help → About: what the app is, and the versions of everything it runs on (engine/versions.py, with the Qt
this process actually runs), with a Copy button for a bug report."""

from __future__ import annotations

from PySide6 import __version__ as pyside_version
from PySide6.QtCore import qVersion
from PySide6.QtWidgets import QWidget

from engine.versions import report

from .widgets.report_dialog import ReportDialog

APP_NAME = "GPT Explorer"
SUMMARY = ("Build a small GPT, train it live on Shakespeare, watch its attention form, and read the symbolic "
           "form of its training error.")


def running_qt() -> str:
    return f"PySide6 {pyside_version} (Qt {qVersion()})"


def version_report() -> str:
    """The installation's versions with the Qt of this process (a crash report starts with it too)."""
    return report(qt=running_qt())


class AboutDialog(ReportDialog):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(f"About {APP_NAME}", f"<b>{APP_NAME}</b><p>{SUMMARY}</p>"
                         "<p>The versions below are what a bug report needs: Copy puts them on the "
                         "clipboard.</p>", version_report(), "Copy versions", parent)
        self.setObjectName("about_dialog")
        self.resize(640, 320)
