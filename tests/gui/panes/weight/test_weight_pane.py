"""The Weight pane (issue 7): it shows the engine's numbers at the step the timeline names, opens a weight
clicked in another pane, exports valid files with the same numbers, and never blocks the GUI thread."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from PIL import Image
from PySide6.QtCore import Qt

from engine.coefficients import as_matrix
from engine.coefficients.cache import CoefficientStore
from engine.rundir.runs import Run
from engine.views.weight import shown_step
from gui.exports import Exports
from gui.panes.weight import WeightPane
from gui.session import Session
from tests.child_work import sendable

from ....engine.coefficients.test_coefficients import tiny_run
from ...conftest import QT_NOISE, plots_built, tiny_config

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]
WAIT = 30_000


@pytest.fixture(scope="module")
def run_path(tmp_path_factory):
    return tiny_run(tmp_path_factory.mktemp("weight-pane") / "run").path


@pytest.fixture
def reference(run_path):
    """The engine's numbers, computed without the pane and without its cache."""
    return CoefficientStore(Run(run_path), disk=False)


def make(qtbot, run_path, weight="blocks.1.W_Q"):
    session = Session()
    pane = WeightPane(session)
    qtbot.addWidget(pane)
    pane.resize(1400, 900)
    pane.show()
    qtbot.waitExposed(pane)
    session.set_run(Run(run_path))
    qtbot.waitUntil(lambda: pane.view.table is not None, timeout=WAIT)
    session.select_weight(weight)
    wait_shown(qtbot, pane)
    return session, pane


def wait_shown(qtbot, pane):
    """Until the record of the timeline's step is on screen."""
    def shown():
        rec = pane.record()
        return rec is not None and rec.step == pane.timeline.step() and rec.weight == \
            pane.session.workspace.selection.weight and pane.G_map.title().endswith(f"step {rec.step}")
    qtbot.waitUntil(shown, timeout=WAIT)


def wait_warm(qtbot, pane):
    qtbot.waitUntil(lambda: not pane.view.needs(pane.session.workspace) and pane.session.asker.idle, timeout=WAIT)


def test_the_heatmap_shows_G_at_the_step_the_timeline_names(qtbot, run_path, reference):
    _, pane = make(qtbot, run_path)
    steps = reference.steps()
    assert pane.timeline.steps == steps and pane.timeline.step() == steps[-1]  # follows the newest
    pane.timeline.setFocus()
    for k in range(len(steps) - 1, -1, -1):
        if k < len(steps) - 1:
            qtbot.keyClick(pane.timeline, Qt.Key.Key_Left)
        wait_shown(qtbot, pane)
        step = steps[k]
        assert pane.timeline.label.text().startswith(f"step {step} ")
        rec = reference.record("blocks.1.W_Q", step)
        np.testing.assert_allclose(pane.G_map.matrix(), rec.G, rtol=1e-6, atol=0)
        np.testing.assert_array_equal(pane.W_map.matrix(), rec.W)
        assert pane.G_map.title() == f"G · step {step}"
        assert f"{rec.agreement:.1e}" in pane.badge.text()
    assert not pane.timeline.following  # moving back in time stops following


def test_the_update_is_the_difference_of_stored_weights(qtbot, run_path):
    session, pane = make(qtbot, run_path, "blocks.1.W_V")
    pane.weight_box.setCurrentText("blocks.0.W_out")  # the list here selects for every pane
    assert session.selected_weight == "blocks.0.W_out" == session.workspace.selection.weight
    run = Run(run_path)
    pane.timeline.set_step(3)
    wait_shown(qtbot, pane)
    qtbot.waitUntil(lambda: pane.dW_map.title() == "ΔW = W(3) − W(2)", timeout=WAIT)
    want = run.load_weights(3)["blocks.0.W_out"].numpy() - run.load_weights(2)["blocks.0.W_out"].numpy()
    np.testing.assert_array_equal(pane.dW_map.matrix(), want)
    pane.timeline.step_by(10)  # the newest step shows the update that reached it
    wait_shown(qtbot, pane)
    last, before = run.snapshot_steps()[-1], run.snapshot_steps()[-2]
    qtbot.waitUntil(lambda: pane.dW_map.title() == f"ΔW = W({last}) − W({before})", timeout=WAIT)
    pane.timeline.step_by(-10)  # the first step has none
    wait_shown(qtbot, pane)
    assert pane.dW_map.title() == "ΔW: none before the first step" and np.isnan(pane.dW_map.matrix()).all()


def test_choosing_a_class_or_term_shows_its_matrix_and_formula(qtbot, run_path, reference):
    _, pane = make(qtbot, run_path, "blocks.1.W_Q")
    rec = reference.record("blocks.1.W_Q", pane.timeline.step())
    pane.parts.setCurrentItem(pane.parts.items[("class", "L1.mlp")])
    np.testing.assert_allclose(pane.G_map.matrix(), rec.classes["L1.mlp"], rtol=1e-6, atol=0)
    assert pane.G_map.title().startswith("G [L1.mlp]")
    qtbot.waitUntil(lambda: pane.caption.text().startswith("class L1.mlp"), timeout=WAIT)
    assert pane.formula.tex  # typeset by the app's one formula renderer
    qtbot.waitUntil(lambda: pane.formula.rendered, timeout=WAIT)
    term = next(iter(rec.terms))
    pane.parts.setCurrentItem(pane.parts.items[("term", term)])
    np.testing.assert_allclose(pane.G_map.matrix(), rec.terms[term], rtol=1e-6, atol=0)
    qtbot.waitUntil(lambda: pane.caption.text().startswith(f"term {term}"), timeout=WAIT)
    qtbot.waitUntil(lambda: pane.formula.rendered and not pane.formula.pixmap().isNull(), timeout=WAIT)
    wait_warm(qtbot, pane)
    pane.split_box.setCurrentIndex(1)  # the norms chart by term
    curve = pane.norms.curves[term]
    x, y = curve.xData, curve.yData  # as given (getData is log10 on the log axis)
    np.testing.assert_array_equal(x, reference.steps())
    np.testing.assert_allclose(y[-1], np.linalg.norm(rec.terms[term]), rtol=1e-6)


def test_clicking_a_weight_in_the_diagram_opens_it_here(qtbot, make_window):
    """The main window's wiring (the numbers shown for a selection are checked above, on a run)."""
    w = make_window()
    pane = w.panes["pane_weight"]
    diagram = w.panes["pane_architecture"].diagram
    item = diagram.items["blocks.0.W_V"]
    diagram.ensureVisible(item)
    qtbot.mouseClick(diagram.viewport(), Qt.MouseButton.LeftButton,
                     pos=diagram.mapFromScene(item.sceneBoundingRect().center()))
    assert pane.seen()  # its dock was raised: its tab is the one shown
    assert w.session.workspace.selection.weight == "blocks.0.W_V"
    assert pane.status.text().startswith("Train, or open a run")


def test_the_timeline_follows_new_snapshots_of_a_live_run(qtbot, run_path, tmp_path, reference):
    """What training does, without a training thread: a snapshot is written and its step reported."""
    import shutil
    from types import SimpleNamespace

    from engine.rundir.runs import RunWriter

    path = tmp_path / "live"
    shutil.copytree(run_path, path, ignore=shutil.ignore_patterns("cache"))
    session, pane = make(qtbot, path, "blocks.1.W_in")
    assert pane.timeline.step() == 6 and pane.timeline.following
    run = Run(path)
    weights = {k: v + 0.01 for k, v in run.load_weights(6).items()}
    RunWriter(path, run.config).save_snapshot(8, weights)
    session.report_step(SimpleNamespace(step=8, snapshot=True, checkpoint=False, event=None))
    assert pane.timeline.steps[-1] == 8 and pane.timeline.step() == 8
    wait_shown(qtbot, pane)
    np.testing.assert_array_equal(pane.W_map.matrix(), weights["blocks.1.W_in"].numpy())
    qtbot.waitUntil(lambda: pane.dW_map.title() == "ΔW = W(8) − W(6)", timeout=WAIT)  # the update to it too
    np.testing.assert_allclose(pane.dW_map.matrix(), 0.01, rtol=1e-4)


def test_exports_are_valid_files_with_the_same_numbers(qtbot, run_path, reference, tmp_path, children_in_thread):
    """The animation goes through the app's queue and its job (on a thread: children_in_thread; the export
    process is tests/gui/test_exports.py's point, ~3.8 s of CPU here); each other kind's request is checked to be
    sendable to that process and written by what it runs (write_export), here: the process, the same for every
    kind, was started anew for each of them (5 of the test's 10 s on a quiet machine)."""
    from engine.export_process import write_export

    session, pane = make(qtbot, run_path, "blocks.1.W_K")
    asked = []
    session.sig_export_requested.connect(asked.append)
    pane.timeline.set_step(4)
    wait_shown(qtbot, pane)
    ex = pane.exporter
    for kind, name in (("heatmap", "g.npy"), ("heatmap", "g.png"), ("norms", "n.csv"), ("stack", "s.npy")):
        ex.export(kind, tmp_path / name)
        request = asked[-1]
        assert request.path == tmp_path / name and sendable(request.write), name
        assert write_export(str(request.path), request.write, request.options) == [str(tmp_path / name)]
    exports = Exports(session, pane)  # the app's queue, as the window makes it
    progress = []
    exports.sig_progress.connect(lambda _request, *p: progress.append(p))
    with qtbot.waitSignal(exports.sig_finished, timeout=WAIT) as done:
        ex.export("animation", tmp_path / "a.gif")
    assert done.args[1] == [tmp_path / "a.gif"]
    np.testing.assert_allclose(np.load(tmp_path / "g.npy"), reference.record("blocks.1.W_K", 4).G, rtol=1e-6)
    assert (tmp_path / "g.png").read_bytes().startswith(b"\x89PNG")
    rows = list(csv.reader(open(tmp_path / "n.csv", encoding="utf-8")))
    assert [float(r[0]) for r in rows[1:]] == reference.steps()
    stack = np.load(tmp_path / "s.npy")
    np.testing.assert_allclose(stack, reference.stack("blocks.1.W_K"), rtol=1e-6)
    with Image.open(tmp_path / "a.gif") as im:
        assert im.n_frames == len(reference.steps())
    assert progress and progress[-1][0] == progress[-1][1] > 0 and progress[-1][2] == "frames"
    filters, suggested, fn = pane.export_job()
    assert suggested.endswith(".png") and "*.gif" in filters and sendable(fn)
    fn(tmp_path / "file-menu.npy")
    np.testing.assert_allclose(np.load(tmp_path / "file-menu.npy"), reference.record("blocks.1.W_K", 4).G,
                               rtol=1e-6)


def test_scrubbing_back_and_forth_ends_on_the_step_named(qtbot, run_path):
    """Steps asked for while others compute arrive, and the last one asked for is the one shown. (How long
    the GUI thread works while scrubbing is measured in benchmarks/gui_block.py, not asserted here.)"""
    _, pane = make(qtbot, run_path, "blocks.0.W_V")
    steps, direction = pane.timeline.steps, -1
    for _ in range(3 * len(steps)):
        i = steps.index(pane.timeline.step())
        if not 0 <= i + direction < len(steps):
            direction *= -1
        pane.timeline.step_by(direction)
        qtbot.wait(5)
    wait_shown(qtbot, pane)
    assert pane.record().step == pane.timeline.step()


def test_the_pane_keeps_the_matrices_of_the_last_steps_shown_within_its_bound(run_path, reference):
    """The analysis process keeps the cache; GUI-side, every step's summary stays but only the newest
    matrices within the byte bound (the newest always)."""
    from engine.analysis.cache import nbytes
    from engine.views.weight import ShownRecords

    steps = reference.steps()[:3]
    answers = [(reference.record("blocks.1.W_Q", s), reference.update("blocks.1.W_Q", s)) for s in steps]
    shown = ShownRecords(max_bytes=int(1.5 * max(nbytes(a) for a in answers)))
    for s, answer in zip(steps, answers):
        shown.keep("blocks.1.W_Q", s, (answer[0].summary(), None, answer))
    assert [shown.peek("blocks.1.W_Q", s) is not None for s in steps] == [False, False, True]
    assert shown.newest("blocks.1.W_Q") == steps[-1]
    assert sorted(shown.summaries("blocks.1.W_Q")) == steps
    shown.keep("blocks.1.W_Q", steps[0], (answers[0][0].summary(), None, None))  # a chart's answer: no matrices
    assert shown.peek("blocks.1.W_Q", steps[0]) is None and shown.newest("blocks.1.W_Q") == steps[-1]


def test_one_step_is_shared_with_the_heatmaps_pane(qtbot, run_path):
    """Either pane's timeline moves the session's browse step and the other pane follows it; playing with
    loop in the Heatmaps pane wraps to the first step and the Weight pane goes along."""
    from gui.panes.heatmaps import HeatmapsPane

    session, pane = make(qtbot, run_path)
    heat = HeatmapsPane(session)
    qtbot.addWidget(heat)
    heat.show()
    steps = pane.timeline.steps
    assert heat.timeline.steps == steps == Run(run_path).saved_steps() and session.browse_step is None
    pane.timeline.step_by(-1)
    assert session.browse_step == steps[-2] and heat.timeline.step() == steps[-2]
    heat.timeline.step_by(-len(steps))
    assert session.browse_step == steps[0] and pane.timeline.step() == steps[0] == shown_step(session.workspace)
    heat.timeline.step_by(len(steps))  # to the newest: both follow it again
    assert session.browse_step is None and pane.timeline.following and pane.timeline.step() == steps[-1]
    assert session.workspace.selection.step is None and heat.timeline.following
    heat.timeline.loop_box.setChecked(True)
    heat.timeline.play()  # at the end: plays from the first step
    seen = [(session.browse_step, pane.timeline.step(), heat.timeline.step())]
    for _ in range(len(steps) + 1):
        heat.timeline._advance()
        seen.append((session.browse_step, pane.timeline.step(), heat.timeline.step()))
    heat.timeline.pause()
    assert seen == [(s, s, s) for s in steps + steps[:2]]
    assert not pane.timeline.following and not heat.timeline.following
    wait_shown(qtbot, pane)
    assert pane.record().step == steps[1]


def test_a_weight_with_too_many_terms_offers_its_largest_with_shares(qtbot, run_path):
    """W_E has 196 terms, more than are split at every step: the parts list offers the largest at the step
    shown (RunAnalysis.largest_terms through the analysis process), with their shares, and one shows."""
    from engine.analysis.run_analysis import RunAnalysis

    _, pane = make(qtbot, run_path, "W_E")
    group = pane.parts.groups["term"]
    qtbot.waitUntil(lambda: group.text(0).startswith("terms: largest"), timeout=WAIT)
    want = RunAnalysis(run_path).largest_terms(pane.timeline.step(), "W_E")
    assert group.text(0) == f"terms: largest {len(want.terms)} of 196"
    shown = [group.child(i) for i in range(group.childCount())]
    assert [c.toolTip(0) for c in shown] == list(want.terms)  # largest first, no note left
    first = next(iter(want.terms))
    assert shown[0].text(2) == f"{100 * want.share(first):.1f}%"
    pane.parts.setCurrentItem(shown[0])
    np.testing.assert_allclose(pane.G_map.matrix(), want.terms[first], rtol=1e-6, atol=0)
    assert pane.G_map.title().startswith(f"G [{first}]")


def drawn_labels(axis) -> list[str]:
    """The texts pyqtgraph draws on an axis (it leaves out those that would overlap)."""
    from PySide6.QtGui import QImage, QPainter

    image = QImage(200, 400, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [text for _, _, text in specs[2]] if specs else []


def test_short_colour_bars_keep_their_numbers_at_the_last_step(qtbot, run_path):
    """Issue 16 item 5, on a trained run: blocks.0.W_Q, route class L1.mlp and then L1.q, the last step, heatmaps
    ~56 px tall. pyqtgraph's own ticks left the ΔW bar with "0" alone; every bar names both ends and 0. The
    pane's maps keep 150 px now (issue 40), so each is drawn again, with its levels, in a heatmap that short.
    (The two classes on one pane: a parametrized test built it twice.)"""
    from gui.widgets.heatmap import HeatmapWidget

    _, pane = make(qtbot, run_path, "blocks.0.W_Q")
    assert pane.timeline.step() == pane.timeline.steps[-1]
    short = HeatmapWidget(title="short")
    qtbot.addWidget(short)
    short.resize(300, 130)
    short.show()
    qtbot.waitExposed(short)
    for part in ("L1.mlp", "L1.q"):
        pane.parts.setCurrentItem(pane.parts.items[("class", part)])
        qtbot.waitUntil(lambda: pane.G_map.title().startswith(f"G [{part}]"), timeout=WAIT)
        for heatmap in (pane.G_map, pane.W_map, pane.dW_map):
            lo, hi = heatmap.levels
            assert lo < 0 < hi
            short.set_matrix(heatmap.matrix(), kind=heatmap.kind, levels=(lo, hi))
            assert short.colour_bar.axis.height() < 80
            texts = drawn_labels(short.colour_bar.axis)
            assert {f"{lo:.3g}", f"{hi:.3g}", "0"} <= set(texts), (part, heatmap.title(), texts)


def test_the_pane_fits_a_laptops_dock_with_every_title_whole(qtbot, run_path):
    """Issue 16 item 10: at 1264×650 the Weight dock is ~699×567. The geometry tab's five maps asked ~800 px
    and pushed the ΔW map off screen; they scroll in their tab, and G, W and ΔW show whole titles."""
    _, pane = make(qtbot, run_path, "blocks.0.W_Q")
    assert pane.minimumSizeHint().width() <= 699
    pane.resize(699, 567)
    qtbot.waitUntil(lambda: pane.dW_map.title().startswith("ΔW = W("), timeout=WAIT)
    plots_built(qtbot)
    for heatmap in (pane.G_map, pane.W_map, pane.dW_map):
        assert heatmap.mapTo(pane, heatmap.rect().topRight()).x() <= pane.width()
        assert heatmap._title_label.shown_text() == heatmap.title()


def test_an_exported_map_is_named_for_its_weight_and_captioned_with_run_and_step(qtbot, run_path, monkeypatch):
    """Issue 40: the coefficient image's suggested file name ("g-step-4.png") omitted the weight."""
    from gui.widgets import dialogs

    _, pane = make(qtbot, run_path, weight="blocks.1.W_Q")
    wait_shown(qtbot, pane)
    asked = []
    monkeypatch.setattr(dialogs, "ask_export", lambda _parent, _title, _filters, suggested="", start="":
                        asked.append((suggested, str(start))) and None)
    pane.G_map.export_dialog()
    suggested, start = asked[0]
    assert suggested.startswith("blocks.1.W_Q-g-step-") and suggested.endswith(".png")
    assert start == str(run_path)
    caption = pane.G_map.export_caption()
    assert f"run {run_path.name}" in caption and "weight blocks.1.W_Q" in caption and "step " in caption
