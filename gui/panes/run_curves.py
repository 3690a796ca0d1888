"""Curves of several runs overlaid: train and validation loss, learning rate and tokens/s of the runs ticked
in the run browser, against step, tokens seen or wall time, with TensorBoard's smoothing of the noisy
curves (the raw ones stay faint behind) and a legend naming each run. File → Export… writes the same figure
through matplotlib, or its numbers as CSV (engine/run_curves.py).

The numbers come from the runs' metrics.jsonl files (engine.run_curves.load_curves). While the pane is seen,
a slow timer looks at those files' sizes and reloads only a run whose log grew, so a run training here or
in a terminal draws on; the GUI thread only hands arrays to pyqtgraph.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSlider, QVBoxLayout

from engine.errors import UserError
from engine.run_curves import AXIS_LABELS, METRIC_LABELS, SMOOTHED, RunCurves, export_overlay, load_curves
from engine.runs import METRICS

from ..session import Session
from ..widgets.seen import SeenWidget

EXPORT_FILTERS = "PNG image (*.png);;SVG image (*.svg);;PDF document (*.pdf);;CSV table (*.csv)"
RELOAD_MS = 2000


@dataclass
class CurvesView:
    """What the pane shows: the runs, the x axis and the smoothing weight."""

    paths: list[Path] = field(default_factory=list)
    axis: str = "step"
    smoothing: float = 0.6  # TensorBoard's default


class RunCurvesPane(SeenWidget):
    title = "Run curves"
    object_name = "pane_run_curves"

    def __init__(self, session: Session, parent=None):
        super().__init__(parent)
        self.session = session
        self.view = CurvesView()
        self.curves: dict[Path, RunCurves] = {}
        self._sizes: dict[Path, int] = {}
        self._build()
        self._connect()

    def _build(self) -> None:
        self.axis_box = QComboBox(self)
        self.axis_box.setObjectName("curves_axis")
        for key, label in AXIS_LABELS.items():
            self.axis_box.addItem(label, key)
        self.smooth_slider = QSlider(Qt.Orientation.Horizontal, self)
        self.smooth_slider.setObjectName("curves_smoothing")
        self.smooth_slider.setRange(0, 99)
        self.smooth_slider.setValue(round(self.view.smoothing * 100))
        self.smooth_slider.setToolTip("Exponential moving average of the train loss and tokens/s, as "
                                      "TensorBoard smooths (0: raw)")
        self.smooth_label = QLabel(self)
        self.hint = QLabel("Tick runs in the Runs pane to overlay their curves.", self)
        self.hint.setObjectName("curves_hint")
        self.graphics = pg.GraphicsLayoutWidget(self)
        self.plots = {}
        for i, (metric, label) in enumerate(METRIC_LABELS.items()):
            plot = self.graphics.addPlot(row=i // 2, col=i % 2, title=label)
            plot.showGrid(x=True, y=True, alpha=0.2)
            self.plots[metric] = plot
        self.legend = self.plots["train_loss"].addLegend(offset=(-10, 10))
        for plot in list(self.plots.values())[1:]:
            plot.setXLink(self.plots["train_loss"])
        top = QHBoxLayout()
        top.addWidget(QLabel("x axis", self))
        top.addWidget(self.axis_box)
        top.addSpacing(12)
        top.addWidget(QLabel("smoothing", self))
        top.addWidget(self.smooth_slider, 1)
        top.addWidget(self.smooth_label)
        col = QVBoxLayout(self)
        col.setContentsMargins(4, 4, 4, 4)
        col.addLayout(top)
        col.addWidget(self.hint)
        col.addWidget(self.graphics, 1)
        self._timer = QTimer(self, interval=RELOAD_MS)
        self._show_smoothing()

    def _connect(self) -> None:
        self.session.sig_runs_compared.connect(self._on_runs_compared)
        self.axis_box.currentIndexChanged.connect(self._on_axis_changed)
        self.smooth_slider.valueChanged.connect(self._on_smoothing_changed)
        self._timer.timeout.connect(self._on_timer)

    def export_job(self):
        """File → Export…: the overlaid figure (matplotlib) or its data (CSV)."""
        curves = [self.curves[p] for p in self.view.paths if p in self.curves]
        if not curves:
            return None
        axis, smoothing = self.view.axis, self.view.smoothing
        return EXPORT_FILTERS, "runs.png", lambda path: export_overlay(path, curves, axis, smoothing)

    # ---- data ------------------------------------------------------------------------------

    def _load(self, paths: list[Path]) -> None:
        for path in paths:
            try:
                self.curves[path] = load_curves(path)
                self._sizes[path] = _size(path / METRICS)
            except UserError as e:
                self.curves.pop(path, None)
                self.session.post_message(f"Cannot draw {path.name}: {e}", "warning")

    def _draw(self) -> None:
        for plot in self.plots.values():
            plot.clear()
        self.legend.clear()
        shown = [self.curves[p] for p in self.view.paths if p in self.curves]
        self.hint.setVisible(not shown)
        for i, c in enumerate(shown):
            colour = pg.intColor(i, hues=max(len(shown), 8))
            for metric, plot in self.plots.items():
                if self.view.smoothing and metric in SMOOTHED:
                    faint = pg.mkColor(colour)
                    faint.setAlpha(60)
                    plot.plot(*c.series(metric, self.view.axis), pen=pg.mkPen(faint, width=1))
                symbol = dict(symbol="o", symbolSize=5, symbolBrush=colour) if metric == "val_loss" else {}
                name = c.name if metric == "train_loss" else None
                plot.plot(*c.series(metric, self.view.axis, self.view.smoothing), pen=pg.mkPen(colour, width=1.5),
                          name=name, **symbol)
        for plot in self.plots.values():
            plot.setLabel("bottom", AXIS_LABELS[self.view.axis])

    def legend_names(self) -> list[str]:
        return [label.text for _, label in self.legend.items]

    # ---- handlers --------------------------------------------------------------------------

    def _on_runs_compared(self, paths) -> None:
        self.view.paths = [Path(p) for p in paths]
        for gone in set(self.curves) - set(self.view.paths):
            del self.curves[gone]
        self._load([p for p in self.view.paths if p not in self.curves])
        self._draw()
        self._update_timer()

    def _on_axis_changed(self, _index: int) -> None:
        self.view.axis = self.axis_box.currentData()
        self._draw()

    def _on_smoothing_changed(self, value: int) -> None:
        self.view.smoothing = value / 100
        self._show_smoothing()
        self._draw()

    def _show_smoothing(self) -> None:
        self.smooth_label.setText(f"{self.view.smoothing:.2f}")

    def _on_timer(self) -> None:
        grown = [p for p in self.view.paths if _size(p / METRICS) != self._sizes.get(p)]
        if grown:
            self._load(grown)
            self._draw()

    def _update_timer(self) -> None:
        if self.seen() and self.view.paths:
            self._timer.start()
        else:
            self._timer.stop()

    def seen_changed(self, seen: bool) -> None:
        if seen:
            self._on_timer()
        self._update_timer()


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1
