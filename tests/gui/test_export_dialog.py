"""File → Export… of a heatmap (issue 16, item 7): the resolution and width chosen in the dialog set the
image's size, and the figure's caption names the run, the step and the prompt."""

from __future__ import annotations

import struct
import xml.etree.ElementTree as ET

import pytest

from engine.figures.export import FigureOptions
from gui.widgets import dialogs

from .conftest import QT_NOISE, tiny_config

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]
WAIT = 60_000


def test_a_heatmap_export_takes_the_dialogs_size_and_names_run_step_and_prompt(qtbot, make_window,
                                                                                corpus_file, tmp_path,
                                                                                monkeypatch, children_in_thread):
    """The export is written on a thread (children_in_thread): its process is tests/gui/test_exports.py's point."""
    w = make_window(tiny_config(corpus_file, steps=20, snapshot_every=10, checkpoint_every=10))
    heat = w.panes["pane_heatmaps"]
    w.actions["train"].trigger()
    qtbot.waitUntil(lambda: w.session.training_state == "finished", timeout=WAIT)
    qtbot.waitUntil(lambda: "attention" in heat.view.results, timeout=WAIT)
    heat.prompt.setFocus()
    qtbot.waitUntil(heat.prompt.hasFocus)
    chosen = {}
    monkeypatch.setattr(dialogs, "ask_export", lambda *a, **k: chosen["answer"])

    chosen["answer"] = (tmp_path / "grid.svg", FigureOptions())
    step = heat.view.results["attention"][1].step  # the figure is taken as the action fires (a newer may follow)
    w.actions["export"].trigger()
    qtbot.waitUntil(lambda: w.banner.text == f"Exported {tmp_path / 'grid.svg'}", timeout=WAIT)
    text = "".join(ET.parse(tmp_path / "grid.svg").getroot().itertext())
    assert f"run {w.controller.run_dir.name}" in text and f"step {step}" in text
    assert f"prompt “{heat.view.prompt}”" in text and "query" in text and "key" in text

    chosen["answer"] = (tmp_path / "grid.png", FigureOptions(dpi=300, width_in=3.5))
    w.actions["export"].trigger()
    qtbot.waitUntil(lambda: w.banner.text == f"Exported {tmp_path / 'grid.png'}", timeout=WAIT)
    data = (tmp_path / "grid.png").read_bytes()
    assert struct.unpack(">I", data[16:20])[0] == 1050


def test_the_export_dialog_offers_resolution_and_width_and_remembers_the_resolution(qtbot, monkeypatch, tmp_path):
    from PySide6.QtWidgets import QComboBox, QFileDialog

    seen = {}

    def accept(box):
        combos = box.findChildren(QComboBox)
        dpi = next(c for c in combos if c.findData(300) >= 0)
        width = next(c for c in combos if c.findData(3.5) >= 0)
        dpi.setCurrentIndex(dpi.findData(300))
        width.setCurrentIndex(width.findData(7.0))
        box.selectFile(str(tmp_path / "figure.png"))
        seen["visible"] = dpi.isVisibleTo(box) and width.isVisibleTo(box)
        return 1

    monkeypatch.setattr(QFileDialog, "exec", accept)
    path, options = dialogs.ask_export(None, "Export", "PNG image (*.png)", suggested="figure.png")
    assert path.name == "figure.png" and options == FigureOptions(dpi=300, width_in=7.0) and seen["visible"]
    monkeypatch.setattr(QFileDialog, "exec", lambda box: 0)
    assert dialogs.ask_export(None, "Export", "PNG image (*.png)") is None
    from gui import settings

    assert settings.export_dpi() == 300
