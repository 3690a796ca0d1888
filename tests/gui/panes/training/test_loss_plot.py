"""The loss plot: its history (each step once), snapped ranges, log scale and the hover read-out."""

from __future__ import annotations

import math

import pytest
from PySide6.QtCore import QEvent, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication

import numpy as np

from gui.panes.training.loss_plot import LossHistory, LossPlot, nice_ceiling, snapped_range
from gui.screen_fit import PLOT_MIN

from ...conftest import QT_NOISE

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]


def history(n: int = 50) -> LossHistory:
    h = LossHistory()
    for s in range(1, n + 1):
        h.add(s, 4.0 * math.exp(-s / 20) + 1.0, 1e-3, 3.0 if s % 10 == 0 else None)
    return h


def hover(plot: LossPlot, step: float, log_loss: float) -> None:
    """A real mouse-move event on the plot's viewport at (step, log10 loss)."""
    plot.graphics.scene()._lastMoveEventTime = 0  # pyqtgraph drops moves closer than its rate limit
    viewport = plot.graphics.viewport()
    pos = QPointF(plot.graphics.mapFromScene(plot.loss.vb.mapViewToScene(QPointF(step, log_loss))))
    event = QMouseEvent(QEvent.Type.MouseMove, pos, QPointF(viewport.mapToGlobal(pos)),
                        Qt.MouseButton.NoButton, Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(viewport, event)


def test_a_step_is_kept_once_and_a_replayed_step_is_ignored():
    h = history(5)
    assert not h.add(5, 0.1, 1e-3, None) and not h.add(3, 0.1, 1e-3, None)
    assert h.steps == [1, 2, 3, 4, 5]
    h.add_rows([{"step": 6, "train_loss": 2.0, "val_loss": 1.5, "lr": 1e-3}, {"bad": 1}])
    assert h.steps[-1] == 6 and h.val_steps == [6] and h.val == [1.5]


@pytest.mark.parametrize("x, want", [(1, 1), (7, 8), (101, 150), (0.031, 0.04), (999, 1000)])
def test_nice_ceiling(x, want):
    assert nice_ceiling(x) == pytest.approx(want)


def test_snapped_ranges_contain_the_data_and_move_rarely():
    lo, hi = snapped_range(1.23, 4.41)
    assert lo <= 1.23 and hi >= 4.41 and hi - lo < 2 * (4.41 - 1.23)
    assert snapped_range(1.22, 4.41) == (lo, hi)  # a slightly lower minimum: the same range


def test_log_scale_and_hover_read_out(qtbot):
    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.resize(500, 400)
    plot.show()
    qtbot.waitExposed(plot)
    plot.show_history(history())
    assert plot.loss.viewRange()[0][1] >= 50
    plot.log_box.click()
    assert plot.loss.getAxis("left").logMode
    hover(plot, 20, 0.4)
    qtbot.waitUntil(lambda: plot.readout.text().startswith("step 20 ·"), timeout=2000)
    assert "train" in plot.readout.text() and "lr 1.00e-03" in plot.readout.text()
    assert plot.cursor.isVisible() and plot.cursor.value() == 20


def test_zooming_stops_following_and_auto_range_resumes_it(qtbot):
    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.show_history(history(50))
    plot.loss.vb.sigRangeChangedManually.emit([True, True])  # what a mouse zoom emits
    plot.loss.setXRange(10, 20, padding=0)
    plot.show_history(history(80))
    assert plot.loss.viewRange()[0] == pytest.approx([10, 20])
    plot.loss.vb.enableAutoRange()  # the "A" button
    plot.show_history(history(90))
    assert plot.following and plot.loss.viewRange()[0][1] >= 90


def test_the_steps_heads_took_their_roles_are_marked_on_the_loss_curve(qtbot, make_window):
    """Issue 40: nothing on the loss curve said where the heads formed. The Training pane draws a dashed line
    at each formation step, labelled with the heads, from the heads chart's roles."""
    from engine.analysis.head_timeline import HeadTimeline
    from engine.analysis.heads import SCORES

    w = make_window()
    pane = w.panes["pane_training"]
    values = {name: np.zeros((3, 2, 2)) for name in SCORES}
    values["previous_token"][1:, 0, 1] = 0.8   # L0 H1 from step 10
    values["induction"][2:, 1, 0] = 0.6        # L1 H0 from step 20
    values["copying"][:, 1, 1] = 0.9           # not attention: not on the curve
    pane.head_timeline.set_timeline(HeadTimeline([0, 10, 20], values, np.zeros(3), False))
    pane.plot.loss.setXRange(0, 30, padding=0)
    lines = pane.plot.formations
    assert [line.value() for line in lines] == [10, 20]
    assert [tag.text() for tag in pane.plot.formation_tags] == ["L0 H1", "L1 H0"]
    assert [line.toolTip() for line in lines] == ["L0 H1 previous-token: formed at step 10",
                                                  "L1 H0 induction: formed at step 20"]
    assert "┆ heads formed" in pane.plot.key.text()
    assert pane.plot.key.toolTip() == ("Dashed lines: the steps heads took their roles\n"
                                       "L0 H1 previous-token at step 10\nL1 H0 induction at step 20")
    assert all(line in pane.plot.loss.items for line in lines)
    pane.head_timeline.set_timeline(None)  # another run: its marks go
    assert pane.plot.formations == [] and not any(i in lines for i in pane.plot.loss.items)
    assert pane.plot.formation_tags == [] and "formed" not in pane.plot.key.text() + pane.plot.key.toolTip()


def tag_rects(plot):
    """The scene rects of the formation tags shown."""
    return [t.mapRectToScene(t.boundingRect()) for t in plot.formation_tags if t.isVisible()]


def test_formation_tags_never_cover_each_other_the_curves_or_the_axes(qtbot):
    """Issue 40, seen under Xvfb: the heads' names ran up their lines inside the plot, across the curves, and
    lines a few steps apart printed theirs over each other. The short tags stand in a band above the plot, in
    rows, none over another, the curves' view or an axis; one that has no room is hidden (its line keeps its
    tooltip, the legend its name) and comes back when zoomed in."""
    from engine.analysis.head_roles import Role

    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.resize(400, 300)
    plot.show()
    qtbot.waitExposed(plot)
    plot.show_history(history(800))
    steps = [150, 160, 170, 180, 400, 425, 790]
    plot.set_formations([Role(k % 3, k, "induction", 0.5, s) for k, s in enumerate(steps)]
                        + [Role(2, 9, "previous_token", 0.9, 790)])
    plot.loss.setXRange(0, 800, padding=0)
    qtbot.waitUntil(lambda: plot.band.isVisible() and plot.band.size().height() > 0, timeout=180_000)

    def check():
        rects = tag_rects(plot)
        assert all(not a.intersects(b) for i, a in enumerate(rects) for b in rects[i + 1:])
        keep_out = [plot.loss.vb.sceneBoundingRect()] + [plot.loss.getAxis(n).sceneBoundingRect()
                                                        for n in ("left", "bottom")]
        band, whole = plot.band.sceneBoundingRect(), plot.loss.sceneBoundingRect()
        for r in rects:
            assert not any(r.intersects(k) for k in keep_out), (r, keep_out)
            assert band.contains(r) and whole.contains(r)
        return rects

    assert len(check()) < len(steps)  # four heads within 30 steps: not all fit in two rows at 400 px
    assert [t.text() for t in plot.formation_tags][-1] == "L0 H6 +1"  # two heads at one step: one tag
    plot.loss.setXRange(140, 190, padding=0)  # zoomed in: the four close ones each have their own
    assert [t.isVisible() for t in plot.formation_tags[:4]] == [True] * 4
    check()
    for axis in (plot.loss.getAxis("left"), plot.loss.getAxis("bottom")):
        title = axis.label.mapRectToScene(axis.label.boundingRect())
        assert not any(title.intersects(r) for r in tag_rects(plot))
    assert "L2 H9 previous-token at step 790" in plot.key.toolTip()  # every name, shown or not
    plot.resize(460, 100)  # its least height (1280×720's): the plots side by side
    qtbot.waitUntil(lambda: not plot.stacked, timeout=180_000)
    check()
    assert plot.loss.vb.sceneBoundingRect().top() == plot.lr_plot.vb.sceneBoundingRect().top()  # side by side


def test_at_its_least_height_the_plots_fit_their_view_and_their_titles_show(qtbot):
    """Issue 40, seen under Xvfb at 1280×720: the view was given PLOT_MIN while its plots side by side needed
    PLOT_MIN and the layout's margins, so the scene overflowed it and 'step' was cut at the bottom. The view
    keeps PLOT_MIN (the pane's least height is unchanged) and the plots fit inside it."""
    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.resize(460, 100)  # less than it can take: it keeps its least height
    plot.show()
    qtbot.waitExposed(plot)
    assert not plot.stacked
    qtbot.waitUntil(lambda: plot.graphics.ci.geometry().height() <= plot.graphics.viewport().height())
    assert plot.graphics.height() == PLOT_MIN and plot.plot_heights()["loss"] >= PLOT_MIN


def titles_outside(plot) -> list[str]:
    """The axis titles of the loss and learning-rate plots whose text (their rect less the text's margin) is not
    inside their plot, or runs past their axis's length."""
    out = []
    for item in (plot.loss, plot.lr_plot):
        for name in ("left", "bottom"):
            axis = item.getAxis(name)
            m = axis.label.document().documentMargin()
            title = axis.label.mapRectToScene(axis.label.boundingRect().adjusted(m, m, -m, -m))
            along = item.mapRectToScene(axis.geometry())
            inside = (along.top() <= title.top() and title.bottom() <= along.bottom() if name == "left"
                      else along.left() <= title.left() and title.right() <= along.right())
            if not (inside and item.sceneBoundingRect().contains(title)):
                out.append(axis.label.toPlainText())
    return out


def test_every_axis_title_fits_inside_its_plot_at_its_least_height(qtbot):
    """Issue 40, seen under Xvfb at 1280×720: "learning rate (x0.001)" was longer than its plot was high and was
    cut at the top. Where the long title does not fit, the short one ("lr (x0.001)") is written; given room,
    the long one comes back."""
    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.resize(460, 100)  # its least height: the plots side by side, PLOT_MIN high
    plot.show()
    qtbot.waitExposed(plot)
    plot.show_history(history(800))
    qtbot.waitUntil(lambda: "x0.001" in plot.lr_plot.getAxis("left").label.toPlainText(), timeout=180_000)
    assert plot.lr_plot.getAxis("left").label.toPlainText().strip() == "lr (x0.001)"
    assert titles_outside(plot) == []
    plot.resize(460, 700)
    qtbot.waitUntil(lambda: plot.stacked and plot.lr_plot.height() > 200, timeout=180_000)
    assert plot.lr_plot.getAxis("left").label.toPlainText().strip() == "learning rate (x0.001)"
    assert titles_outside(plot) == []
