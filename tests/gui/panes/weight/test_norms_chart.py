"""The Weight pane's norms chart on a run with one saved step (issue 40)."""

from __future__ import annotations

import numpy as np
from PySide6.QtGui import QImage, QPainter

from gui.panes.weight.charts import NormsChart


def labels(axis) -> list[str]:
    """The labels the axis draws now."""
    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        return [text for *_, text in axis.generateDrawSpecs(painter)[2]]
    finally:
        painter.end()


def test_one_saved_step_is_drawn_as_dots_at_its_step_between_powers_of_ten(qtbot):
    """Seen under Xvfb: at one step the log axis labelled 0.004, 0.005, … 0.01 one over another, the step axis
    read −400 … 400 "(x0.001)", and no curve showed (a line through one point is not drawn)."""
    chart = NormsChart()
    qtbot.addWidget(chart)
    chart.resize(420, 200)
    chart.show()
    qtbot.waitExposed(chart)
    parts = {"L1.q": np.array([0.0081]), "L1.k": np.array([0.0042])}
    chart.show_series(np.array([40.0]), np.array([0.0123]), parts, "lines", log=True)
    left, bottom = chart.plot.getAxis("left"), chart.plot.getAxis("bottom")
    assert labels(left) == ["0.001", "0.01", "0.1"] and labels(bottom) == ["40"]
    assert all(c.opts["symbol"] == "o" for c in chart.curves.values())
    steps = np.array([40.0, 50.0, 60.0])
    chart.show_series(steps, np.full(3, 0.0123), {k: np.repeat(v, 3) for k, v in parts.items()}, "lines", log=True)
    assert all(c.opts["symbol"] is None for c in chart.curves.values())
    chart.plot.vb.updateAutoRange()  # as its next paint would
    assert {"40", "60"} <= set(labels(bottom))  # pyqtgraph's ticks again, over the steps


def test_another_runs_empty_charts_keep_no_range_of_the_run_before(qtbot):
    """Seen under Xvfb (issue 37's walk): after a 374-step run, a GPT-2-shaped run's Norms over training read
    steps 0 … 374 and norms 1e-10 … 0.01 while its G was computing: auto-range kept the range with no data."""
    from gui.panes.weight.charts import GeometryChart

    chart, geometry = NormsChart(), GeometryChart()
    for widget in (chart, geometry):
        qtbot.addWidget(widget)
        widget.resize(420, 200)
        widget.show()
        qtbot.waitExposed(widget)
    steps = np.arange(0.0, 375.0, 25.0)
    chart.show_series(steps, np.geomspace(1e-10, 1e-2, len(steps)), {}, "lines", log=True)
    geometry.show_geometry({int(s): (0.5, 10.0 ** (s / 100), 0.0) for s in steps})
    for plot in (chart.plot, geometry.cos_plot, geometry.ratio_plot):
        plot.vb.updateAutoRange()
    assert chart.plot.viewRange()[0][1] > 300 and geometry.ratio_plot.viewRange()[1][1] > 3
    chart.show_series(np.array([]), np.array([]), {}, "lines", log=True)  # the next run, nothing computed yet
    geometry.show_geometry({})
    assert chart.plot.viewRange() == [[0, 1], [0, 1]]
    assert geometry.cos_plot.viewRange()[0] == [0, 1] and geometry.ratio_plot.viewRange() == [[0, 1], [0, 1]]
    chart.show_series(np.array([0.0, 10.0]), np.array([3.0, 4.0]), {}, "lines", log=True)  # its steps come
    geometry.show_geometry({0: (0.1, 100.0, 0.0), 10: (0.2, 1000.0, 0.0)})
    for plot in (chart.plot, geometry.cos_plot, geometry.ratio_plot):
        plot.vb.updateAutoRange()
    assert chart.plot.viewRange()[0][1] >= 10 and geometry.ratio_plot.viewRange()[1][1] >= 3  # log10(1000)
