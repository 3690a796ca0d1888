"""The heads × steps timeline: shows the engine's scores for the open run, its selector picks the score, and a
click shows that head at that step in the Heatmaps pane."""

from __future__ import annotations

import numpy as np
import pytest

from engine.analysis.head_timeline import head_timeline
from engine.analysis.run_analysis import RunAnalysis
from gui.panes.heatmaps import HeatmapsPane
from gui.session import Session
from gui.panes.training.head_timeline import HeadTimelinePanel
from tests.engine.cli.test_export_cli import tiny_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return tiny_run(tmp_path_factory.mktemp("head-timeline") / "run")


def opened(qtbot, run):
    session = Session(run.config)
    panel = HeadTimelinePanel(session)
    qtbot.addWidget(panel)
    panel.resize(600, 400)
    panel.show()
    assert not panel.heatmap.isVisible() and "Open or train a run" in panel.note.text()  # no empty grid
    session.set_run(run)
    qtbot.waitUntil(lambda: not panel.view.scoring and session.asker.idle, timeout=60000)
    assert panel.heatmap.isVisible()
    return session, panel


def test_the_panel_shows_the_same_scores_as_the_engine_and_the_command_line(qtbot, run):
    _, panel = opened(qtbot, run)
    want = RunAnalysis(run.path).head_timeline()  # what the analysis process answered the panel
    assert want.steps == head_timeline(run.path).steps
    assert panel.timeline.steps == want.steps == [0, 2, 4]
    for name in ("induction", "previous_token", "ablation"):
        panel.score.setCurrentIndex(panel.score.findData(name))
        expected = want.values[name].reshape(3, 4).T  # rows: L0 H0, L0 H1, L1 H0, L1 H1
        np.testing.assert_allclose(panel.heatmap.matrix(), expected.astype(np.float32))
        np.testing.assert_array_equal(panel.matrix(), expected)
    assert panel.heatmap.labels() == (["L0 H0", "L0 H1", "L1 H0", "L1 H1"], ["0", "2", "4"])
    assert "no role for this score" in panel.note.text()
    assert "Ablation: exact, each head's output replaced by its mean over the probe in turn." in panel.note.text()


def test_a_hidden_panel_asks_nothing_until_it_is_seen(qtbot, run):
    session = Session(run.config)
    panel = HeadTimelinePanel(session)
    qtbot.addWidget(panel)
    session.set_run(run)
    qtbot.wait(50)  # turns of the event loop, in which a seen panel would have asked
    assert panel.timeline is None and session.asker.idle
    panel.show()
    qtbot.waitUntil(lambda: not panel.view.scoring, timeout=60000)
    panel.score.setCurrentIndex(panel.score.findData("induction"))
    np.testing.assert_array_equal(panel.matrix(), RunAnalysis(run.path).head_timeline().values["induction"]
                                  .reshape(3, 4).T)


def test_snapshots_while_training_ask_again_at_a_low_rate(qtbot, run):
    from types import SimpleNamespace

    session, panel = opened(qtbot, run)
    report = SimpleNamespace(snapshot=True)
    panel.refresh()  # just looked: the next look waits
    look = panel.view.look
    session.sig_step_reported.emit(report)
    assert panel._later.isActive() and panel.view.look == look
    session.sig_step_reported.emit(report)
    assert panel._later.isActive()
    panel._later.timeout.emit()
    assert panel.view.look == look + 1
    qtbot.waitUntil(lambda: not panel.view.scoring, timeout=60000)
    session.sig_step_reported.emit(SimpleNamespace(snapshot=False))  # a step without a snapshot asks nothing
    assert not panel._later.isActive() and panel.view.look == look + 1


def test_the_wait_between_asks_follows_what_the_last_ask_took(qtbot, run):
    import time
    from types import SimpleNamespace

    from gui.panes.training.head_timeline import REFRESH_COST_FACTOR, SNAPSHOT_REFRESH_S

    session, panel = opened(qtbot, run)
    report = SimpleNamespace(snapshot=True)
    panel._look_cost, panel._last_look = 20.0, time.monotonic()  # a costly model: it waits a few times that
    session.sig_step_reported.emit(report)
    # the interval set, not remainingTime(): a coarse Qt timer may fire up to 5% late and says so there
    assert panel._later.isActive() and panel._later.interval() > (REFRESH_COST_FACTOR * 20.0 - 30) * 1000
    panel._later.stop()
    panel._look_cost, panel._last_look = 0.1, time.monotonic()  # a lesson-sized model: again within seconds
    session.sig_step_reported.emit(report)
    assert panel._later.isActive() and 0 < panel._later.interval() <= SNAPSHOT_REFRESH_S * 1000 + 1


def test_clicking_a_cell_shows_that_head_at_that_step_in_the_heatmaps_pane(qtbot, run):
    session, panel = opened(qtbot, run)
    heat = HeatmapsPane(session)
    qtbot.addWidget(heat)
    panel.score.setCurrentIndex(panel.score.findData("induction"))  # one row per head
    with qtbot.waitSignal(panel.sig_cell_clicked) as sig:
        panel.heatmap.sig_cell_clicked.emit(3, 1)  # row 3 = L1 H1, column 1 = step 2
    assert sig.args == [1, 1, 2]
    selection = session.workspace.selection
    assert (selection.step, selection.layer, selection.head) == (2, 1, 1)
    assert heat.timeline.step() == 2 and session.browse_step == 2
    assert (heat.layer.value(), heat.head.value()) == (1, 1)
    qtbot.wait(50)  # turns of the event loop, in which a seen pane would have asked
    assert heat.view.question(session.workspace) not in session.asker.out()  # a hidden pane asks when seen


def test_a_click_on_the_timeline_brings_the_heatmaps_pane_to_the_front(qtbot, make_window):
    w = make_window()
    heat = w.panes["pane_heatmaps"]
    heat.tabs.setCurrentWidget(heat.masks)  # the last sub-tab a user looked at
    w.docks["pane_weight"].raise_()
    qtbot.waitUntil(lambda: not heat.seen())
    w.session.show_head_at_step(0, 1, 0)
    qtbot.waitUntil(lambda: heat.seen())
    assert (w.session.workspace.selection.layer, w.session.workspace.selection.head) == (0, 1)
    assert heat.tabs.currentWidget() is heat.attention


def test_both_heads_of_the_lesson_read_in_one_chart_marked_on_their_own_cells(qtbot):
    """Issue 40: the default score hid the previous-token head, and the ◆ beside a step's label named no head
    and overprinted the axis ("425◆◆"). The roles view shows each head that took a role in its role's score,
    the step it did marked on its own cell; a chosen score marks its heads' cells the same way."""
    from engine.analysis.head_timeline import HeadTimeline
    from engine.analysis.heads import SCORES
    from gui.panes.training.head_timeline import INDUCTION_SENTENCE, HeadTimelineChart

    steps = [0, 25, 50, 75]
    values = {name: np.zeros((4, 2, 2)) for name in SCORES}
    values["induction"][:, 1, 0] = [0.0, 0.1, 0.5, 0.8]      # forms at 50
    values["previous_token"][:, 0, 0] = [0.0, 0.6, 0.9, 0.9]  # forms at 25
    view = HeadTimelineChart()
    qtbot.addWidget(view)
    formed = []
    view.sig_roles_changed.connect(formed.append)
    view.set_timeline(HeadTimeline(steps, values, np.zeros(4), False))
    assert view.chosen() == "roles"  # the default: no score to choose first
    assert view.heatmap.labels() == (["L0 H0 previous-token", "L1 H0 induction"], ["0", "25", "50", "75"])
    np.testing.assert_array_equal(view.matrix(), [values["previous_token"][:, 0, 0], values["induction"][:, 1, 0]])
    assert set(view.heatmap.marks()) == {(0, 1), (1, 2)}
    assert "L1 H0 took the induction role at step 50" in view.heatmap.marks()[(1, 2)]
    assert [(r.layer, r.head, r.score, r.formed) for r in formed[-1]] == [(0, 0, "previous_token", 25),
                                                                          (1, 0, "induction", 50)]
    assert view.lesson.text() == INDUCTION_SENTENCE and "induction head" in INDUCTION_SENTENCE
    with qtbot.waitSignal(view.sig_cell_clicked) as clicked:
        view.heatmap.sig_cell_clicked.emit(1, 2)  # the induction row, at step 50
    assert clicked.args == [1, 0, 50]
    view.score.setCurrentIndex(view.score.findData("induction"))
    assert view.heatmap.labels()[1] == ["0", "25", "50", "75"]  # no mark among the step labels
    assert set(view.heatmap.marks()) == {(2, 2)}  # row 2: L1 H0
    assert "L1 H0 · induction, from step 50" in view.note.text()
    view.score.setCurrentIndex(view.score.findData("entropy"))
    assert view.heatmap.marks() == {}
