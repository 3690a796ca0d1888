"""Run curves names every run in full beside its plots, in the colours the exported figure and TikZ give it
(issue 26, item 9: the legend inside a plot was cut to "-20261124-080249" or drawn over the curves, and the
exports used matplotlib's colours, not the screen's)."""

from __future__ import annotations

import re
import shutil

import matplotlib
import pytest
from PySide6.QtCore import QRect

from engine.figures.run_curves import overlay_figure
from engine.figures.run_curves_tex import overlay_tikz
from gui import screen_fit, settings

from ...conftest import QT_NOISE

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]
NAMES = ("tiny-test-20261124-080249", "tiny-test-20261124-093015", "shakespeare-fast-muon-lr-sweep-20261125-101500")


@pytest.fixture(scope="module")
def one_run(tmp_path_factory):
    from tests.engine.cli.test_export_cli import tiny_run

    return tiny_run(tmp_path_factory.mktemp("legend") / "run").path


@pytest.mark.parametrize("size", [(1280, 720), (1600, 1000)])
def test_the_legend_names_each_run_in_full_beside_the_plots_in_the_exports_colours(qtbot, make_window, monkeypatch,
                                                                                 one_run, size):
    from gui.main_window import MainWindow

    monkeypatch.setattr(MainWindow, "_available", lambda self: QRect(0, 0, *size))
    paths = [shutil.copytree(one_run, settings.runs_root() / name) for name in NAMES]  # runs named as Train names them
    w = make_window()
    w.docks["pane_run_curves"].raise_()
    curves = w.panes["pane_run_curves"]
    w.session.compare_runs(paths)  # as ticking them in the Runs pane does
    qtbot.waitUntil(lambda: curves.legend_names() == list(NAMES), timeout=60_000)
    qtbot.wait(50)

    legend = curves.legend
    assert [label.text() for label in legend.labels] == list(NAMES)
    for label in legend.labels:  # every name shown whole (wrapped, not cut) inside the pane
        assert label.isVisible() and label.height() >= label.heightForWidth(label.width())
        assert curves.rect().contains(QRect(label.mapTo(curves, label.rect().topLeft()), label.size()))
    right = max(p.getViewWidget().mapTo(curves, p.getViewWidget().rect().topRight()).x()
                for p in curves.plots.values())
    assert legend.mapTo(curves, legend.rect().topLeft()).x() > right  # beside the plots, over none

    shown = [colour for _, colour in legend.entries()]
    assert shown == [curves.line(p, "train_loss").opts["pen"].color().name() for p in paths]
    fig = overlay_figure([curves.curves[p] for p in paths], "step", 0.6)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == list(NAMES)
    assert [matplotlib.colors.to_hex(h.get_color()) for h in fig.legends[0].legend_handles] == shown
    tex = overlay_tikz([curves.curves[p] for p in paths])
    assert ["#" + c.lower() for c in re.findall(r"\\definecolor\{run\d\}\{HTML\}\{(\w+)\}", tex)] == shown

    for metric, plot in curves.plots.items():  # every plot readable, its title whole
        assert plot.getViewWidget().height() >= screen_fit.PLOT_MIN, metric
        assert plot.titleLabel.item.boundingRect().width() <= plot.getViewWidget().width(), metric
