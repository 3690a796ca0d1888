"""A grid of many matrices (every layer × head) as ONE mosaic image in a HeatmapWidget.

One `ImageItem` for the whole grid, not one per tile: measured here, 48 separate 64×64 items refreshed 13
times a second and held the event loop ~75 ms a frame, the same pixels as one item 46–62 times a second
(docs/figures.md). Tiles are separated by a one-cell gap of NaN, painted over in the
background colour by one path item so a gap never reads as "masked". Hover names the tile and the cell,
a click selects a tile, and Export… writes one subplot per tile (or the whole stack as CSV/NPY).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Signal
from PySide6.QtGui import QFont, QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsPathItem, QGraphicsRectItem, QWidget

from engine.figures import export

from .. import theme
from .axis_ticks import labelled, tick_plan
from .heatmap import HeatmapWidget

GAP = 1  # cells between tiles


def mosaic(stack: np.ndarray, gap: int = GAP) -> np.ndarray:
    """(R, C, n, m) -> (R·(n+gap) − gap, C·(m+gap) − gap): tile (r, c) at rows r·(n+gap)…, NaN gaps."""
    R, C, n, m = stack.shape
    padded = np.full((R, C, n + gap, m + gap), np.nan, dtype=np.float32)
    padded[:, :, :n, :m] = stack
    whole = padded.transpose(0, 2, 1, 3).reshape(R * (n + gap), C * (m + gap))
    return whole[: R * (n + gap) - gap, : C * (m + gap) - gap]


class HeatmapGrid(HeatmapWidget):
    sig_tile_clicked = Signal(int, int)  # tile row, tile column (layer, head)

    def __init__(self, parent: QWidget | None = None, *, title: str = "",
                 tile_names: tuple[str, str] = ("layer", "head"),
                 cell_names: tuple[str, str] = ("query", "key")):
        self._stack = np.full((1, 1, 1, 1), np.nan, dtype=np.float32)
        self._tile_names, self._cell_names = tile_names, cell_names
        self._tokens: tuple[list[str], list[str]] = (["0"], ["0"])
        self._gaps: QGraphicsPathItem | None = None     # built with the plot
        self._outline: QGraphicsRectItem | None = None
        self._selected: tuple[int, int] | None = None
        super().__init__(parent, title=title)
        self.sig_cell_clicked.connect(self._on_cell_clicked)

    def _build_view(self, colorbar: bool, aspect_locked: bool) -> None:
        super()._build_view(colorbar, aspect_locked)
        self._gaps = QGraphicsPathItem()
        self._gaps.setZValue(5)
        self._outline = QGraphicsRectItem()
        self._outline.setZValue(6)
        self._outline.hide()
        self._plot.addItem(self._gaps)
        self._plot.addItem(self._outline)
        self._draw_gaps()
        if self._selected is not None:
            self.select_tile(*self._selected)

    def stack(self) -> np.ndarray:
        return self._stack

    def set_stack(self, stack, row_labels=None, col_labels=None, kind: str = "probability",
                  title: str | None = None, levels: tuple[float, float] | None = None) -> None:
        """Show a (R, C, n, m) stack; labels name the n rows and m columns of every tile."""
        a = export.display_matrix(stack).astype(np.float32)
        if a.ndim != 4:
            raise ValueError(f"a grid needs a (rows, columns, n, m) stack, got shape {a.shape}")
        layout_changed = a.shape != self._stack.shape
        self._stack = a
        self._tokens = (export.axis_labels(row_labels, a.shape[2]), export.axis_labels(col_labels, a.shape[3]))
        self.set_matrix(mosaic(a), kind=kind, title=title, row_title=self._tile_names[0],
                        col_title=self._tile_names[1], levels=levels)
        if layout_changed:
            self._draw_gaps()
            self.select_tile(*(self._selected or (0, 0)))

    def tile_at(self, row: int, col: int) -> tuple[int, int, int, int] | None:
        """(tile row, tile column, row in tile, column in tile) of a mosaic cell; None in a gap."""
        _, _, n, m = self._stack.shape
        r, i = divmod(row, n + GAP)
        c, j = divmod(col, m + GAP)
        return None if i >= n or j >= m else (r, c, i, j)

    def select_tile(self, r: int, c: int) -> None:
        """Outline tile (r, c), the one the detail views show."""
        R, C, n, m = self._stack.shape
        if not (0 <= r < R and 0 <= c < C):
            if self._outline is not None:
                self._outline.hide()
            return
        self._selected = (r, c)
        if self._outline is None:
            return  # outlined when the plot is built
        self._outline.setRect(QRectF(c * (m + GAP), r * (n + GAP), m, n))
        self._outline.show()

    def describe(self, row: int, col: int):
        tile = self.tile_at(row, col)
        if tile is None:
            return None
        r, c, i, j = tile
        (a, b), (q, k) = self._tile_names, self._cell_names
        return (f"{a} {r} · {b} {c} · {q} {i} {self._tokens[0][i]}", f"{k} {j} {self._tokens[1][j]}",
                float(self._stack[r, c, i, j]))

    def export_job(self):
        stack, (rows, cols), (a, b) = self._stack, self._tokens, self._tile_names
        kw = dict(row_labels=rows, col_labels=cols, kind=self.kind, title=self.title(),
                  tile_title=f"{a} {{0}} · {b} {{1}}", axis_names=(a, b) + self._cell_names,
                  levels=self.levels, value_title=self.value_title(), caption=self.export_caption(),
                  cmap=self._cmap_name)
        return functools.partial(export.export_grid, stack=stack, **kw)

    def _update_ticks(self, *_) -> None:
        """Label each layer and head that fits at the current size and zoom, in a smaller font before fewer
        (axis_ticks.tick_plan, as the one-matrix heatmap): at 1000×650 GPT-2's twelve heads were labelled in
        tiles 14 px wide and "8 9 10 11" ran together."""
        if self._view is None:
            return
        R, C, n, m = self._stack.shape
        vb = self._plot.vb
        (x0, x1), (y0, y1) = vb.viewRange()
        key = []
        for name, count, size, span, pixels in (("left", R, n, y1 - y0, vb.height()),
                                                ("bottom", C, m, x1 - x0, vb.width())):
            labels = tuple(str(t) for t in range(count))
            per_tile = pixels * (size + GAP) / span if span > 0 and pixels > 0 else math.inf  # not laid out
            plan = tick_plan(per_tile, lambda pt: self._label_size(labels, name == "bottom", pt),
                             self._tick_font.pointSizeF())
            key.append((name, plan, labels, size))
        key = ("grid", R, C, n, m, *key)
        if key == self._tick_key:
            return
        self._tick_key = key
        for name, plan, labels, size in key[5:]:
            axis = self._plot.getAxis(name)
            if axis.style["tickFont"] is None or axis.style["tickFont"].pointSizeF() != plan.point_size:
                font = QFont(self._tick_font)
                font.setPointSizeF(plan.point_size)
                axis.setStyle(tickFont=font)
            shown = [int(i) for i, _ in labelled(list(labels), plan.step)]
            axis.setTicks([[(t * (size + GAP) + size / 2, labels[t]) for t in shown]])

    def _draw_gaps(self) -> None:
        if self._gaps is None:
            return  # drawn when the plot is built
        R, C, n, m = self._stack.shape
        height, width = R * (n + GAP) - GAP, C * (m + GAP) - GAP
        path = QPainterPath()
        for c in range(1, C):
            x = c * (m + GAP) - GAP / 2
            path.moveTo(x, 0)
            path.lineTo(x, height)
        for r in range(1, R):
            y = r * (n + GAP) - GAP / 2
            path.moveTo(0, y)
            path.lineTo(width, y)
        self._gaps.setPath(path)

    def _restyle(self) -> None:
        super()._restyle()
        if self._gaps is None:
            return  # the plot is not built yet, or is being built and its overlay comes next
        colors = theme.plot_colors()
        gap_pen = QPen(pg.mkColor(colors.background))
        gap_pen.setWidthF(GAP)  # in scene units: exactly covers the gap cells
        self._gaps.setPen(gap_pen)
        outline = pg.mkPen(colors.accent, width=2)
        outline.setCosmetic(True)
        self._outline.setPen(outline)

    def _on_cell_clicked(self, row: int, col: int) -> None:
        tile = self.tile_at(row, col)
        if tile is not None:
            self.select_tile(tile[0], tile[1])
            self.sig_tile_clicked.emit(tile[0], tile[1])
