"""The Heatmaps pane: what it shows equals the model's attention, masks and encodings, live and browsed."""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np
import pytest
import torch
from PySide6.QtCore import QPointF, Qt

from engine.model import probes
from engine.configs.config import ExperimentConfig, ModelConfig
from engine.text.tokenizer import CharTokenizer
from engine.model.gpt import GPT
from engine.workspace import OpenRun
from gui.panes.heatmaps import pane as heatmaps
from gui.panes.heatmaps import HeatmapsPane
from gui.session import Session
from gui.widgets.heatmap_grid import GAP
from tests.child_work import sendable

from ...conftest import plots_built

TEXT = "First Citizen:\nBefore we proceed any further, hear me speak.\nAll:\nSpeak, speak."
PROMPT = "Before we proceed any further"


@pytest.fixture
def tok():
    return CharTokenizer.fit(TEXT)


def make(qtbot, tok, **model):
    m = dict(n_layer=2, n_head=3, d_model=24, d_ff=32, n_ctx=32, vocab_size=tok.vocab_size)
    m.update(model)
    session = Session(ExperimentConfig(model=ModelConfig(**m)))
    session.replace_run(OpenRun(session.config, tok))  # a new run training, before it has its folder
    pane = HeatmapsPane(session)
    pane.prompt.setText(PROMPT)
    pane.prompt.editingFinished.emit()
    qtbot.addWidget(pane)
    pane.resize(1200, 800)
    pane.show()
    qtbot.waitExposed(pane)
    torch.manual_seed(0)
    return session, pane, GPT(session.config.model).eval()


WAIT = 60_000  # the analysis process's first start imports torch


def settled(qtbot, pane, act=lambda: None):
    """`act()`, then wait until the pane's view holds the answer to what its tab needs now (or why not)."""
    act()
    ws = pane.session.workspace

    def done() -> bool:
        question = pane.view.question(ws)
        shown = pane.view.shown(ws)
        return pane.session.asker.idle and (question is None or question in pane.view.failures
                                            or (shown is not None and shown[0] == question))

    qtbot.waitUntil(done, timeout=WAIT)


def publish(qtbot, session, pane, model, step=5):
    settled(qtbot, pane, lambda: session.publish_weights(step, {k: v.clone() for k, v in model.state_dict().items()}))


def asked_steps(pane) -> list:
    """The steps of the published copies the pane handed its view, in order."""
    steps = []
    pane.view.changed.connect(lambda name: steps.append(pane.view.live.step) if name == "live" else None)
    return steps


def explicit(model, tok):
    ids = torch.tensor([tok.encode(PROMPT)])
    return [(t.scores[0].numpy(), t.weights[0].numpy()) for t in model.attention_trace(ids)]


def test_displayed_attention_equals_the_models_explicit_attention(qtbot, tok):
    """What the attention tab shows of one published model, then choosing a head (by the spin boxes, the summary
    table and a click on the mosaic) on the same pane. (One test: four built the same pane and model, ~1 core-s.)"""
    session, pane, model = make(qtbot, tok)
    publish(qtbot, session, pane, model)
    trace = explicit(model, tok)
    T = len(PROMPT)
    causal = np.tril(np.ones((T, T), bool))
    image = pane.attention.grid.image_item.image  # the mosaic on screen
    for layer, (scores, weights) in enumerate(trace):
        for head in range(3):
            r0, c0 = layer * (T + GAP), head * (T + GAP)
            tile = image[r0:r0 + T, c0:c0 + T]
            np.testing.assert_array_equal(np.isnan(tile), ~causal)
            np.testing.assert_allclose(tile[causal], weights[head][causal], rtol=1e-5, atol=1e-7)
    steps = pane.attention.steps
    np.testing.assert_allclose(steps[0].image_item.image, trace[0][0][0], rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(np.isfinite(steps[1].image_item.image), causal)
    after = steps[2].image_item.image
    assert np.isnan(after[~causal]).all() and not np.isinf(after).any()
    np.testing.assert_allclose(np.nan_to_num(steps[3].image_item.image), trace[0][1][0], rtol=1e-5, atol=1e-7)
    assert steps[3].labels()[0][:7] == ["B", "e", "f", "o", "r", "e", "␣"]
    assert pane.attention.grid.describe(0, 1)[:2] == ("layer 0 · head 0 · query 0 B", "key 1 e")

    # choosing a head reslices without recomputing
    needs = pane.view.needs(session.workspace)
    pane.layer.setValue(1)
    pane.head.setValue(2)
    np.testing.assert_allclose(np.nan_to_num(pane.attention.steps[3].matrix()), trace[1][1][2],
                               rtol=1e-5, atol=1e-7)
    assert "layer 1 · head 2" in pane.attention.summary.text()
    assert needs == [] == pane.view.needs(session.workspace)  # nothing more to ask

    # the summary table gives entropy and distance per head
    w = np.stack([np.where(np.tril(np.ones(w.shape[-2:], bool)), w, np.nan) for _, w in trace])
    entropy, distance = probes.head_summaries(w)
    table = pane.attention.table
    assert (table.rowCount(), table.columnCount()) == (6, 2)
    assert table.verticalHeaderItem(5).text() == "L1 H2"
    assert table.item(5, 0).text() == f"{entropy[1, 2]:.2f} nats"
    assert table.item(5, 1).text() == f"{distance[1, 2]:.1f} tokens"
    table.cellClicked.emit(4, 1)
    assert (pane.layer.value(), pane.head.value()) == (1, 1)
    assert entropy[0, 0] < math.log(len(PROMPT))

    # clicking a tile chooses its layer and head (from layer 1 head 1: both change)
    grid = pane.attention.grid
    scene = grid.plot_item.vb.mapViewToScene(QPointF(2 * (T + GAP) + T / 2, 0 * (T + GAP) + T / 2))
    qtbot.mouseClick(grid.view.viewport(), Qt.MouseButton.LeftButton, pos=grid.view.mapFromScene(scene))
    assert (pane.layer.value(), pane.head.value()) == (0, 2)
    assert (session.workspace.selection.layer, session.workspace.selection.head) == (0, 2)  # the one selection


def test_masks_tab_shows_each_mask_and_its_effect_with_the_same_weights(qtbot, tok):
    session, pane, model = make(qtbot, tok)
    publish(qtbot, session, pane, model)
    settled(qtbot, pane, lambda: pane.tabs.setCurrentIndex(1))
    T, view = len(PROMPT), pane.masks
    in_force, causal, banded, none = (w.image_item.image for w in view.masks)
    np.testing.assert_array_equal(np.isfinite(in_force), np.tril(np.ones((T, T), bool)))
    assert (np.isfinite(banded).sum(axis=1)[4:] == 5).all()  # β = 4: itself and 4 before
    assert np.isfinite(none).all()
    np.testing.assert_allclose(np.nan_to_num(view.attention[0].image_item.image), explicit(model, tok)[0][1][0],
                               rtol=1e-5, atol=1e-7)
    settled(qtbot, pane, lambda: view.band.setValue(2))
    assert (np.isfinite(view.masks[2].image_item.image).sum(axis=1)[2:] == 3).all()
    assert view.masks[2].title() == "mask: banded, β = 2"


def test_positional_tab_shows_sinusoidal_formula_and_its_shift_map(qtbot, tok):
    session, pane, model = make(qtbot, tok)
    publish(qtbot, session, pane, model)
    settled(qtbot, pane, lambda: pane.tabs.setCurrentIndex(2))
    P = pane.positional.matrix.matrix()
    d = 24
    for i, j in [(0, 0), (3, 1), (17, 10), (31, 23)]:
        want = math.sin(i / 10000 ** (j / d)) if j % 2 == 0 else math.cos(i / 10000 ** ((j - 1) / d))
        assert P[i, j] == pytest.approx(want, abs=1e-6)
    np.testing.assert_allclose(pane.positional.similarity.matrix(), P @ P.T, rtol=1e-4, atol=1e-4)
    settled(qtbot, pane, lambda: pane.positional.shift.setValue(5))
    assert "k = 5" in pane.positional.shift_map.title() and pane.positional.shift_map.isVisible()
    assert float(pane.positional.shift_note.text().rsplit(" ", 1)[1]) < 1e-5
    pane.positional.dimension.setValue(3)
    np.testing.assert_allclose(pane.positional.curve.getData()[1], P[:, 3])


def test_learned_encoding_follows_training(qtbot, tok):
    session, pane, model = make(qtbot, tok, pos_encoding="learned")
    publish(qtbot, session, pane, model)
    settled(qtbot, pane, lambda: pane.tabs.setCurrentIndex(2))
    np.testing.assert_allclose(pane.positional.matrix.matrix(), model.W_P.detach().numpy(), rtol=1e-6)
    with torch.no_grad():
        model.W_P.mul_(-3.0)
    publish(qtbot, session, pane, model, step=6)
    np.testing.assert_allclose(pane.positional.matrix.matrix(), model.W_P.detach().numpy(), rtol=1e-6)
    assert "learned" in pane.positional.shift_note.text()
    assert not pane.positional.shift_map.isVisible() and not pane.positional.shift.isEnabled()


class Clock:
    """time.monotonic for the pane: advances `tick` seconds per call."""

    def __init__(self, tick: float):
        self.now, self.tick = time.monotonic() + 1000.0, tick  # later than any real reading so far

    def __call__(self) -> float:
        self.now += self.tick
        return self.now


def test_pane_asks_for_weights_every_n_steps_only_while_visible(qtbot, tok, monkeypatch):
    monkeypatch.setattr(heatmaps.time, "monotonic", Clock(1.0))
    session, pane, model = make(qtbot, tok)
    assert session.weights_every == 10
    pane.refresh_every.setValue(4)
    assert session.weights_every == 4
    session.set_training_state("running")
    asked = asked_steps(pane)
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    for step in range(1, 14):
        session.publish_weights(step, weights)
    assert asked == [1, 5, 9, 13]
    pane.hide()
    assert session.weights_every == 0
    session.publish_weights(17, weights)
    assert asked == [1, 5, 9, 13]


def test_refreshes_are_capped_however_fast_training_steps(qtbot, tok, monkeypatch):
    monkeypatch.setattr(heatmaps.time, "monotonic", Clock(0.01))  # 100 steps a second
    session, pane, model = make(qtbot, tok)
    pane.refresh_every.setValue(1)
    session.set_training_state("running")
    asked = asked_steps(pane)
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    for step in range(1, 101):  # one second of training
        session.publish_weights(step, weights)
    assert len(asked) == heatmaps.MAX_REFRESH_HZ and asked[0] == 1
    step = 101
    session.publish_weights(step, weights)
    if asked[-1] == step:  # that one fell due; the next comes too soon after it
        step += 1
        session.publish_weights(step, weights)
    assert asked[-1] < step  # too soon after the last refresh: held back...
    qtbot.waitUntil(lambda: asked[-1] == step)  # ...and shown when its time comes
    session.publish_weights(step + 1, weights)
    session.set_training_state("paused")  # coming to rest always shows the weights it rests on
    assert asked[-1] == step + 1


def test_while_training_runs_the_details_follow_the_grid_more_slowly(qtbot, tok, monkeypatch):
    session, pane, model = make(qtbot, tok)
    publish(qtbot, session, pane, model)
    question, result = pane.view.results["attention"]
    monkeypatch.setattr(heatmaps.time, "monotonic", Clock(0.05))  # a result every 50 ms
    session.set_training_state("running")
    details = []
    monkeypatch.setattr(pane.attention, "_render_head", lambda: details.append(pane.attention.result.step))
    for step in range(6, 26):  # one second
        pane.view.take(question, dataclasses.replace(result, step=step))
    assert "step 25" in pane.attention.grid.title()
    assert "step 25" in pane.attention.summary.text()  # the summary follows the grid, not the details
    assert len(details) == heatmaps.DETAIL_HZ and details[0] == 6
    session.set_training_state("paused")
    pane.view.take(question, dataclasses.replace(result, step=26))
    assert details[-1] == 26


def test_nothing_to_show_says_how_to_get_something(qtbot, tok):
    session, pane, model = make(qtbot, tok)
    assert not pane.tabs.isVisible() and "Train" in pane.status.text()
    publish(qtbot, session, pane, model)
    assert pane.tabs.isVisible() and not pane.status.isVisible()


def test_the_tabs_hide_before_the_status_line_shows_so_no_view_in_them_is_resized(qtbot, tok):
    """Another run opened: the tabs hide and the status line says why. Shown first, the line moved
    and resized the tabs and every view in them (a GPT-2-shaped run's 12 × 12 grid, table and four maps) just
    before they hid, in the turn that replaces the run."""
    from PySide6.QtCore import QEvent, QObject

    session, pane, model = make(qtbot, tok)
    publish(qtbot, session, pane, model)

    class Geometry(QObject):
        changes: list = []

        def eventFilter(self, watched, event):
            if event.type() in (QEvent.Type.Resize, QEvent.Type.Move):
                self.changes.append(event.type())
            return False

    watch = Geometry()
    pane.tabs.installEventFilter(watch)
    session.replace_run(OpenRun(session.config, tok))
    assert not pane.tabs.isVisible() and pane.status.isVisible()
    assert watch.changes == []


def test_a_prompt_outside_the_vocabulary_is_explained(qtbot, tok):
    session, pane, model = make(qtbot, tok)
    publish(qtbot, session, pane, model)
    pane.prompt.setText("Zebra?")
    settled(qtbot, pane, pane.prompt.editingFinished.emit)
    assert "not in the vocabulary" in pane.status.text() and pane.status.isVisible()


def browsing(qtbot, tmp_path):
    """A pane shown beside a tiny run just opened (saved steps 0, 2, 4), its newest step on screen."""
    from tests.engine.cli.test_export_cli import tiny_run

    run = tiny_run(tmp_path / "run")
    session = Session(run.config)
    pane = HeatmapsPane(session)
    qtbot.addWidget(pane)
    pane.resize(1000, 700)
    pane.show()
    settled(qtbot, pane, lambda: session.set_run(run))
    return run, session, pane


def test_browsing_a_saved_step_of_a_run(qtbot, tmp_path):
    run, session, pane = browsing(qtbot, tmp_path)
    assert pane.timeline.steps == [0, 2, 4] and pane.timeline.following
    assert pane.prompt.text() == run.probe().prompt
    settled(qtbot, pane, lambda: pane.timeline.slider.setValue(1))
    assert session.browse_step == 2 == session.workspace.selection.step
    ids = probes.prompt_ids(run.tokenizer, run.probe().prompt, run.config.model.n_ctx)
    want = probes.attention_maps(run.build_model(2), ids).weights
    np.testing.assert_allclose(pane.attention.grid.stack(), want, rtol=1e-5, atol=1e-7)
    assert "step 2" in pane.attention.grid.title()
    filters, name, write = pane.export_job()
    assert ".npy" in filters and name == "attention.png" and sendable(write)
    np.testing.assert_allclose(np.load(write(tmp_path / "grid.npy")), want, rtol=1e-5, atol=1e-7)


def test_weights_that_do_not_fit_the_config_are_explained(qtbot, tok):
    session, pane, _ = make(qtbot, tok)
    other = GPT(dataclasses.replace(session.config.model, d_model=12))
    settled(qtbot, pane, lambda: session.publish_weights(3, {k: v.clone() for k, v in other.state_dict().items()}))
    assert "do not fit the model's config" in pane.status.text()


def test_the_head_diff_is_the_difference_of_the_two_steps_attention(qtbot, tmp_path):
    from engine.analysis.run_analysis import RunAnalysis

    run, session, pane = browsing(qtbot, tmp_path)
    assert [pane.diff.other.itemData(i) for i in range(pane.diff.other.count())] == [0, 2, 4]
    settled(qtbot, pane, lambda: pane.tabs.setCurrentIndex(heatmaps.TABS.index("diff")))  # newest (4) − step 0
    settled(qtbot, pane, lambda: pane.diff.other.setCurrentIndex(1))  # minus step 2
    session.workspace.select(layer=1, head=1)
    prompt = run.probe().prompt
    a = RunAnalysis(run.path)
    want = a.attention(4, prompt).maps.weights[1, 1] - a.attention(2, prompt).maps.weights[1, 1]
    np.testing.assert_array_equal(pane.diff.matrix(), want)
    np.testing.assert_allclose(pane.diff.map.matrix(), want.astype(np.float32), equal_nan=True)
    assert np.nanmax(np.abs(want)) > 0 and "step 4 − step 2" in pane.diff.map.title()
    assert "step 4 − step 2" in pane.export_caption()
    settled(qtbot, pane, lambda: session.set_browse_step(0))  # the shared timeline moves: the diff follows it
    want = a.attention(0, prompt).maps.weights[1, 1] - a.attention(2, prompt).maps.weights[1, 1]
    np.testing.assert_array_equal(pane.diff.matrix(), want)


def test_one_head_large_fits_a_small_window_without_slivers_or_cut_titles(qtbot, tok):
    """Issue 16 item 10, as the dock holds the pane at 1264×650 (699×567 around it): the pane is given the
    dock's height (a word-wrapped label made the scroll area stretch it to its preferred 1198 px, and the
    four small panels scrolled off), the four panels keep a usable view, and no title is cut, here or in
    the positional view."""
    from gui import screen_fit

    session, pane, model = make(qtbot, tok)
    area = screen_fit.scrolling(pane)
    try:
        check_small_window(qtbot, session, pane, model, area)
    finally:
        area.takeWidget()  # the pane is qtbot's to close
        area.deleteLater()


def check_small_window(qtbot, session, pane, model, area):
    area.resize(699, 567)
    area.show()
    qtbot.waitExposed(area)
    publish(qtbot, session, pane, model)
    pane.attention.mode.button(1).setChecked(True)
    qtbot.waitUntil(lambda: pane.attention.single.title().startswith("attention weights · layer 0"), timeout=20000)
    plots_built(qtbot)
    assert pane.height() <= max(area.height(), pane.minimumSizeHint().height())
    for panel in pane.attention.steps:
        assert panel.isVisible() and panel.mapTo(pane, panel.rect().bottomRight()).y() <= pane.height()
        assert panel.view.width() >= 80 and panel.view.height() >= 70, panel.title()
        assert panel._title_label.shown_text() == panel.title()
    pane.tabs.setCurrentIndex(2)
    views = pane.positional
    qtbot.waitUntil(lambda: views.matrix.title().startswith("encoding P"), timeout=20000)
    plots_built(qtbot)
    for heatmap in (views.matrix, views.similarity, views.shift_map):
        assert heatmap._title_label.shown_text() == heatmap.title()


def test_a_long_update_title_is_shown_whole_in_a_narrow_heatmap(qtbot):
    from gui.widgets.heatmap import HeatmapWidget

    heatmap = HeatmapWidget(title="ΔW")
    qtbot.addWidget(heatmap)
    heatmap.set_matrix(np.eye(4) - 0.5, kind="signed", title="ΔW = W(245) − W(240)")
    heatmap.resize(heatmap.minimumSizeHint().width() + 20, 200)
    heatmap.show()
    qtbot.waitExposed(heatmap)
    qtbot.waitUntil(lambda: heatmap._title_label.width() > 0)  # laid out
    plots_built(qtbot)
    assert heatmap._title_label.shown_text() == "ΔW = W(245) − W(240)"
    assert heatmap._title_label.toolTip() == "ΔW = W(245) − W(240)"


def drafting(qtbot, tmp_path):
    """A pane beside the builder's draft, no run open: a valid draft on a corpus of its own."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT * 20, encoding="utf-8")
    cfg = ExperimentConfig(name="draft", model=ModelConfig(n_layer=2, n_head=2, d_model=16, d_ff=32, n_ctx=32),
                           data=dataclasses.replace(ExperimentConfig().data, corpus=str(corpus)))
    session = Session(cfg)
    pane = HeatmapsPane(session)
    qtbot.addWidget(pane)
    pane.resize(1000, 700)
    settled(qtbot, pane, pane.show)
    return session, pane


def test_before_any_run_the_pane_shows_the_draft_train_would_start_from(qtbot, tmp_path):
    from engine.analysis.draft import build_draft

    session, pane = drafting(qtbot, tmp_path)
    assert pane.tabs.isVisible() and "at initialisation" in pane.status.text()
    model, tokenizer = build_draft(session.config)
    ids = probes.prompt_ids(tokenizer, heatmaps.DEFAULT_PROMPT, 32)
    np.testing.assert_allclose(pane.attention.grid.stack(), probes.attention_maps(model, ids).weights,
                               rtol=1e-5, atol=1e-7)
    assert "draft draft" in pane.export_caption() and "at initialisation" in pane.export_caption()

    shown = pane.view.shown(session.workspace)
    session.set_config(session.config.replace(train=dataclasses.replace(session.config.train, lr=1e-2)))
    assert pane.view.shown(session.workspace) is shown and pane.view.needs(session.workspace) == []  # same weights

    deeper = session.config.replace(model=dataclasses.replace(session.config.model, n_layer=3))
    settled(qtbot, pane, lambda: session.set_config(deeper))
    assert pane.attention.grid.stack().shape[0] == 3

    session.set_config_problems(["data.corpus: corpus file not found"])
    assert not pane.tabs.isVisible() and "problems" in pane.status.text()


def test_an_answer_about_an_edited_draft_is_not_shown(qtbot, tmp_path):
    session, pane = drafting(qtbot, tmp_path)
    old_question, old = pane.view.results["attention"]
    session.set_config(session.config.replace(model=dataclasses.replace(session.config.model, n_layer=1)))
    pane.view.take(old_question, old)  # the two-layer draft's answer, arriving late
    assert pane.view.shown(session.workspace) is None and not pane.tabs.isVisible()


def test_opening_a_run_replaces_the_draft(qtbot, tmp_path):
    from tests.engine.cli.test_export_cli import tiny_run

    session, pane = drafting(qtbot, tmp_path)
    run = tiny_run(tmp_path / "run")
    settled(qtbot, pane, lambda: session.set_run(run))
    assert "at initialisation" not in pane.status.text() and "step 4" in pane.attention.grid.title()


def test_attention_as_lines_draws_the_chosen_layers_heads_and_follows_the_hovered_token(qtbot, tok, tmp_path):
    """Issue 40, BertViz's head view: the chosen layer's heads as lines between tokens, one colour per head;
    hovering a query keeps only its lines and names each head's strongest key; exported like the heatmaps."""
    import pickle

    from engine.figures.attention_lines import line_segments

    session, pane, model = make(qtbot, tok)
    publish(qtbot, session, pane, model)
    pane.attention.mode.button(2).click()
    lines = pane.attention.lines
    assert pane.attention.stack.currentWidget() is lines
    pane.layer.setValue(1)
    weights = explicit(model, tok)[1][1]  # layer 1: (H, T, T)
    np.testing.assert_allclose(np.nan_to_num(lines.canvas.weights), weights, rtol=1e-5, atol=1e-7)
    assert lines.canvas.tokens[:3] == ["B", "e", "f"] and lines.heads() == [0, 1, 2]
    assert "layer 1" in lines.title_label.text() and "step 5" in lines.title_label.text()
    lines.head_buttons[1].click()  # head 1 hidden
    assert lines.canvas.heads == [0, 2] and {s.head for s in lines.canvas.segments()} <= {0, 2}

    canvas = lines.canvas
    left, _ = canvas.columns()
    qtbot.mouseMove(canvas, QPointF(left / 2, canvas.row_y(5)).toPoint())
    qtbot.waitUntil(lambda: canvas.hover == (5, None))
    assert {(s.query) for s in canvas.segments()} == {5}
    assert canvas.segments() == line_segments(canvas.weights, [0, 2], query=5)
    strongest = int(np.argmax(weights[0, 5]))
    assert f"H0 → {canvas.tokens[strongest]!r}" in lines.readout.text()

    job = pane.export_job()  # File → Export… exports what is shown: these lines
    assert job is not None and sendable(job[2])
    written = pickle.loads(pickle.dumps(job[2]))(tmp_path / "lines.csv")  # picklable for the export process
    assert written.read_text(encoding="utf-8").startswith("head,query,key,query_token,key_token,value")


def test_the_prompt_typed_before_train_stays_and_comes_back_with_the_run(qtbot, make_window):
    """Issue 40: the heatmap prompt changed silently when Train was pressed (to the new run's probe prompt), and
    the run opened again later showed that one, not what the user had typed."""
    w = make_window()
    heat = w.panes["pane_heatmaps"]
    heat.prompt.setText("My own words, here.")
    heat.prompt.editingFinished.emit()
    w.session.request_training("train")
    qtbot.waitUntil(lambda: w.session.run is not None, timeout=30_000)
    qtbot.waitUntil(lambda: w.session.step >= 2, timeout=30_000)
    assert heat.prompt.text() == heat.view.prompt == "My own words, here."
    path = w.session.run.path
    assert w.new_run()  # training stops (asked, and answered yes)
    heat.prompt.setText("Something else")
    heat.prompt.editingFinished.emit()
    assert w.open_run(path)
    assert heat.prompt.text() == "My own words, here."


def test_a_gpt2_sized_grid_leaves_each_one_head_view_a_readable_matrix(qtbot):
    """Issue 40, seen under Xvfb at 1600×1000: a GPT-2 prompt's square 12 × 12 grid took two thirds of the
    tab and the four one-head views below, in one row of ~165 px tiles with ~160 px of axes and colour bar,
    drew their matrix ~8 px wide. The views are laid out by the room their matrices get, and the grid leaves
    them that room."""
    from engine.analysis.attention import AttentionResult
    from gui.panes.heatmaps.attention import AttentionView
    from gui.widgets.tiles import MIN_SIDE

    L, H, T = 12, 12, 11
    tokens = ("Now", ",", "␣fair", "␣Hipp", "oly", "ta", ",", "␣our", "␣nupt", "ial", "␣hour")
    mask = np.tril(np.ones((T, T), bool))
    weights = np.where(mask, 1.0 / mask.sum(1, keepdims=True), np.nan) * np.ones((L, H, 1, 1))
    maps = probes.AttentionMaps(tokens, np.arange(T), mask, np.zeros((L, H, T, T)), weights, weights)
    view = AttentionView()
    qtbot.addWidget(view)
    view.resize(660, 700)  # the tab's size at 1600×1000, a little taller: room for a readable matrix each
    view.show()
    qtbot.waitExposed(view)
    view.show_result(AttentionResult(0, maps, np.ones((L, H)), np.ones((L, H))))
    tiles = view.steps
    qtbot.waitUntil(lambda: all(t._plot is not None and t._plot.vb.width() > 0 for t in tiles), timeout=30000)
    view._shape = None  # fitted again now the tiles are laid out and measured, as a new prompt would be
    view.show_result(AttentionResult(0, maps, np.ones((L, H)), np.ones((L, H))))
    qtbot.waitUntil(lambda: min(min(t._plot.vb.width(), t._plot.vb.height()) for t in tiles) >= MIN_SIDE - 3,
                    timeout=30000)  # within rounding: was ~30 px wide here


def test_a_smaller_model_opened_shows_the_head_the_selection_was_fitted_to(qtbot, tok):
    """Another run opened fits the selection's layer and head to its model within the one run-replaced event (no
    selection event): the tabs draw the head the workspace holds. They kept a copy, set by selection events
    only, which stayed on a head the new model does not have, so the chosen head's views were not redrawn."""
    session, pane, model = make(qtbot, tok)
    publish(qtbot, session, pane, model)
    session.workspace.select(layer=1, head=2)
    small = dataclasses.replace(session.config, model=dataclasses.replace(session.config.model, n_layer=1, n_head=2))
    session.replace_run(OpenRun(small, tok), config=small)
    assert (session.workspace.selection.layer, session.workspace.selection.head) == (0, 1)
    torch.manual_seed(1)
    other = GPT(small.model).eval()
    publish(qtbot, session, pane, other)
    np.testing.assert_allclose(np.nan_to_num(pane.attention.steps[3].matrix()), explicit(other, tok)[0][1][1],
                               rtol=1e-5, atol=1e-7)
    assert "layer 0 · head 1" in pane.attention.summary.text()
    assert (pane.masks.layer, pane.masks.head) == (pane.diff.layer, pane.diff.head) == (0, 1)
    assert (pane.layer.value(), pane.head.value()) == (0, 1)
