"""A theme switch while the app runs reaches every text (issue 16, item 2): labels styled by a style sheet
(heatmap titles, the Forms term headings) and formulas drawn as images (asked again in the new colour)."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication, QLabel
from shiboken6 import isValid

from gui import theme

from .conftest import QT_NOISE, plots_built

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]
TEXT = QPalette.ColorRole.WindowText


def styled_labels(window) -> list[QLabel]:
    return [lab for lab in window.findChildren(QLabel) if lab.styleSheet() and "color" not in lab.styleSheet()]


@pytest.mark.parametrize("first,second", [("dark", "light"), ("light", "dark")])
def test_every_styled_label_takes_the_new_text_colour(qtbot, make_window, first, second):
    from gui.widgets.heatmap import HeatmapWidget

    w = make_window()
    w.set_theme(first)
    qtbot.wait(10)
    labels = styled_labels(w)
    titles = [h._title_label for h in w.panes["pane_heatmaps"].findChildren(HeatmapWidget)]
    assert labels and titles
    w.set_theme(second)
    QApplication.processEvents()
    want = theme.palette(second).color(TEXT).name()
    alive = [lab for lab in labels + titles if isValid(lab)]  # a pane may rebuild a page on the switch
    assert len(alive) > len(labels) // 2
    for lab in alive:
        assert lab.palette().color(TEXT).name() == want, lab.objectName() or lab.text()


def test_a_formula_is_asked_again_in_the_new_colour_even_when_out_of_sight(qtbot):
    from gui.app import make_application
    from gui.widgets.formula import FormulaView

    make_application()  # the app in its theme, as a window starts it (the view asks the app's one renderer; a
                        # window built here beside it was never used, ~0.4 s of CPU)
    view = FormulaView("x^2", "x^2")
    qtbot.addWidget(view)
    view.show()
    qtbot.waitUntil(lambda: view._key is not None)
    old = view._key.color
    view.hide()  # a tab behind another: it must ask when shown, not keep the old image
    theme.apply_theme(QApplication.instance(), "light" if theme.current_theme() == "dark" else "dark")
    QApplication.processEvents()
    view.show()
    qtbot.waitUntil(lambda: view._key is not None and view._key.color != old)
    c = view.palette().color(TEXT)
    assert view._key.color == (c.red(), c.green(), c.blue())


@pytest.fixture
def themed(qapp):
    """Switch the whole application's theme; the dark theme again afterwards."""
    yield lambda name: (theme.apply_theme(qapp, name), QApplication.processEvents())
    theme.apply_theme(qapp, "dark")


def legend_colors(legend) -> set[str]:
    import re

    return {re.search(r"color: ?(#[0-9a-fA-F]{6}|rgb[^;]*)", label.item.toHtml()).group(1).lower()
            for _, label in legend.items}


@pytest.mark.parametrize("first,second", [("dark", "light"), ("light", "dark")])
def test_the_norms_chart_legend_and_total_follow_a_theme_switch(qtbot, themed, first, second):
    import numpy as np

    from gui.panes.weight.charts import TOTAL, NormsChart

    themed(first)
    chart = NormsChart()
    qtbot.addWidget(chart)
    chart.show_series(np.arange(3), np.ones(3), {"direct": np.ones(3)}, "lines")
    themed(second)
    fg = theme.plot_colors().foreground.lower()
    assert legend_colors(chart.legend) == {fg}
    assert chart.curves[TOTAL].opts["pen"].color().name() == fg


@pytest.mark.parametrize("first,second", [("dark", "light"), ("light", "dark")])
def test_the_positional_curve_plot_follows_a_theme_switch(qtbot, themed, first, second):
    from gui.panes.heatmaps.positional import PositionalView

    themed(first)
    view = PositionalView()
    qtbot.addWidget(view)
    themed(second)
    c = theme.plot_colors()
    assert view.curve_plot.backgroundBrush().color().name() == c.background
    assert view.curve_plot.getPlotItem().getAxis("bottom").textPen().color().name() == c.foreground


def plot_views(window):
    import pyqtgraph as pg

    return [v for v in window.findChildren(pg.GraphicsView) if isValid(v)]


def wrongly_themed(window) -> list[str]:
    """Every plot's background and axis text not in the theme now on, named by the pane it is in."""
    import pyqtgraph as pg

    c = theme.plot_colors()
    wrong = []
    for view in plot_views(window):
        pane = next((n for n, p in window.panes.items() if p.isAncestorOf(view)), "?")
        if view.backgroundBrush().color().name() != c.background:
            wrong.append(f"{pane}: background {view.backgroundBrush().color().name()}")
        for item in view.scene().items():
            # (a colour bar's other three axes are its frame and draw no text: showValues is off)
            if isinstance(item, pg.AxisItem) and item.isVisible() and item.style.get("showValues", True) \
                    and item.textPen().color().name() != c.foreground:
                wrong.append(f"{pane}: {item.orientation} axis text {item.textPen().color().name()}")
    return wrong


def see_every_pane(qtbot, window) -> None:
    for dock in window.docks.values():
        dock.raise_()
        qtbot.waitUntil(lambda: not dock.visibleRegion().isEmpty(), timeout=10_000)
        plots_built(qtbot)  # a plot is built after its first paint, one a turn (gui/widgets/first_sight.py)


@pytest.mark.parametrize("first,second", [("dark", "light"), ("light", "dark")])
def test_every_plot_of_every_pane_takes_the_new_theme(qtbot, make_window, themed, first, second, tmp_path):
    """Issue 40: dark → light left Run curves dark. With runs ticked in the run browser (their curves drawn),
    the theme switches before some panes are first seen and after all are; every plot is checked each time."""
    from tests.engine.cli.test_export_cli import tiny_run

    themed(first)
    runs = [tiny_run(tmp_path / "runs" / name).path for name in ("a", "b")]
    w = make_window()
    w.resize(1600, 1000)
    w.session.compare_runs(runs)
    w.docks["pane_training"].raise_()
    themed(second)  # panes not yet seen build their plots in the new theme
    see_every_pane(qtbot, w)
    curves = w.panes["pane_run_curves"]
    qtbot.waitUntil(lambda: bool(curves.curves), timeout=30_000)
    # the plots on screen: those behind a pane's other tabs are built on first sight, in the theme then on
    shown = {n for n, p in w.panes.items() for v in plot_views(w) if p.isAncestorOf(v)}
    assert {"pane_training", "pane_run_curves"} <= shown and curves.grid.built
    assert wrongly_themed(w) == []
    themed(first)  # and every plot, seen, follows the switch back
    assert wrongly_themed(w) == []
