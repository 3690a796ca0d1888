"""The app's symbolic process: one spawned helper (engine/service_process.py) that answers the Forms pane's
questions (engine/forms/questions.py, on a lane for the console and one for the rest) and typesets formulas
(engine/figures/formula_layout.py's Typeset, on a lane of its own). Neither needs torch, and both are pure
Python that would hold the interpreter lock the GUI thread paints with; one process for both holds one
interpreter and one numpy instead of two (a formula process beside it held 62 MB).
Started on the first question, ended when the application quits or, if it dies, when its pipe closes.
"""

from __future__ import annotations

from PySide6.QtWidgets import QApplication

from engine.forms.desk import Desk
from engine.service_process import QUIT_WAIT_S, ServiceProcess

_SERVICE: ServiceProcess | None = None


def service() -> ServiceProcess:
    """The app's symbolic process (made on first use, ended when the application quits)."""
    global _SERVICE
    if _SERVICE is None:
        _SERVICE = ServiceProcess(Desk, name="symbolic")
        app = QApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(shutdown)
    return _SERVICE


def running() -> ServiceProcess | None:
    """The process if it was started (a cancel needs no new one)."""
    return _SERVICE


def shutdown() -> None:
    """The application quits: the process is ended at once (nothing in it to save)."""
    global _SERVICE
    if _SERVICE is not None:
        _SERVICE.close(QUIT_WAIT_S)
        _SERVICE = None
