"""Loss curves: train and validation loss against step (linear or log), the learning rate on the same step
axis, and a read-out of the values under the mouse.

Each of the two plots keeps at least `PLOT_MIN` pixels of height: the learning rate stands below the loss
when the widget is tall enough for both (their steps one above the other), else beside it. Below the loss
in a fixed share, a 1280×720 screen left it 35 px, its tick labels drawn over each other and its axis
title over the loss's.

`LossHistory` holds the numbers (testable without Qt): rows from a run's metrics.jsonl and live
StepReports, each step once. `LossPlot` draws a history; callers hand it the history and it only sets data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QColor, QFontMetrics
from PySide6.QtWidgets import (QCheckBox, QGraphicsItem, QGraphicsSimpleTextItem, QHBoxLayout, QLabel, QVBoxLayout,
                               QWidget)

from engine.analysis.head_roles import ROLE_NAMES, Role

from ...screen_fit import PLOT_MIN
from ...theme import plot_colors, style_plot

TAG_ROWS = 2  # rows of the band above the loss that name the heads' formations
TAG_GAP = 6   # px: the least room between two tags in a row
LR_MIN_WIDTH = 190  # px: the learning-rate plot beside the loss, enough for its tick labels and a few steps


@dataclass
class LossHistory:
    steps: list[int] = field(default_factory=list)
    train: list[float] = field(default_factory=list)
    lr: list[float] = field(default_factory=list)
    val_steps: list[int] = field(default_factory=list)
    val: list[float] = field(default_factory=list)

    @property
    def last_step(self) -> int:
        return self.steps[-1] if self.steps else 0

    def add(self, step: int, train_loss: float | None, lr: float | None, val_loss: float | None) -> bool:
        """Append one step; a step not after the last one (a repeat, or a resumed run's replay) is
        ignored. Returns whether it was added."""
        if self.steps and step <= self.steps[-1]:
            return False
        self.steps.append(step)
        self.train.append(_num(train_loss))
        self.lr.append(_num(lr))
        if val_loss is not None and math.isfinite(val_loss):
            self.val_steps.append(step)
            self.val.append(float(val_loss))
        return True

    def add_rows(self, rows: list[dict]) -> None:
        for r in rows:
            if isinstance(r.get("step"), int):
                self.add(r["step"], r.get("train_loss"), r.get("lr"), r.get("val_loss"))

    def at(self, step: float) -> dict | None:
        """The logged values nearest to a step (for the hover read-out)."""
        if not self.steps:
            return None
        steps = np.asarray(self.steps)
        i = int(np.clip(np.searchsorted(steps, step), 0, len(steps) - 1))
        if i > 0 and abs(steps[i - 1] - step) < abs(steps[i] - step):
            i -= 1
        out = {"step": int(steps[i]), "train_loss": self.train[i], "lr": self.lr[i], "val_loss": None}
        if self.val_steps:
            vs = np.asarray(self.val_steps)
            j = int(np.argmin(np.abs(vs - steps[i])))
            if abs(vs[j] - steps[i]) <= max(1, 0.02 * steps[-1]):
                out["val_loss"] = self.val[j]
        return out


def _num(v) -> float:
    return float(v) if v is not None else math.nan


_NICE = (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)


def nice_ceiling(x: float) -> float:
    """The smallest of 1, 1.5, 2, 3, 4, 5, 6, 8 × 10^k that is ≥ x (x > 0)."""
    scale = 10.0 ** math.floor(math.log10(x))
    return next(n * scale for n in _NICE if n * scale >= x * (1 - 1e-12))


def snapped_range(lo: float, hi: float) -> tuple[float, float]:
    """[lo, hi] widened to multiples of a round step about a tenth of the span, so the range (and the
    axis, which pyqtgraph redraws whenever its range changes) moves only now and then as data arrives."""
    span = hi - lo if hi > lo else max(abs(hi), 1.0)
    step = nice_ceiling(span / 10)
    return math.floor(lo / step) * step, math.ceil(hi / step) * step + (step if hi == lo else 0.0)


class TitledAxis(pg.AxisItem):
    """An axis whose title takes the first of its forms (`titles`, longest first) that fits along the axis
    with pyqtgraph's scale ("(x0.001)"), else the last: at 1280×720 "learning rate (x0.001)" was longer than
    its plot was high and was cut at the top."""

    def __init__(self, orientation: str, titles: tuple[str, ...]):
        self.titles = titles  # before AxisItem's __init__, which writes its title
        super().__init__(orientation)
        self.setLabel(titles[0])

    def labelString(self) -> str:
        length = self.size().height() if self.orientation in ("left", "right") else self.size().width()
        text = ""
        for title in self.titles:
            self.labelText = title
            text = super().labelString()
            measure = self.label.document().clone()
            measure.setHtml(text)
            if measure.size().width() <= length:
                break
        return text

    def resizeEvent(self, ev=None) -> None:
        if self.label is not None:  # the length changed: the title that fits may too
            self.label.setHtml(self.labelString())
        super().resizeEvent(ev)


class LossPlot(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.graphics = pg.GraphicsLayoutWidget(self)
        self.graphics.setMinimumHeight(PLOT_MIN)  # readable before anything else: a short pane scrolls
        self.loss = self.graphics.addPlot(row=0, col=0, axisItems={"left": TitledAxis("left", ("loss",))})
        self.lr_plot = self.graphics.addPlot(
            row=1, col=0, axisItems={"left": TitledAxis("left", ("learning rate", "lr"))})
        self.stacked = True  # the learning rate below the loss (False: beside it); _arrange sets the shares
        # no margin above or below the plots, nor between them: the view's PLOT_MIN holds a plot of PLOT_MIN
        # (with pyqtgraph's 9 px margins and 6 px spacing the plots overflowed the view, and 'step' was cut at
        # its bottom edge at 1280×720; a taller view gave the Training pane a scroll bar there instead)
        left, _, right, _ = self.graphics.ci.layout.getContentsMargins()
        self.graphics.ci.layout.setContentsMargins(left, 0, right, 0)
        self.graphics.ci.layout.setVerticalSpacing(0)
        for plot in (self.loss, self.lr_plot):
            plot.setMinimumHeight(PLOT_MIN)
            plot.setLabel("bottom", "step")
        self.lr_plot.setMinimumWidth(LR_MIN_WIDTH)
        self.lr_plot.setXLink(self.loss)
        self.train_curve = self.loss.plot([], [], name="train")
        self.val_curve = self.loss.plot([], [], name="validation", symbol="o", symbolSize=6)
        self.lr_curve = self.lr_plot.plot([], [])
        self.formations: list[pg.InfiniteLine] = []  # the steps heads took their roles (set_formations)
        self.formation_tags: list[QGraphicsSimpleTextItem] = []  # their short names, in the band above the loss
        self._formation_names: list[str] = []         # what each line marks, in step order (the key's tooltip)
        # the band: the loss's top axis, without values, shown while there are formations to name
        self.band = self.loss.getAxis("top")
        self.band.setStyle(showValues=False, tickLength=0)
        self.band.setHeight(TAG_ROWS * QFontMetrics(self.font()).height() + 2)
        self.band.geometryChanged.connect(self._label_formations)
        # beside the loss, the learning rate gets a band as high, empty: their plots' tops in line
        self.lr_band = self.lr_plot.getAxis("top")
        self.lr_band.setStyle(showValues=False, tickLength=0)
        self.lr_band.setHeight(self.band.fixedHeight)
        self.cursor = pg.InfiniteLine(angle=90, movable=False)
        self.loss.addItem(self.cursor, ignoreBounds=True)
        self.cursor.hide()
        self.log_box = QCheckBox("log scale", self)
        self.log_box.setObjectName("log_scale")
        self.log_box.setToolTip("Show the loss on a logarithmic axis")
        self.readout = QLabel("", self)
        self.readout.setObjectName("loss_readout")
        self.readout.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # the curves' names above the plot, in their colours: a legend inside it covered the curve or the
        # labels of the heads' formations, which are drawn at the top of the plot
        self.key = QLabel(self)
        self.key.setObjectName("loss_key")
        top = QHBoxLayout()
        top.addWidget(self.readout, 1)
        top.addWidget(self.key)
        top.addWidget(self.log_box)
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        col.addLayout(top)
        col.addWidget(self.graphics, 1)
        self.history, self.total_steps = LossHistory(), None
        for plot in (self.loss, self.lr_plot):
            for name in ("left", "bottom"):
                # The grid is drawn by the axes, so every new point repaints them; as pixmaps they are
                # re-rendered only when their range changes, which the snapped ranges make rare.
                plot.getAxis(name).setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        self.following = True  # ranges follow the data until the user zooms or pans
        self.log_box.toggled.connect(self._on_log_toggled)
        self.loss.vb.sigRangeChangedManually.connect(self._on_range_changed_manually)
        self.loss.vb.sigXRangeChanged.connect(self._label_formations)
        self.lr_plot.vb.sigRangeChangedManually.connect(self._on_range_changed_manually)
        self._mouse = pg.SignalProxy(self.graphics.scene().sigMouseMoved, rateLimit=30,
                                     slot=self._on_mouse_moved)
        self._restyle()
        self._arrange(force=True)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._arrange()
        self._label_formations()

    def _arrange(self, force: bool = False) -> None:
        """The learning rate below the loss when both get PLOT_MIN there, else beside it (the room depends on
        the widget's size alone, never on this choice, so it cannot flip back and forth)."""
        stacked = self.graphics.height() >= 2 * PLOT_MIN + 2 * self.graphics.ci.layout.verticalSpacing() + 12
        if stacked == self.stacked and not force:
            return
        grid = self.graphics.ci
        if stacked != self.stacked:
            grid.removeItem(self.lr_plot)
            grid.addItem(self.lr_plot, row=1 if stacked else 0, col=0 if stacked else 1)
        self.stacked = stacked
        layout = grid.layout
        layout.setRowStretchFactor(0, 2 if stacked else 1)
        layout.setRowStretchFactor(1, 1 if stacked else 0)
        layout.setColumnStretchFactor(0, 1 if stacked else 2)
        layout.setColumnStretchFactor(1, 0 if stacked else 1)
        self.lr_plot.setMaximumHeight(2 * PLOT_MIN if stacked else 1e6)  # below: the loss takes the rest
        self._show_bands()

    def set_formations(self, roles) -> None:
        """Mark on the loss curve the steps at which heads took their roles (head_roles.Role with `formed`): a
        dashed line each, named by a short tag ("L0 H0") in a band above the plot, so the bend of the curve and
        the head that made it are read together. The full names are the tag's and the line's tooltip and the
        key's ("┆ heads formed"). Labels written up their lines inside the plot crossed the curves and, a few
        steps apart, each other."""
        for line in self.formations:
            self.loss.removeItem(line)
        for tag in self.formation_tags:
            tag.setParentItem(None)
            if tag.scene() is not None:
                tag.scene().removeItem(tag)
        by_step: dict[int, list[Role]] = {}
        for r in roles:
            by_step.setdefault(r.formed, []).append(r)
        c = plot_colors()
        self.formations, self.formation_tags, self._formation_names = [], [], []
        for step, heads in sorted(by_step.items()):
            names = ", ".join(f"L{r.layer} H{r.head} {ROLE_NAMES[r.score]}" for r in heads)
            line = pg.InfiniteLine(pos=step, angle=90, movable=False,
                                   pen=pg.mkPen(c.accent, width=1, style=Qt.PenStyle.DashLine))
            line.setToolTip(f"{names}: formed at step {step}")
            self.loss.addItem(line, ignoreBounds=True)
            short = f"L{heads[0].layer} H{heads[0].head}" + (f" +{len(heads) - 1}" if len(heads) > 1 else "")
            tag = QGraphicsSimpleTextItem(short, self.band)
            tag.setBrush(QColor(c.foreground))
            tag.setToolTip(line.toolTip())
            self.formations.append(line)
            self.formation_tags.append(tag)
            self._formation_names.append(f"{names} at step {step}")
        self._show_bands()
        self._write_key()
        self._label_formations()

    def _write_key(self) -> None:
        """The curves' names in their colours and, while heads' formations are marked, the dashed line's, whose
        tooltip names every head with its role and step. A line of them below the plot (wrapped, drawn over
        the plots' "step" at 1280×720) cost the Training pane 20 px there, and the heads chart below names the
        same roles."""
        c = plot_colors()
        formed = (f"&nbsp;&nbsp;<span style='color:{c.accent}'>┆ heads formed</span>" if self.formations else "")
        self.key.setText(f"<span style='color:{c.train}'>━ train</span>&nbsp;&nbsp;"
                         f"<span style='color:{c.val}'>●━ validation</span>{formed}")
        self.key.setToolTip("Dashed lines: the steps heads took their roles\n" + "\n".join(self._formation_names)
                            if self.formations else "")

    def _show_bands(self) -> None:
        self.loss.showAxis("top", bool(self.formations))
        self.lr_plot.showAxis("top", bool(self.formations) and not self.stacked)

    def _label_formations(self, *_) -> None:
        """Place each tag over its line in the band, in the first of its TAG_ROWS rows where it clears the tag
        before it; a tag that clears none, or whose line is out of view, is hidden (its line keeps its
        tooltip, the key's tooltip its name). Re-placed when the steps shown or the width change."""
        if not self.formations:
            return
        (x0, x1), width = self.loss.vb.viewRange()[0], self.band.size().width()
        line_height = QFontMetrics(self.band.font()).height()
        ends = [-math.inf] * TAG_ROWS  # right edge of the last tag placed in each row
        for line, tag in zip(self.formations, self.formation_tags):
            tag.setFont(self.band.font())
            w = tag.boundingRect().width()
            x = (line.value() - x0) / (x1 - x0) * width if x1 > x0 else -1.0
            row = None
            if 0 <= x <= width and w <= width:
                left = min(max(x - w / 2, 0.0), width - w)
                row = next((k for k, end in enumerate(ends) if end + TAG_GAP <= left), None)
            tag.setVisible(row is not None)
            if row is not None:
                ends[row] = left + w
                # the lower row next to the plot: the tags nearest their lines are read first
                tag.setPos(left, (TAG_ROWS - 1 - row) * line_height + 1)

    def plot_heights(self) -> dict[str, float]:
        """The height in pixels of each plot, axes included (tests)."""
        return {"loss": self.loss.geometry().height(), "lr": self.lr_plot.geometry().height()}

    def show_history(self, history: LossHistory, total_steps: int | None = None) -> None:
        """Draw a history; the step axis grows in round jumps up to `total_steps` when it is known."""
        self.history, self.total_steps = history, total_steps
        self.train_curve.setData(np.asarray(history.steps, float), np.asarray(history.train, float))
        self.val_curve.setData(np.asarray(history.val_steps, float), np.asarray(history.val, float))
        self.lr_curve.setData(np.asarray(history.steps, float), np.asarray(history.lr, float))
        self._follow_data()

    def _follow_data(self) -> None:
        """Keep the data in view with snapped ranges, unless the user zoomed or panned; pyqtgraph's "A"
        button (auto range) hands the view back."""
        vb = self.loss.vb
        if any(vb.autoRangeEnabled()):
            self.following = True
        if not self.history.steps:  # nothing of an earlier run's ranges stays on an empty plot
            self.following = True
            self.loss.setXRange(0, self.total_steps or 10, padding=0.01)
            self.loss.setYRange(0, 1, padding=0.02)
            self.lr_plot.setYRange(0, 1, padding=0.02)
            return
        if not self.following:
            return
        vb.disableAutoRange()
        self.lr_plot.vb.disableAutoRange()
        right = nice_ceiling(max(self.history.last_step, 10) * 1.02)
        if self.total_steps and self.total_steps >= self.history.last_step:
            right = min(right, self.total_steps)
        self.loss.setXRange(0, right, padding=0.01)
        values = np.asarray(self.history.train + self.history.val, float)
        values = values[np.isfinite(values) & ((values > 0) | (not self.log_box.isChecked()))]
        if values.size:
            if self.log_box.isChecked():
                values = np.log10(values)
            self.loss.setYRange(*snapped_range(float(values.min()), float(values.max())), padding=0.02)
        lr = np.asarray(self.history.lr, float)
        lr = lr[np.isfinite(lr)]
        if lr.size:
            self.lr_plot.setYRange(*snapped_range(0.0, float(lr.max())), padding=0.02)

    def _on_range_changed_manually(self, *_) -> None:
        self.following = False

    def _on_log_toggled(self, on: bool) -> None:
        self.loss.setLogMode(y=on)
        self._follow_data()

    def _on_mouse_moved(self, event) -> None:
        pos = event[0]
        inside = self.loss.sceneBoundingRect().contains(pos) or self.lr_plot.sceneBoundingRect().contains(pos)
        values = self.history.at(self.loss.vb.mapSceneToView(pos).x()) if inside else None
        if values is None:
            self.cursor.hide()
            return
        self.cursor.setPos(values["step"])
        self.cursor.show()
        text = f"step {values['step']:,} · train {values['train_loss']:.4f}"
        if values["val_loss"] is not None:
            text += f" · val {values['val_loss']:.4f}"
        if math.isfinite(values["lr"]):
            text += f" · lr {values['lr']:.2e}"
        self.readout.setText(text)

    def changeEvent(self, event):
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._restyle()

    def _restyle(self) -> None:
        c = plot_colors()
        self.graphics.setBackground(c.background)
        for plot in (self.loss, self.lr_plot):
            style_plot(plot, c)
        self.train_curve.setPen(pg.mkPen(c.train, width=1.5))
        self.val_curve.setPen(pg.mkPen(c.val, width=2))
        self.val_curve.setSymbolBrush(c.val)
        self.val_curve.setSymbolPen(c.val)
        self.lr_curve.setPen(pg.mkPen(c.lr, width=1.5))
        self.cursor.setPen(pg.mkPen(c.accent, width=1, style=Qt.PenStyle.DashLine))
        self._write_key()
        self.band.setPen(c.foreground)
        self.lr_band.setPen(c.foreground)
        for line in self.formations:
            line.setPen(pg.mkPen(c.accent, width=1, style=Qt.PenStyle.DashLine))
        for tag in self.formation_tags:
            tag.setBrush(QColor(c.foreground))
