"""The Weight pane's Geometry view (docs/geometries.md): it shows the engine's update_geometry for the weight
and step on screen, each direction beside the applied ΔW, their spectra and the route classes' shares."""

from __future__ import annotations

import numpy as np
import pytest

from engine.analysis.update import update_geometry
from engine.rundir.runs import Run
from gui.panes.weight.geometry_view import GeometryView

from ....engine.analysis.test_update_geometry import trained
from ...conftest import QT_NOISE
from .test_weight_pane import WAIT, make

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]


@pytest.fixture(scope="module")
def adamw_run(tmp_path_factory):
    return trained(tmp_path_factory.mktemp("geometry-view") / "run", "adamw")


def test_view_shows_every_direction_its_spectrum_and_the_shares(qtbot, adamw_run):
    view = GeometryView()
    qtbot.addWidget(view)
    r = update_geometry(adamw_run, "blocks.1.W_in", 4)
    view.show_result(r)
    for d in r.directions:
        np.testing.assert_allclose(view.maps[d.geometry].matrix(), d.matrix.astype(np.float32))
        row = f"<td>{d.cos_G:.3f}</td><td>{d.cos_dW:.3f}</td><td>{d.effective_rank:.1f}</td>"
        assert row in view.summary.text()
        x, y = view.curves[d.geometry].getData()
        assert len(x) == len(d.singular_values)
    np.testing.assert_allclose(view.maps["dW"].matrix(), r.dW.astype(np.float32))
    assert view.maps["dW"].title() == "ΔW = W(4) − W(3)"
    assert "<td>1.000</td><td>" in view.summary.text().split("ΔW</td>")[-1]  # ΔW's own row: cos ΔW is 1
    top = max(r.shares, key=r.shares.get)
    assert top in view.shares.text() and f"{sum(r.shares.values()):.3g}" in view.shares.text()
    assert f"{100 * r.shares[top] / sum(r.shares.values()):.1f}%" in view.shares.text()
    assert "step 3" in view.message.text()  # v̂ from the nearest checkpoint


def test_view_at_the_first_step_and_without_a_second_moment(qtbot, tmp_path):
    view = GeometryView()
    qtbot.addWidget(view)
    view.show()
    run = trained(tmp_path / "sgd", "sgd")
    view.show_result(update_geometry(run, "W_E", 0))
    assert not view.maps["adam"].isVisibleTo(view)  # SGD keeps no second moment
    assert view.maps["dW"].title() == "ΔW: none before the first step" and np.isnan(view.maps["dW"].matrix()).all()
    assert "No update reached the first saved step" in view.shares.text()
    assert "sign G" in view.shares.text()  # the geometries' own splits are still shown


def test_weight_pane_geometry_tab_follows_the_timeline(qtbot, adamw_run):
    _, pane = make(qtbot, adamw_run.path, "blocks.0.W_Q")
    assert pane.tabs.tabText(1) == "Geometry"
    pane.tabs.setCurrentIndex(1)
    pane.timeline.set_step(6)
    qtbot.waitUntil(lambda: pane.geometry_view.result is not None and pane.geometry_view.result.step == 6,
                    timeout=WAIT)
    want = update_geometry(Run(adamw_run.path), "blocks.0.W_Q", 6, "float32")
    got = pane.geometry_view.result
    assert (got.weight, got.prev_step) == ("blocks.0.W_Q", 4)
    np.testing.assert_allclose(got.direction("spectral").matrix, want.direction("spectral").matrix, atol=1e-9)
    assert "blocks.0.W_Q at step 6" in pane.geometry_view.message.text()


def test_routes_tab_shows_the_engines_classes_for_the_weight_and_the_whole_model(qtbot, adamw_run):
    """The whole model is asked at once (a large model's interval is one pass over every weight in the analysis
    process, engine/analysis/routes.py), not weight by weight. (One test with the weight's routes: each built the
    same pane and asked the same whole-model question, ~0.9 core-s.)"""
    from engine.analysis import questions as q
    from engine.analysis.routes import APPLIED
    from engine.analysis.run_analysis import RunAnalysis

    session, pane = make(qtbot, adamw_run.path, "blocks.1.W_Q")
    view = pane.routes_view
    pane.tabs.setCurrentWidget(view)
    qtbot.waitUntil(lambda: view.result is not None and view.result.weight == "blocks.1.W_Q", timeout=WAIT)
    analysis = RunAnalysis(adamw_run.path)
    want = analysis.route_shares("blocks.1.W_Q")
    assert list(view.chart.curves) == ["Σ", *want.classes]
    legend = [label.text for _, label in view.chart.legend.items]
    assert legend[1:] == want.classes
    for i, name in enumerate(want.classes):
        x, y = view.chart.curves[name].getData()
        np.testing.assert_array_equal(x, want.steps)
        np.testing.assert_allclose(y, want.shares[APPLIED][:, i], rtol=1e-6)
    assert "probe batch" in view.chart.plot.titleLabel.text
    view.direction_box.setCurrentIndex(view.direction_box.findData("spectral"))
    np.testing.assert_allclose(view.chart.curves["Σ"].getData()[1], want.total("spectral"), rtol=1e-6)

    view.scope_box.setCurrentIndex(1)  # the whole model: a ranking of routes
    assert view.view.needs(session.workspace) == [q.RouteShares(str(adamw_run.path), None)]
    qtbot.waitUntil(lambda: view.result is not None and view.result.weight is None, timeout=WAIT)
    whole = analysis.route_shares(None)
    assert [label.text for _, label in view.chart.legend.items][1:] == whole.classes
    top, value = whole.ranking()[0]
    assert f"1. {top}" in view.ranking.text() and f"{value:.3g}" in view.ranking.text()
    np.testing.assert_allclose(view.result.shares[APPLIED], whole.shares[APPLIED])
    assert view.message.text().startswith("the whole model (every weight summed)")


def cells(view):
    """(row, column) of each map and of the spectra in the view's grid."""
    shown = [m for m in view.maps.values() if not m.isHidden()] + [view.spectrum_cell]
    return [view.grid.getItemPosition(view.grid.indexOf(w))[:2] for w in shown]


def test_the_grid_has_as_few_rows_as_leave_every_title_whole(qtbot, adamw_run):
    view = GeometryView()
    qtbot.addWidget(view)
    view.show_result(update_geometry(adamw_run, "blocks.1.W_in", 4))
    view.resize(1700, 500)
    view.show()
    qtbot.waitExposed(view)
    assert {r for r, _ in cells(view)} == {0}  # a wide dock: the five maps and the spectra in one row
    view.resize(700, 500)
    qtbot.waitUntil(lambda: {c for _, c in cells(view)} == {0, 1, 2})
    assert {r for r, _ in cells(view)} == {0, 1}


def test_at_1280x720_every_title_number_and_map_of_the_geometry_page_is_whole(qtbot, adamw_run):
    """The Weight pane at the size it has in the default layout of a 1280×720 screen (measured under Xvfb):
    the Geometry page shows every title whole, the table's numbers unclipped and each map at a readable
    size, without scrolling. In the lower corner of the pane, as it was, the titles were cut to 150 px."""
    from gui.widgets.elided_label import ElidedLabel

    _, pane = make(qtbot, adamw_run.path, "blocks.0.W_Q")
    pane.resize(755, 597)
    pane.tabs.setCurrentIndex(1)
    view = pane.geometry_view
    qtbot.waitUntil(lambda: view.result is not None, timeout=WAIT)
    qtbot.waitUntil(lambda: view.maps["adam"].isVisible())

    def titles_whole():  # retried until the layout settles (a title moves to its own row after a resize)
        titles = [label for label in view.findChildren(ElidedLabel) if label.isVisible()]
        assert len(titles) == 5
        for label in titles:
            assert label.fontMetrics().horizontalAdvance(label.text()) <= label.contentsRect().width(), label.text()

    qtbot.waitUntil(titles_whole, timeout=5000)
    assert view.summary.sizeHint().width() <= view.summary.width()
    assert view.summary.sizeHint().height() <= view.summary.height()
    area = view.parentWidget().parentWidget()  # the page's scroll area, scrolling only below the view's minimum
    assert view.height() <= area.viewport().height() and view.width() <= area.viewport().width()
    for m in [*(m for m in view.maps.values() if m.isVisible()), view.spectra]:
        box = m.plot_item.vb if m is not view.spectra else view.spectra.getPlotItem().vb
        assert min(box.width(), box.height()) >= 70, m


def test_shares_of_a_sum_near_zero_are_said_to_be_undefined_not_huge_percentages():
    from types import SimpleNamespace

    from gui.panes.weight.geometry_view import shares_table

    result = SimpleNamespace(shares={"direct": 2.2330e-4, "via_K": -2.2321e-4}, prev_step=10, step=20,
                             direction_shares={"euclidean": {"direct": 3.0, "via_K": 1.0}})
    text = shares_table(result)
    assert "%" in text and "75.0%" in text  # the geometry's split still reads in percent
    assert "0.000223" in text and "-0.000223" in text and "24811" not in text
    assert "ΔW: the parts cancel" in text


def test_distributions_tab_shows_w_g_and_the_update_over_every_saved_step(qtbot, adamw_run):
    from engine.analysis.run_analysis import RunAnalysis

    _, pane = make(qtbot, adamw_run.path, "blocks.1.W_Q")
    view = pane.distributions_view
    assert view.result is None  # nothing is asked while the tab is hidden
    pane.tabs.setCurrentWidget(view)
    qtbot.waitUntil(lambda: view.result is not None, timeout=WAIT)
    want = RunAnalysis(adamw_run.path).distributions("blocks.1.W_Q")
    for q, heatmap in view.maps.items():
        shown = heatmap.image_item.image if heatmap.image_item is not None else heatmap._matrix
        np.testing.assert_allclose(shown, want[q].fractions[::-1], rtol=1e-6, equal_nan=True)
        rows, cols = heatmap.labels()
        assert cols == [str(s) for s in adamw_run.saved_steps()] and float(rows[0]) > float(rows[-1])
    assert "blocks.1.W_Q" in view.message.text()
