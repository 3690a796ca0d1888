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
