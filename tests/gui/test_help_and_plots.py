"""F1 lists the keys and gestures inside the views, and a plot's right-click Export… is the app's (issue 16,
item 14)."""

from __future__ import annotations

import pytest
import pyqtgraph as pg
from PySide6.QtWidgets import QMessageBox

from gui.widgets import dialogs

from .conftest import QT_NOISE

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]


def test_f1_lists_the_timeline_keys_and_the_wheel_zoom(make_window, monkeypatch):
    w = make_window()
    shown = []
    monkeypatch.setattr(QMessageBox, "information", lambda parent, title, text: shown.append(text))
    w.show_shortcuts()
    assert "Home / End" in shown[0] and "wheel / drag" in shown[0] and "Ctrl+E" in shown[0]


def test_no_plot_offers_pyqtgraphs_own_exporter_and_its_export_is_the_panes(make_window, monkeypatch):
    w = make_window()
    asked = []
    monkeypatch.setattr(dialogs, "ask_export", lambda *a, **k: asked.append(k["suggested"]) or None)
    training = w.panes["pane_training"]
    for pane in w.panes.values():
        for view in pane.findChildren(pg.GraphicsView):
            menu = getattr(view.scene(), "contextMenu", [])
            assert all(a.text() != "Export..." for a in menu)
    view = training.plot.graphics  # the loss curves (the head timeline beside them has its own export)
    view.scene().contextMenu[0].trigger()
    assert w.banner.text.startswith("Nothing to export yet") and not asked


def test_file_export_takes_the_first_pane_that_shows_something(make_window, monkeypatch):
    """Issue 40, seen under Xvfb: with an imported GPT-2 open at step 0 and no pane focused, File → Export…
    asked the first pane alone (Training: no loss yet) and said to train or open a run, with a run open."""
    w = make_window()
    asked = []
    monkeypatch.setattr(dialogs, "ask_export", lambda *a, **k: asked.append(k["suggested"]) or None)
    able = [p for p in w.panes.values() if hasattr(p, "export_job")]
    monkeypatch.setattr(able[0], "export_job", lambda: None)
    monkeypatch.setattr(able[1], "export_job", lambda: (["PNG (*.png)"], "shown.png", print))
    w.export()
    assert asked == ["shown.png"]
    monkeypatch.setattr(able[1], "export_job", lambda: None)
    for pane in able[2:]:
        monkeypatch.setattr(pane, "export_job", lambda: None)
    w.export()
    assert asked == ["shown.png"] and w.banner.text.startswith("Nothing to export yet")
