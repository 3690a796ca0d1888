"""The Weight pane's Interaction tab (issue 25): it shows the engine's second-order numbers for the weight
and step on screen and the other weight chosen, the model's map at that step, the explained parts over
training, and a click on the map opens that pair."""

from __future__ import annotations

import numpy as np
import pytest

from engine.analysis.run_analysis import RunAnalysis
from gui.panes.weight.interaction_view import explained_series

from ...conftest import QT_NOISE
from .test_weight_pane import WAIT, make, run_path  # noqa: F401  (run_path is a fixture)

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]


def test_the_questions_are_answered_by_the_runs_analysis(run_path):  # noqa: F811
    from engine.analysis import door
    from engine.analysis import questions as q

    a = RunAnalysis(run_path)
    pair = door.answer(q.Interaction(str(run_path), "blocks.1.W_K", "blocks.0.W_Q", 4))
    np.testing.assert_array_equal(pair.predicted, a.interaction("blocks.1.W_K", "blocks.0.W_Q", 4).predicted)
    routes = door.answer(q.InteractionRoutes(str(run_path), "blocks.1.W_K", "blocks.0.W_Q", 4))
    np.testing.assert_allclose(sum(routes.moves.values()), pair.predicted, rtol=0,
                               atol=1e-10 * np.abs(pair.predicted).max())
    assert door.answer(q.InteractionMap(str(run_path), 4)).step == 4
    assert q.InteractionMap(str(run_path), 4) == q.InteractionMap(str(run_path), 4)  # a question is its own key


def test_tab_shows_the_pair_the_map_and_the_explained_parts(qtbot, run_path):  # noqa: F811
    """Then, at the first saved step, that no update reaches it."""
    _, pane = make(qtbot, run_path, "blocks.1.W_Q")
    view = pane.interaction_view
    pane.tabs.setCurrentWidget(view)
    assert pane.tabs.tabText(pane.tabs.currentIndex()) == "Interaction"
    pane.timeline.set_step(4)
    view.set_other("blocks.0.W_K")
    want = RunAnalysis(run_path)
    pair = want.interaction("blocks.1.W_Q", "blocks.0.W_K", 4)
    qtbot.waitUntil(lambda: "steps 3 → 4" in view.message.text() and "blocks.0.W_K" in view.message.text(),
                    timeout=WAIT)
    np.testing.assert_allclose(view.predicted.matrix(), pair.predicted, rtol=1e-5, atol=1e-12)
    np.testing.assert_allclose(view.real.matrix(), pair.real, rtol=1e-5, atol=1e-12)
    routes = want.interaction_routes("blocks.1.W_Q", "blocks.0.W_K", 4)
    qtbot.waitUntil(lambda: routes.words() in view.routes.text(), timeout=WAIT)  # the pair by B's route classes
    qtbot.waitUntil(lambda: view.map.title().startswith("pair shares · steps 3 → 4"), timeout=WAIT)
    m = want.interaction_map(4)
    np.testing.assert_allclose(view.map.matrix(), m.shares, rtol=1e-5, atol=1e-12)
    assert view.map.labels()[0] == m.names
    # the loss change is a wrapped line under the map, not the end of a title cut at the pane's edge
    assert view.map.title() == "pair shares · steps 3 → 4" and view.map_change.wordWrap()
    assert f"E(4) − E(3) = {m.change:.3g}" in view.map_change.text()
    assert f"predict {m.predicted_change:.3g}" in view.map_change.text()
    qtbot.waitUntil(lambda: len(view.view.maps) == len(want.saved_steps()) - 1, timeout=WAIT)  # every later map
    steps, parts = explained_series(view.view.maps, "blocks.1.W_Q")
    assert list(steps) == want.saved_steps()[1:] and len(parts) == 6 and "others" in parts
    x, _ = view.chart.curves[next(iter(parts))].getData()
    np.testing.assert_array_equal(x, steps)

    view.kind_box.setCurrentIndex(1)
    np.testing.assert_allclose(np.nan_to_num(view.map.matrix()), np.nan_to_num(m.ratios), rtol=1e-5)
    i, j = m.names.index("blocks.1.W_K"), m.names.index("blocks.0.W_V")
    view.map.sig_cell_clicked.emit(i, j)  # as a click on that cell
    qtbot.waitUntil(lambda: pane.session.workspace.selection.weight == "blocks.1.W_K", timeout=WAIT)
    assert view.other_box.currentText() == "blocks.0.W_V"

    # the first saved step says no update reaches it (here, not in a test of its own: a pane built again, ~0.7 s)
    assert "first saved step" not in view.message.text()
    pane.timeline.set_step(0)
    qtbot.waitUntil(lambda: "first saved step" in view.message.text(), timeout=WAIT)


@pytest.fixture(scope="module")
def biased_run(tmp_path_factory):
    """tiny_run's model with attention biases: b_K's coefficient is identically zero."""
    from engine.configs.config import DataConfig, ExperimentConfig, ModelConfig, TrainConfig
    from engine.text.corpus import shakespeare_text
    from engine.training.trainer import Trainer

    cfg = ExperimentConfig(
        name="biased", model=ModelConfig(n_layer=2, n_head=2, d_model=16, d_ff=32, n_ctx=16, attn_bias=True),
        train=TrainConfig(steps=4, batch_size=4, warmup_steps=1, eval_every=4, eval_batches=1, checkpoint_every=4,
                          snapshot_every=2, sample_tokens=8, torch_threads=1, device="cpu"),
        data=DataConfig(corpus="test text"))
    path = tmp_path_factory.mktemp("biased") / "run"
    list(Trainer(cfg, path, text=shakespeare_text()[:20_000]).steps())
    return path


def test_a_coefficient_that_is_identically_zero_is_shown_as_round_off_not_as_ratios(qtbot, biased_run):
    # issue 43: b_K's moves are of size 1e-21; the tab gave them a cosine, class shares and explained parts
    _, pane = make(qtbot, biased_run, "blocks.1.b_K")
    view = pane.interaction_view
    pane.tabs.setCurrentWidget(view)
    pane.timeline.set_step(4)
    view.set_other("blocks.0.W_Q")
    qtbot.waitUntil(lambda: "steps 2 → 4" in view.message.text() and "blocks.0.W_Q" in view.message.text(),
                    timeout=WAIT)
    assert "round-off" in view.message.text() and "degenerate" in view.message.text()
    assert "cos" not in view.message.text() + view.predicted.title()
    for m in (view.predicted, view.exact, view.real):
        assert "round-off (largest" in m.title() and np.isnan(m.matrix()).all()
    qtbot.waitUntil(lambda: "round-off" in view.routes.text(), timeout=WAIT)
    assert "%" not in view.routes.text()
    qtbot.waitUntil(lambda: len(view.view.maps) == 2, timeout=WAIT)
    assert "degenerate" in view.chart.plot.titleLabel.text and "2 of 2 steps" in view.chart.plot.titleLabel.text
    view.kind_box.setCurrentIndex(1)  # the ratios' map: B's row has none
    row = view.view.maps[4].names.index("blocks.1.b_K")
    assert np.isnan(view.map.matrix()[row]).all()
