"""The Attention tab of the heatmaps pane: every layer × head as one grid (or the chosen head large, or the
chosen layer's heads as lines between tokens), a per-head table of entropy and distance attended, and the
chosen head step by step.

Render-only: it takes an AttentionResult (engine.analysis.attention) and slices it for the chosen layer
and head, which it reads through `chosen()` (the pane's: the workspace's selection) each time it draws.
Attention is softmax(Q Kᵗ/√d_k + M) (Vaswani et al. 2017, §3.2.1).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QButtonGroup, QHeaderView, QLabel, QRadioButton, QSplitter,
                               QStackedWidget, QStyle, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from engine.figures import export
from engine.analysis.attention import AttentionResult

from ...screen_fit import PLOT_MIN
from ...widgets.attention_lines import MIN_PITCH, AttentionLinesWidget
from ...widgets.heatmap import HeatmapWidget
from ...widgets.heatmap_grid import HeatmapGrid
from ...widgets.tiles import Tiles, row_of
from .chosen import ChosenHead

QK = "QKᵀ/√dₖ"


class AttentionView(QWidget, ChosenHead):
    """Every layer × head as one grid (or the chosen head large), a per-head summary table, and the chosen
    head step by step: scores, mask, scores after the mask, weights."""

    sig_head_chosen = Signal(int, int)

    def __init__(self, chosen: Callable[[], tuple[int, int]] = lambda: (0, 0), parent: QWidget | None = None):
        super().__init__(parent)
        self.result: AttentionResult | None = None
        self.chosen = chosen  # () -> (layer, head) chosen, read each time they are drawn
        self._heads = 1
        self._shape: tuple[int, int, int] | None = None  # (layers, heads, tokens) the layout was fitted to
        self.grid = HeatmapGrid(title="every layer × head (click a tile)")
        self.single = HeatmapWidget(title="attention weights")
        self.lines = AttentionLinesWidget()
        self.stack = QStackedWidget()
        self.stack.addWidget(self.grid)
        self.stack.addWidget(self.single)
        self.stack.addWidget(self.lines)
        self.mode = QButtonGroup(self)
        every, one = QRadioButton("every layer and head"), QRadioButton("one head, large")
        lines = QRadioButton("lines, one layer")
        lines.setToolTip("The chosen layer's heads as lines between tokens, one colour per head (hover a token)")
        every.setChecked(True)
        self.mode.addButton(every, 0)
        self.mode.addButton(one, 1)
        self.mode.addButton(lines, 2)
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

        for heatmap in (self.grid, self.single, *self.steps):
            # each plot keeps PLOT_MIN however low the tab: a low one scrolls (at 1000×650 the four below
            # were ~75 px, a ~30 px matrix each)
            heatmap.keep_plot_height(PLOT_MIN)

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
        bottom = self._tiles = Tiles(self.steps)
        split = self._split = QSplitter(Qt.Orientation.Vertical)
        split.setChildrenCollapsible(False)  # the four small panels never shrink to slivers
        split.addWidget(top)
        split.addWidget(bottom)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(row_of(every, one, lines))
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
            self.grid.select_tile(*self.chosen())
        if details or self.stack.currentIndex() > 0:
            self._show_table(result)
            self._render_head()
        else:
            self._show_summary()

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
            self.table.selectRow(self.layer * H + self.head)

    def show_chosen(self) -> None:
        """Another layer or head is chosen: outline it and re-slice what is there."""
        self.grid.select_tile(self.layer, self.head)
        self.table.selectRow(self.layer * self._heads + self.head)
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
            self.single.set_matrix(maps.weights[l, h], t, t, "probability",
                                   f"attention weights · {where} · step {self.result.step}", "query", "key")
        elif self.stack.currentIndex() == 2:
            self.lines.set_layer(maps.weights[l], t, l, self.result.step)
        levels = export.levels_for(maps.scores[l, h], "signed")  # one scale before and after the mask
        self.steps[0].set_matrix(maps.scores[l, h], t, t, "signed", f"scores {QK} · {short}", "query", "key")
        self.steps[1].set_matrix(np.where(maps.mask, 1.0, np.nan), t, t, "probability", "mask", "query", "key")
        self.steps[2].set_matrix(maps.masked[l, h], t, t, "signed", f"after the mask · {short}", "query", "key",
                                 levels=levels)
        self.steps[3].set_matrix(maps.weights[l, h], t, t, "probability", f"softmax · {short}", "query", "key")
        self._show_summary()

    def _show_summary(self) -> None:
        """The chosen head's numbers at the result's step: a label, cheap, so it follows every frame the
        grid shows (it stayed at the last detailed frame: "step 0" beside a grid at step 10)."""
        maps, l, h = self.result.maps, self.layer, self.head
        if l >= self.result.entropy.shape[0] or h >= self.result.entropy.shape[1]:
            return
        uniform = np.log(maps.mask.sum(axis=1)).mean()
        self.summary.setText(
            f"<b>layer {l} · head {h}</b> · step {self.result.step}: entropy of the attention rows "
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
        most = 2 * total // 3
        if self.stack.currentIndex() == 2:  # lines: a row per token, as many as fit (three quarters at most)
            want, most = T * MIN_PITCH + 60, 3 * total // 4
        # the four one-head views below keep room for a readable matrix each (a GPT-2 grid, square, took two
        # thirds and left them ~8 px)
        need = self._tiles.height_for(self._tiles.width() or self.width())
        top = max(total // 3, min(want, most, total - need))
        self._split.setSizes([top, total - top])

    def _on_mode_toggled(self, mode: int, checked: bool) -> None:
        if checked:
            self.stack.setCurrentIndex(mode)
            self._fit_split()
            if self.result is not None:
                self.show_result(self.result)
