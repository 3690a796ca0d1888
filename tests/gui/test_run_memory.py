"""What a pane was showing for a run comes back with the run (issue 16, item 14): the heatmap prompt and
the Forms source."""

from __future__ import annotations

import pytest

from gui.panes.forms import FormsPane
from gui.panes.heatmaps import HeatmapsPane
from gui.session import Session


@pytest.fixture
def run(tmp_path):
    from tests.engine.cli.test_export_cli import tiny_run

    return tiny_run(tmp_path / "run")


def test_the_heatmap_prompt_is_remembered_with_the_run(qtbot, run):
    session = Session(run.config)
    pane = HeatmapsPane(session)
    qtbot.addWidget(pane)
    session.set_run(run)
    first = pane.view.prompt
    pane.prompt.setText("To be, or not to be")
    pane.prompt.editingFinished.emit()
    session.set_run(None)
    pane.prompt.setText(first)
    pane.prompt.editingFinished.emit()  # with no run: remembered for none
    session.set_run(run)
    assert pane.view.prompt == "To be, or not to be" and pane.prompt.text() == "To be, or not to be"


def test_the_forms_source_is_remembered_with_the_run(qtbot, run):
    session = Session(run.config)
    pane = FormsPane(session)
    qtbot.addWidget(pane)
    session.set_run(run)
    pane.source.kind.setCurrentIndex(1)  # the model's form
    assert pane.state.source.kind == "model"
    session.set_run(None)
    pane.source.kind.setCurrentIndex(0)
    session.set_run(run)
    assert pane.state.source.kind == "model" and pane.source.kind.currentIndex() == 1


def test_settings_set_through_the_one_store_reach_the_ini_without_a_store_being_destroyed(qtbot, tmp_path):
    """One QSettings for the app (gui/settings.py): two values set in one turn are written when Qt serves the
    store's posted update (not as a per-call QSettings is destroyed), and a store opened afresh, as the next start
    opens it, reads them back."""
    from PySide6.QtCore import QCoreApplication, QEvent

    from gui import recent, settings

    store = settings.qsettings()
    assert settings.qsettings() is store
    settings.set_run_value(tmp_path / "a", "prompt", "To be")
    recent.add_recent_run(tmp_path / "a")
    path = store.fileName()
    QCoreApplication.sendPostedEvents(store, QEvent.Type.UpdateRequest)  # the turn's end: Qt writes the INI
    text = open(path, encoding="utf-8").read()  # the file itself: a QSettings here would share the store's cache
    assert "To be" in text and f"recent={tmp_path / 'a'}" in text
    settings.reopen()  # as the next start: a store opened afresh
    assert settings.qsettings() is not store and settings.run_value(tmp_path / "a", "prompt") == "To be"
