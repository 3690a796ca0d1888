"""The Positional encodings tab of the heatmaps pane: the encoding matrix P (positions × dimensions), one
dimension's curve across positions, the similarity P·Pᵀ, and for sinusoidal encodings the fixed linear
map M_k with P[p + k] = P[p]·M_k and its error ("Attention is all you need", §3.5). Render-only, from a
PositionalResult (engine.analysis.attention)."""

from __future__ import annotations

import functools

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QGridLayout, QLabel, QSizePolicy, QSpinBox, QVBoxLayout, QWidget

from engine.analysis.attention import SHIFT, PositionalResult

from ... import theme
from ...widgets.first_sight import PlotOnSight
from ...widgets.heatmap import HeatmapWidget
from ...widgets.tiles import row_of


class PositionalView(QWidget):
    """The encoding matrix, one dimension's curve, the similarity P·Pᵀ, and (sinusoidal) the shift map."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.result: PositionalResult | None = None
        self.dimension = QSpinBox()
        self.shift = QSpinBox()
        self.shift.setRange(1, 63)
        self.shift.setValue(SHIFT)
        self.kind = QLabel(" ")
        self.matrix = HeatmapWidget(aspect_locked=False)
        self.similarity = HeatmapWidget()
        self.shift_map = HeatmapWidget()
        self.curve_plot = PlotOnSight(functools.partial(pg.PlotWidget, enableMenu=False), self._setup_curve)  # built on first sight
        self.curve_title = QLabel(" ")
        self.shift_note = QLabel(" ")
        self.shift_note.setWordWrap(True)
        self.shift_note.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        curve_box = QWidget()
        curve_layout = QVBoxLayout(curve_box)
        curve_layout.setContentsMargins(0, 0, 0, 0)
        curve_layout.addWidget(self.curve_title)
        curve_layout.addWidget(self.curve_plot, 1)
        shift_box = QWidget()
        shift_layout = QVBoxLayout(shift_box)
        shift_layout.setContentsMargins(0, 0, 0, 0)
        shift_layout.addWidget(self.shift_map, 1)
        shift_layout.addWidget(self.shift_note)
        grid = QGridLayout()
        grid.setContentsMargins(0, 0, 0, 0)
        grid.addWidget(self.matrix, 0, 0)
        grid.addWidget(self.similarity, 0, 1)
        grid.addWidget(curve_box, 1, 0)
        grid.addWidget(shift_box, 1, 1)
        for i, cell in enumerate((self.matrix, self.similarity, curve_box, shift_box)):
            cell.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)  # share by stretch
            grid.setRowStretch(i // 2, 1)
            grid.setColumnStretch(i % 2, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(row_of(self.kind, QLabel("dimension j:"), self.dimension,
                              QLabel("shift k:"), self.shift))
        layout.addLayout(grid, 1)
        self.dimension.valueChanged.connect(self._render_curve)

    def _setup_curve(self, plot: pg.PlotWidget) -> None:
        plot.setLabel("bottom", "position")
        plot.curve = plot.plot([], [], symbol="o", symbolSize=3)
        self._restyle()
        self._render_curve()

    @property
    def curve(self) -> pg.PlotDataItem:
        """One dimension's curve across positions (asked for, its plot is built now)."""
        return self.curve_plot.curve

    def show_result(self, r: PositionalResult) -> None:
        self.result = r
        n, d = r.P.shape
        self.dimension.setMaximum(d - 1)
        self.shift.setMaximum(max(1, n - 1))
        self.kind.setText(f"<b>{r.kind}</b> positional encoding · step {r.step}")
        self.matrix.set_matrix(r.P, None, None, "signed", f"encoding P ({n} positions × {d} dimensions)",
                               "position", "dimension")
        self.similarity.set_matrix(r.similarity, None, None, "signed", "similarity P·Pᵀ", "position",
                                   "position")
        self.shift_map.setVisible(r.M is not None)
        self.shift.setEnabled(r.M is not None)
        if r.M is None:
            self.shift_note.setText(f"A fixed linear map Mₖ taking the encoding of position p to that of p + k "
                                    f"exists for sinusoidal encodings; this model's are {r.kind}.")
        else:
            self.shift_map.set_matrix(r.M, None, None, "signed", f"shift map Mₖ, k = {r.shift}: "
                                      "P[p + k] = P[p]·Mₖ", "dimension", "dimension")
            self.shift_note.setText(f"Mₖ rotates each (sin, cos) pair of P by k·ω. Largest error "
                                    f"|P[p]·Mₖ − P[p + {r.shift}]| over every p: {r.error.max():.1e}")
        self._render_curve()

    def _render_curve(self) -> None:
        r = self.result
        if r is None:
            return
        j = min(self.dimension.value(), r.P.shape[1] - 1)
        if self.curve_plot.built:  # else drawn once built
            self.curve.setData(np.arange(r.P.shape[0]), r.P[:, j])
        self.curve_title.setText(f"dimension {j} of P across positions")

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and self.curve_plot.built:  # a theme switch: the plot was
            self._restyle()                                                       # left in the old colours

    def _restyle(self) -> None:
        colors = theme.plot_colors()
        self.curve_plot.setBackground(colors.background)
        plot = self.curve_plot.getPlotItem()
        theme.style_plot(plot, colors)
        self.curve.setPen(pg.mkPen(colors.train, width=1.5))
        self.curve.setSymbolBrush(colors.train)
        self.curve.setSymbolPen(None)
