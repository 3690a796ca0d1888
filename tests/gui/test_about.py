"""Help → About: the versions of the app, Python, the Qt this process runs, torch and the GPU, copied by a
button (issue 40)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt, qVersion
from PySide6.QtWidgets import QApplication

from .conftest import QT_NOISE

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]


def test_about_shows_every_version_and_copies_them(qtbot, make_window):
    from gui.about import AboutDialog

    w = make_window()
    w.actions["about"].trigger()
    dialog = w.findChild(AboutDialog)
    assert dialog is not None and dialog.isVisible()
    text = dialog.text.toPlainText()
    for part in ("GPT Explorer: ", "Python: ", f"Qt: PySide6 {qVersion()}"[:14], "torch: ", "GPU: "):
        assert part in text
    assert f"(Qt {qVersion()})" in text  # the Qt this process runs, not only the wheel's
    qtbot.mouseClick(dialog.copy_button, Qt.MouseButton.LeftButton)
    assert QApplication.clipboard().text() == text
    dialog.close()
