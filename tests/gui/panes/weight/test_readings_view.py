"""The Weight pane's Tokens and Curvature tabs (issue 39): they draw the engine's readings of the weight and
step on screen (the bars' lengths, the positions' imprints, the curves' points are the engine's numbers), ask
only while shown, and export files with the same numbers, the coefficient as code included."""

from __future__ import annotations

import csv
import dataclasses
import math

import numpy as np
import pytest
from PySide6.QtGui import QColor

from engine.analysis import curvature as cv
from engine.analysis.run_analysis import RunAnalysis
from engine.export_process import write_export
from gui.exports import Exports
from gui.panes.weight.readings_view import SHOWN, bars
from gui.theme import plot_colors
from tests.child_work import sendable
from tests.engine.ascode.test_generate import run_numpy_only

from ...conftest import QT_NOISE
from .test_weight_pane import WAIT, make, run_path  # noqa: F401  (run_path is a fixture)

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]


def test_the_tokens_tab_draws_the_engines_reading_and_its_timeline(qtbot, run_path):  # noqa: F811
    session, pane = make(qtbot, run_path, "blocks.1.W_Q")
    tab = pane.tokens_tab
    assert not tab.view.seen  # asked nothing while another tab is shown
    pane.tabs.setCurrentWidget(tab)
    assert tab.view.seen
    pane.timeline.set_step(4)
    want = RunAnalysis(run_path).tokens("blocks.1.W_Q", 4)
    qtbot.waitUntil(lambda: tab.view.reading is not None and tab.view.reading.step == 4
                    and len(tab.view.reading.parts) > 2, timeout=WAIT)
    r = tab.view.reading
    assert r.ranks == want.ranks and r.role == "reader"
    widths = [item.opts["width"] for item in tab.bars.getPlotItem().items if hasattr(item, "opts")][0]
    assert list(widths) == bars(want, "G", tab.bars.fits())[1]
    first = tab.rows.topLevelItem(0)
    top = int(np.argmax(np.abs(want.imprints["G"])))
    assert first.text(0) == want.contexts[top] and float(first.text(1)) == pytest.approx(want.imprints["G"][top],
                                                                                         abs=1e-4)
    tab.part_box.setCurrentIndex(tab.part_box.findData("ΔW"))  # as the user picks the update
    assert tab.view.part == "ΔW"
    widths = [item.opts["width"] for item in tab.bars.getPlotItem().items if hasattr(item, "opts")][0]
    assert list(widths) == bars(want, "ΔW", tab.bars.fits())[1]
    # as many bars as their labels have room for: fewer in a short pane, all SHOWN in a tall one
    line = tab.bars.fontMetrics().height()
    for height, shown in ((12 * line, 3), (60 * line, SHOWN)):
        tab.bars.resize(tab.bars.width(), height)
        drawn = [item for item in tab.bars.getPlotItem().items if hasattr(item, "opts")][0].opts["width"]
        assert tab.bars.fits() == shown and len(drawn) == len(bars(want, "ΔW", shown)[1])
    qtbot.waitUntil(lambda: tab.view.timeline is not None, timeout=WAIT)
    assert [x.step for x in tab.view.timeline] == RunAnalysis(run_path).saved_steps()
    assert tab.timeline.matrix().shape[1] == len(tab.view.timeline)
    assert "blocks.1.W_Q at step 4" in tab.message.text()


def test_the_curvature_tab_draws_the_series_against_the_threshold(qtbot, run_path):  # noqa: F811
    session, pane = make(qtbot, run_path, "blocks.0.W_K")
    tab = pane.curvature_tab
    pane.tabs.setCurrentWidget(tab)
    pane.timeline.set_step(4)
    a = RunAnalysis(run_path)
    qtbot.waitUntil(lambda: tab.view.series is not None and tab.view.result is not None
                    and tab.view.result.step == 4, timeout=WAIT)
    series = a.curvature_series("blocks.0.W_K")
    def data(key):  # the points given, before the log axis transforms them
        return tab.curves[key].xData, tab.curves[key].yData

    x, y = data("threshold")
    np.testing.assert_array_equal(x, [c.step for c in series])
    np.testing.assert_allclose(y, [c.threshold for c in series])
    np.testing.assert_allclose(data("kappa")[1], [c.curvature if c.curvature > 0 else np.nan for c in series])
    np.testing.assert_allclose(data("loss")[1], [c.loss_after for c in series])
    at = a.curvature(4, "blocks.0.W_K")
    assert f"κ = {at.curvature:.3g}" in tab.message.text() and f"2/η = {at.threshold:.3g}" in tab.message.text()
    # a κ ≤ 0 has no place on the log scale: the line says which steps are left out and why
    bent = dataclasses.replace(series[0], curvature=-0.05, weight_curvature=-1e-6)
    tab.view.series = [bent] + series[1:]
    assert not np.isfinite(data("kappa")[1][0]) and not np.isfinite(data("weight")[1][0])
    kappa = [c.step for c in tab.view.series if c.curvature <= 0]
    own = [c.step for c in tab.view.series if c.weight_curvature <= 0]
    assert (f"being ≤ 0 (the probe loss bends down along the step there): κ at step{'s' * (len(kappa) > 1)} "
            f"{', '.join(map(str, kappa))}; κ of blocks.0.W_K at step{'s' * (len(own) > 1)} "
            f"{', '.join(map(str, own))}") in tab.message.text()
    tab.view.series = series
    tab.view.series = None  # before the intervals over training come (minutes on GPT-2): the step on screen's
    x, y = data("threshold")
    assert list(x) == [4] and list(y) == [tab.view.result.threshold] and tab.curves["threshold"].opts["symbol"]
    tab.view.series = series
    assert tab.curves["threshold"].opts["symbol"] is None  # a dashed line once there are two points
    why = "κ along the step is not measured on this model: its double backward … over the 8 GB budget"
    tab.view.result = dataclasses.replace(at, unmeasured=why, along=math.nan, curvature=math.nan,
                                          weight_curvature=None)  # as a GPT-2 small's comes: λ_c alone
    assert why in tab.message.text() and "κ = nan" not in tab.message.text()
    tab.view.result = dataclasses.replace(at, approximate=cv.FLOAT32_ACCURACY)  # as GPT-2 small's comes: float32
    assert f"κ = {at.curvature:.3g}, κ of blocks.0.W_K {at.weight_curvature:.3g} ({cv.FLOAT32_ACCURACY})" \
        in tab.message.text()
    axis = tab.top.getAxis("left")  # the log axis names its decades, not the minor ticks between them
    axis.setRange(math.log10(900), math.log10(7e4))
    ticks = [math.log10(v) for v in (900, 2e3, 5e3, 9e3, 1e4, 2e4)]
    assert axis.logTickStrings(ticks, 1.0, 1.0) == ["", "", "", "", "10⁴", ""]
    axis.setRange(math.log10(3e3), math.log10(5e4))  # one decade shown: 2 and 5 times it too
    ticks = [math.log10(v) for v in (5e3, 7e3, 1e4, 2e4, 3e4)]
    assert axis.logTickStrings(ticks, 1.0, 1.0) == ["5·10³", "", "10⁴", "2·10⁴", ""]
    axis.setRange(math.log10(1.5e4), math.log10(9e4))  # within one decade: every tick
    assert axis.logTickStrings([math.log10(v) for v in (2e4, 3e4, 5e4)], 1.0, 1.0) == ["2·10⁴", "3·10⁴", "5·10⁴"]
    steps = tab.bottom.getAxis("bottom")  # whole optimizer steps, not 1.2 or 1.4 between two saved ones
    assert steps.tickStrings([1.0, 1.2, 1.4, 2.0], 1.0, 0.2) == ["1", "", "", "2"]
    assert steps.tickStrings([500.0, 1000.0], 1.0, 500.0) == ["500", "1000"]
    assert tab.legend.brush().color().name() == QColor(plot_colors().background).name()  # names readable over lines
    pane.timeline.set_step(0)  # no update reaches the first saved step: said in one line
    qtbot.waitUntil(lambda: "the run's first saved step" in tab.message.text(), timeout=WAIT)


def test_the_tabs_and_the_pane_export_the_readings_and_the_code(qtbot, run_path, tmp_path,  # noqa: F811
                                                                children_in_thread):
    """The code goes through the app's queue and its job (on a thread: children_in_thread; the export process is
    tests/gui/test_exports.py's point); each tab's request is checked to be sendable to that process and written
    by what it runs (write_export), here: a process started for each was most of the test (8.4 s on a quiet
    machine). The code file runs with NumPy alone (its torch check is test_generate's)."""
    session, pane = make(qtbot, run_path, "blocks.1.W_O")
    asked = []
    session.sig_export_requested.connect(asked.append)

    def written(path):
        request = asked[-1]
        assert request.path == path and sendable(request.write), path
        assert write_export(str(path), request.write, request.options) == [str(path)]

    pane.tabs.setCurrentWidget(pane.tokens_tab)
    pane.timeline.set_step(4)
    qtbot.waitUntil(lambda: pane.tokens_tab.view.reading is not None, timeout=WAIT)
    pane.tokens_tab.export(tmp_path / "t.npy")
    written(tmp_path / "t.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "t.npy"), RunAnalysis(run_path).tokens("blocks.1.W_O", 4)
                                  .push["G"])
    pane.curvature_tab.export(tmp_path / "c.csv")
    written(tmp_path / "c.csv")
    rows = list(csv.reader(open(tmp_path / "c.csv", encoding="utf-8")))
    series = RunAnalysis(run_path).curvature_series("blocks.1.W_O")
    # computed again by the export, which may sum in another order: equal to round-off
    np.testing.assert_allclose([float(r[rows[0].index("curvature")]) for r in rows[1:]], [c.curvature for c in series],
                               rtol=1e-10)
    exports = Exports(session, pane)
    with qtbot.waitSignal(exports.sig_finished, timeout=WAIT) as done:
        pane.exporter.export("code", tmp_path / "o.py")
    assert done.args[1][0] == tmp_path / "o.py" and (tmp_path / "o.npz").is_file()
    ran = run_numpy_only(tmp_path / "o.py", "--no-differences")
    assert ran.returncode == 0 and "G of blocks.1.W_O" in ran.stdout, ran.stdout + ran.stderr
