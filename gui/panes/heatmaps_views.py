"""The three tabs of the heatmaps pane: attention, masks, positional encodings. Render-only views.

Each view takes a finished result (gui.panes.heatmaps_compute) and the selected layer and head, and hands
arrays to HeatmapWidgets; choosing another head re-slices the arrays it already has. Controls that need a
new computation (the band β, the shift k) are emitted as signals for the pane to act on.
Attention is softmax(Q Kᵗ/√d_k + M) (Vaswani et al. 2017, §3.2.1); the shift map is the linear-offset
property of sinusoidal encodings (§3.5).
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QButtonGroup, QGridLayout, QHBoxLayout, QHeaderView, QLabel, QRadioButton,
                               QSizePolicy, QSlider, QSpinBox, QSplitter, QStyle, QStackedWidget, QTableWidget,
                               QTableWidgetItem, QVBoxLayout, QWidget)

from engine import export

from .. import theme
from ..widgets.heatmap import HeatmapWidget
from ..widgets.heatmap_grid import HeatmapGrid
from .heatmaps_compute import AttentionResult, MasksResult, PositionalResult

QK = "QKᵀ/√dₖ"


def _row(*widgets: QWidget, stretch: bool = True) -> QHBoxLayout:
    row = QHBoxLayout()
    row.setContentsMargins(0, 0, 0, 0)
    for w in widgets:
        row.addWidget(w)
    if stretch:
        row.addStretch(1)
    return row


class Tiles(QWidget):
    """Widgets in one row or in rows of two, whichever gives each the larger square (heatmaps keep their
    aspect, so a wide, short area wants one row and a tall one two)."""

    def __init__(self, widgets: list[QWidget], parent: QWidget | None = None):
        super().__init__(parent)
        self._widgets, self._columns = widgets, 0
        self._grid = QGridLayout(self)
        self._grid.setContentsMargins(0, 0, 0, 0)
        self._arrange(min(2, len(widgets)))  # a row of all would set a minimum width before any resize

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        w, h, n = event.size().width(), event.size().height(), len(self._widgets)

        def side(columns: int) -> float:
            return min(w / columns, h / -(-n // columns))

        self._arrange(max({n, min(2, n)}, key=side))

    def _arrange(self, columns: int) -> None:
        if columns == self._columns:
            return
        self._columns = columns
        for w in self._widgets:
            self._grid.removeWidget(w)
        for i, w in enumerate(self._widgets):
            self._grid.addWidget(w, i // columns, i % columns)


class AttentionView(QWidget):
    """Every layer × head as one grid (or the chosen head large), a per-head summary table, and the chosen
    head step by step: scores, mask, scores after the mask, weights."""

    sig_head_chosen = Signal(int, int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.result: AttentionResult | None = None
        self.layer = self.head = 0
        self._heads = 1
        self._shape: tuple[int, int, int] | None = None  # (layers, heads, tokens) the layout was fitted to
        self.grid = HeatmapGrid(title="every layer × head (click a tile)")
        self.single = HeatmapWidget(title="attention weights")
        self.stack = QStackedWidget()
        self.stack.addWidget(self.grid)
        self.stack.addWidget(self.single)
        self.mode = QButtonGroup(self)
        every, one = QRadioButton("every layer and head"), QRadioButton("one head, large")
        every.setChecked(True)
        self.mode.addButton(every, 0)
        self.mode.addButton(one, 1)
        self.summary = QLabel(" ")
        self.summary.setWordWrap(True)
        # two lines, fixed: a label that changes height re-lays out every view below it, every frame
        self.summary.setFixedHeight(2 * self.summary.fontMetrics().lineSpacing() + 4)
        self.summary.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.table = QTableWidget(0, 2)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableWidget.SelectionMode.SingleSelection)
        self.table.setWordWrap(False)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.setHorizontalHeaderLabels(["entropy", "distance"])
        self.table.horizontalHeaderItem(0).setToolTip("mean entropy of the head's attention rows, in nats")
        self.table.horizontalHeaderItem(1).setToolTip("mean distance |query − key| attended, in tokens")
        # sized once to its contents (_fit_table): resizing to contents on every new number costs a frame
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 4)
        self.steps = [HeatmapWidget(title=f"scores {QK}"), HeatmapWidget(title="mask"),
                      HeatmapWidget(title="scores after the mask"), HeatmapWidget(title="weights: softmax")]

        top = QSplitter(Qt.Orientation.Horizontal)
        top.addWidget(self.stack)
        side = self._side = QWidget()
        side_layout = QVBoxLayout(side)
        side_layout.setContentsMargins(0, 0, 0, 0)
        side_layout.addWidget(QLabel("per head"))
        side_layout.addWidget(self.table, 1)
        top.addWidget(side)
        top.setStretchFactor(0, 1)
        top.setStretchFactor(1, 0)
        bottom = Tiles(self.steps)
        split = self._split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(top)
        split.addWidget(bottom)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(_row(every, one))
        layout.addWidget(self.summary)
        layout.addWidget(split, 1)

        self.mode.idToggled.connect(self._on_mode_toggled)
        self.grid.sig_tile_clicked.connect(self.sig_head_chosen)
        self.table.cellClicked.connect(lambda row, _col: self.sig_head_chosen.emit(*divmod(row, self._heads)))

    def show_result(self, result: AttentionResult, details: bool = True) -> None:
        """Show a result; with details=False only the grid (the pane skips the rest between frames while
        training runs fast: four more views and the table cost more than the grid)."""
        self.result = result
        if self.stack.currentIndex() == 0:
            maps = result.maps
            self.grid.set_stack(maps.weights, maps.tokens, maps.tokens, kind="probability",
                                title=f"attention weights · step {result.step}")
        if details or self.stack.currentIndex() == 1:
            self._show_table(result)
            self._render_head()

    def _show_table(self, result: AttentionResult) -> None:
        L, H = result.entropy.shape
        self._heads = H
        if self.table.rowCount() != L * H:
            self.table.setRowCount(L * H)
            self.table.setVerticalHeaderLabels([f"L{i} H{j}" for i in range(L) for j in range(H)])
            for row in range(L * H):
                for col in range(2):
                    self.table.setItem(row, col, QTableWidgetItem())
        for i in range(L):
            for j in range(H):
                self.table.item(i * H + j, 0).setText(f"{result.entropy[i, j]:.2f} nats")
                self.table.item(i * H + j, 1).setText(f"{result.distance[i, j]:.1f} tokens")
        shape = (L, H, len(result.maps.tokens))
        if shape != self._shape:  # a new model or prompt: size the table and the grid to fit, once
            self._shape = shape
            self._fit_table()
            self._fit_split()

    def select(self, layer: int, head: int) -> None:
        self.layer, self.head = layer, head
        self.grid.select_tile(layer, head)
        self.table.selectRow(layer * self._heads + head)
        self._render_head()

    def _render_head(self) -> None:
        if self.result is None:
            return
        maps, l, h = self.result.maps, self.layer, self.head
        if l >= maps.weights.shape[0] or h >= maps.weights.shape[1]:
            return
        where, short = f"layer {l} · head {h}", f"L{l} H{h}"
        t = maps.tokens
        if self.stack.currentIndex() == 1:
            self.single.set_matrix(maps.weights[l, h], t, t, "probability", f"attention weights · {where}",
                                   "query", "key")
        levels = export.levels_for(maps.scores[l, h], "signed")  # one scale before and after the mask
        self.steps[0].set_matrix(maps.scores[l, h], t, t, "signed", f"scores {QK} · {short}", "query", "key")
        self.steps[1].set_matrix(np.where(maps.mask, 1.0, np.nan), t, t, "probability", "mask", "query", "key")
        self.steps[2].set_matrix(maps.masked[l, h], t, t, "signed", f"after the mask · {short}", "query", "key",
                                 levels=levels)
        self.steps[3].set_matrix(maps.weights[l, h], t, t, "probability", f"softmax · {short}", "query", "key")
        uniform = np.log(maps.mask.sum(axis=1)).mean()
        self.summary.setText(
            f"<b>{where}</b> · step {self.result.step}: entropy of the attention rows "
            f"{self.result.entropy[l, h]:.2f} nats (spread evenly over the allowed keys: {uniform:.2f}) · "
            f"mean distance attended {self.result.distance[l, h]:.1f} tokens")

    def _fit_table(self) -> None:
        """Narrow the per-head table to its columns, so the grid takes the rest of the width."""
        t = self.table
        t.resizeColumnsToContents()
        for c in range(t.columnCount()):  # room for longer numbers than the first ones
            t.setColumnWidth(c, t.columnWidth(c) + t.fontMetrics().horizontalAdvance("00"))
        scrollbar = t.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        width = (t.verticalHeader().sizeHint().width() + sum(t.columnWidth(c) for c in range(t.columnCount()))
                 + scrollbar + 2 * t.frameWidth())
        self._side.setFixedWidth(width + 2)

    def _fit_split(self) -> None:
        """Give the grid (or the large view) the height its aspect wants, within a third and two thirds."""
        L, H, T = self._shape or (1, 1, 1)
        rows_per_col = L / H if self.stack.currentIndex() == 0 else 1.0
        total = sum(self._split.sizes())
        want = int(max(self.stack.width() - 70, 100) * rows_per_col) + 70  # + title, axes, colour bar
        top = max(total // 3, min(want, 2 * total // 3))
        self._split.setSizes([top, total - top])

    def _on_mode_toggled(self, mode: int, checked: bool) -> None:
        if checked:
            self.stack.setCurrentIndex(mode)
            self._fit_split()
            if self.result is not None:
                self.show_result(self.result)


class MasksView(QWidget):
    """The mask in force beside causal, banded (β on a slider) and none, and the chosen head's attention
    under each, computed with the same weights."""

    sig_band_changed = Signal(int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.result: MasksResult | None = None
        self.layer = self.head = 0
        self.band = QSlider(Qt.Orientation.Horizontal)
        self.band.setRange(1, 63)
        self.band.setValue(4)
        self.band.setMinimumWidth(160)
        self.band_label = QLabel("β = 4")
        self.note = QLabel(" ")
        self.note.setWordWrap(True)
        self.masks = [HeatmapWidget(colorbar=False) for _ in range(4)]
        self.attention = [HeatmapWidget() for _ in range(4)]
        units = []
        for m, a in zip(self.masks, self.attention):
            unit = QWidget()
            column = QVBoxLayout(unit)
            column.setContentsMargins(0, 0, 0, 0)
            column.addWidget(m, 1)
            column.addWidget(a, 1)
            units.append(unit)
        tiles = Tiles(units)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(_row(QLabel("band β of the banded mask:"), self.band, self.band_label))
        layout.addWidget(self.note)
        layout.addWidget(tiles, 1)
        # scrubbing the slider asks for at most a few recomputations a second (STYLE: pg.SignalProxy)
        self._proxy = pg.SignalProxy(self.band.valueChanged, rateLimit=8, slot=self._on_band_scrubbed)
        self.band.valueChanged.connect(lambda v: self.band_label.setText(f"β = {v}"))

    def set_context(self, n_ctx: int) -> None:
        self.band.setMaximum(max(1, n_ctx - 1))

    def show_result(self, result: MasksResult) -> None:
        self.result = result
        t = result.tokens
        for w, name in zip(self.masks, result.names):
            w.set_matrix(result.masks[name], t, t, "probability", f"mask: {name}", "query", "key")
        self._render_head()

    def select(self, layer: int, head: int) -> None:
        self.layer, self.head = layer, head
        self._render_head()

    def _render_head(self) -> None:
        r = self.result
        if r is None or self.layer >= r.weights[r.in_force].shape[0] or self.head >= r.weights[r.in_force].shape[1]:
            return
        for w, name in zip(self.attention, r.names):
            w.set_matrix(r.weights[name][self.layer, self.head], r.tokens, r.tokens, "probability",
                         f"attention, {name}" if name == r.in_force else f"attention under {name}",
                         "query", "key")
        self.note.setText(f"The mask in force and the alternatives for {len(r.tokens)} tokens; below, layer "
                          f"{self.layer} · head {self.head} at step {r.step} under each mask, with the same "
                          "weights (the whole model runs under that mask).")

    def _on_band_scrubbed(self, args) -> None:
        self.sig_band_changed.emit(int(args[0]))


class PositionalView(QWidget):
    """The encoding matrix, one dimension's curve, the similarity P·Pᵀ, and (sinusoidal) the shift map."""

    sig_shift_changed = Signal(int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.result: PositionalResult | None = None
        self.dimension = QSpinBox()
        self.shift = QSpinBox()
        self.shift.setRange(1, 63)
        self.kind = QLabel(" ")
        self.matrix = HeatmapWidget(aspect_locked=False)
        self.similarity = HeatmapWidget()
        self.shift_map = HeatmapWidget()
        self.curve_plot = pg.PlotWidget()
        self.curve_plot.setMenuEnabled(False)
        self.curve_plot.setLabel("bottom", "position")
        self.curve_plot.showGrid(x=True, y=True, alpha=0.25)
        self.curve = self.curve_plot.plot([], [], symbol="o", symbolSize=3)
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
        layout.addLayout(_row(self.kind, QLabel("dimension j:"), self.dimension,
                              QLabel("shift k:"), self.shift))
        layout.addLayout(grid, 1)
        self.dimension.valueChanged.connect(self._render_curve)
        self.shift.valueChanged.connect(self.sig_shift_changed)
        self._restyle()

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
        self.curve.setData(np.arange(r.P.shape[0]), r.P[:, j])
        self.curve_title.setText(f"dimension {j} of P across positions")

    def _restyle(self) -> None:
        colors = theme.plot_colors()
        self.curve_plot.setBackground(colors.background)
        self.curve.setPen(pg.mkPen(colors.train, width=1.5))
        self.curve.setSymbolBrush(colors.train)
        self.curve.setSymbolPen(None)
