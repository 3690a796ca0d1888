"""The geometry view (docs/geometries.md): one coefficient G turned into a step by each geometry, side by side.

Fed a plain `engine.analysis.update.UpdateGeometry` (computed off the GUI thread): a heatmap per direction
(Euclidean G, sign G, AdamW's G/(√v̂+ε) where the run has v̂, spectral U Vᵀ) and the applied ΔW, with their
singular-value spectra on one log axis, in a grid that reflows with the view's width; a table of each one's
cosine with G and with ΔW, effective rank and norm (its names in the spectra's colours); and the route
classes' shares of the first-order decrease ⟨G(p), ΔW⟩ over the interval [p, s] that reached
the step, G on the run's fixed probe batch (not the training batches), largest first.
"""

from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtWidgets import QGridLayout, QLabel, QScrollArea, QSplitter, QVBoxLayout, QWidget

from engine.analysis.geometry import GEOMETRIES, LABELS, as_matrix, describe, fractions, why_no_shares

from ...theme import plot_colors, style_plot
from ...widgets.first_sight import PlotOnSight
from ...widgets.heatmap import HeatmapWidget

PANELS = (*GEOMETRIES, "dW")
COLORS = {"euclidean": "#1f77b4", "sign": "#ff7f0e", "adam": "#2ca02c", "spectral": "#d62728", "dW": "#7f7f7f"}
# the table's and the legend's names; in rich text the hat of "v̂" was drawn over the row above
NAMES = {"euclidean": "G", "sign": "sign G", "adam": "AdamW", "spectral": "U Vᵀ", "dW": "ΔW"}
SHORT = {"euclidean": "G (SGD)", "sign": "sign G", "adam": "G/(√v̂+ε) (AdamW)", "spectral": "U Vᵀ (Muon)"}
CELL_WIDTH = 200  # px: the least a map or the spectra is given
TITLE_PAD = 8     # px beside a title in its cell
SHARES_SHOWN = 12  # route classes listed (the rest summed in one line)


class GeometryView(QWidget):
    """Directions, spectra and route shares of one weight at one step; `show_result` only sets data.

    The maps and the spectra stand in a grid with as many columns as leave every title whole (one row in a
    wide dock, two in the Weight pane), the numbers and the shares below them."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.maps = {name: HeatmapWidget(title=LABELS.get(name, "applied ΔW"), colorbar=False) for name in PANELS}
        self.summary, self.shares, self.message = QLabel(), QLabel(), QLabel()
        for label in (self.summary, self.shares):
            label.setTextFormat(Qt.TextFormat.RichText)
            label.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.message.setWordWrap(True)
        self.shares.setWordWrap(True)
        self.shares.setToolTip("The first-order decrease of the loss, ⟨G, step⟩, split by route class; G on the "
                               "run's fixed probe batch, not the training batches")
        self.cells = QWidget()
        self.grid = QGridLayout(self.cells)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self._grid_key: tuple = ()
        scroll = QScrollArea()
        scroll.setWidget(self.shares)
        scroll.setWidgetResizable(True)
        lower = QSplitter(Qt.Orientation.Horizontal)
        for w in (self.summary, scroll):
            lower.addWidget(w)
        lower.setSizes([300, 500])
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        split = QSplitter(Qt.Orientation.Vertical)  # the user may give the tables more room, or the maps
        split.addWidget(self.cells)
        split.addWidget(lower)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        col.addWidget(self.message)
        col.addWidget(split, 1)
        self.spectrum_cell = self._build_spectra()
        self.result = None
        self.show_message("Choose a weight and a step: the geometries are computed from the run's saved weights.")
        self._reflow()

    def _build_spectra(self) -> QWidget:
        """The singular-value spectra on one log axis, their colours named below the plot (a legend inside
        it covered the curves of a plot one cell small)."""
        self._spectra: dict[str, np.ndarray] = {}  # direction -> singular values, drawn once the plot is built
        self.spectra = PlotOnSight(_Plot, self._setup_spectra, hint=_Plot.HINT)  # built on first sight
        self.spectra.setToolTip("Each direction's singular values, largest first, over its largest (log scale)")
        self.legend = QLabel()
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        cell = QWidget()
        col = QVBoxLayout(cell)
        col.setContentsMargins(0, 0, 0, 0)
        col.addWidget(self.spectra, 1)
        col.addWidget(self.legend)
        return cell

    def _setup_spectra(self, plot: _Plot) -> None:
        plot.setLogMode(y=True)
        # no title and no x label: in a cell of a 1280×720 screen they left the curves 65 px of height
        plot.setLabel("left", "σ / σ_max")
        plot.curves = {name: plot.plot([], [], pen=pg.mkPen(COLORS[name], width=1.5)) for name in PANELS}
        self._draw_spectra()

    @property
    def curves(self) -> dict:
        """direction -> its spectrum's curve (asked for, the plot is built now)."""
        return self.spectra.curves

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._reflow()

    def _reflow(self) -> None:
        """Lay the shown maps and the spectra out in rows of equal length: as few rows as leave every cell
        as wide as the widest title (and CELL_WIDTH)."""
        cells = [m for m in self.maps.values() if not m.isHidden()] + [self.spectrum_cell]
        need = max([CELL_WIDTH] + [m.title_width() + TITLE_PAD for m in cells[:-1]])
        spacing = max(0, self.grid.horizontalSpacing())
        most = max(1, min(len(cells), (self.width() + spacing) // (need + spacing)))
        rows = -(-len(cells) // most)
        columns = -(-len(cells) // rows)
        key = (columns, tuple(map(id, cells)))
        if key == self._grid_key:
            return
        self._grid_key = key
        for w in [*self.maps.values(), self.spectrum_cell]:
            self.grid.removeWidget(w)
        for i in range(len(PANELS) + 1):
            self.grid.setColumnStretch(i, int(i < columns))
            self.grid.setRowStretch(i, int(i < rows))
        for i, w in enumerate(cells):
            self.grid.addWidget(w, i // columns, i % columns)

    def show_message(self, text: str) -> None:
        self.message.setText(text)

    def clear(self, text: str = "") -> None:
        """Show nothing but `text` until the next result (another run is open)."""
        self.result = None
        self.summary.setText("")
        self.shares.setText("")
        self.cells.hide()
        self.show_message(text)

    def show_result(self, result) -> None:
        """Show an UpdateGeometry (its step, directions, ΔW and shares)."""
        self.result = result
        self.cells.show()
        have = {d.geometry: d for d in result.directions}
        for name, m in self.maps.items():
            d = have.get(name)
            if name == "dW":
                matrix = result.dW if result.dW is not None else np.full_like(as_matrix(result.G), np.nan)
                title = (f"ΔW = W({result.step}) − W({result.prev_step})" if result.dW is not None
                         else "ΔW: none before the first step")
            else:  # the cosines are in the table below, beside the rank and norm: short titles fit a cell
                matrix = d.matrix if d is not None else np.full_like(as_matrix(result.G), np.nan)
                title = SHORT[name]
            m.set_matrix(as_matrix(matrix), kind="signed", title=title)
            m.setVisible(name != "adam" or d is not None)
        self._reflow()
        if result.dW is not None:  # the applied update beside the geometries: its spectrum, rank and norm
            have["dW"] = describe("dW", result.dW, result.G, result.dW)
        self._show_spectra(have)
        self.summary.setText(summary_table(have.values()))
        self.shares.setText(shares_table(result))
        v = f"; second moments of step {result.v_step}" if result.v_step is not None else ""
        self.show_message(f"{result.weight} at step {result.step}: G as a step in each geometry (trained with "
                          f"{result.optimizer}{v})")

    def _show_spectra(self, described: dict) -> None:
        self._spectra = spectra = {name: d.singular_values for name, d in described.items()}
        if self.spectra.built:  # else drawn once built
            self._draw_spectra()
        keys = [f"<span style='color:{COLORS[name]}'>━</span> {html.escape(NAMES[name])}" for name in PANELS
                if name in spectra]
        # three to a line, not word wrap: a label that wraps gives its grid row a height for width, which Qt
        # takes as the row's least height, and the maps of the other row were squeezed to slivers
        self.legend.setText("<br>".join("&nbsp;&nbsp;".join(keys[i:i + 3]) for i in range(0, len(keys), 3)))

    def _draw_spectra(self) -> None:
        for name, curve in self.curves.items():
            s = self._spectra.get(name)
            if s is None or not s.size or s[0] <= 0:
                curve.setData([], [])
                continue
            s = np.maximum(s / s[0], 1e-12)  # relative to the largest, so every geometry shares one axis
            curve.setData(np.arange(1, len(s) + 1, dtype=float), s)


class _Plot(pg.PlotWidget):
    """A plot in the theme's colours (pyqtgraph's black, left as it was, stood out in the light theme)."""

    HINT = QSize(300, 260)

    def __init__(self):
        super().__init__()
        self._restyle()

    def sizeHint(self) -> QSize:
        """A heatmap's, so the grid shares its rows evenly (a graphics view asks for 600×480: the row of
        the spectra squeezed the maps of the other to slivers)."""
        return self.HINT

    def _restyle(self) -> None:
        c, plot = plot_colors(), self.getPlotItem()
        if plot is None:  # a palette change while pyqtgraph builds the view
            return
        self.setBackground(c.background)
        style_plot(plot, c)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._restyle()


def summary_table(directions) -> str:
    """Each direction's cosines, effective rank and norm, its name in its spectrum's colour."""
    rows = "".join(f"<tr><td style='color:{COLORS[d.geometry]}'>{html.escape(NAMES[d.geometry])}</td>"
                   f"<td>{d.cos_G:.3f}</td><td>{d.cos_dW:.3f}</td><td>{d.effective_rank:.1f}</td>"
                   f"<td>{d.norm:.3g}</td></tr>" for d in directions)
    return ("<table cellspacing=4><tr><th>direction</th><th>cos G</th><th>cos ΔW</th><th>eff. rank</th>"
            f"<th>‖·‖</th></tr>{rows}</table>")


def shares_table(result) -> str:
    """The route classes' shares of ⟨G(p), ΔW⟩, largest first, beside each geometry's split of ⟨G(s), D⟩
    (in percent of its own total), as an HTML table."""
    per_geometry = {g: s for g, s in result.direction_shares.items() if s}
    if not result.shares and not per_geometry:
        return "No shares."
    base = result.shares or next(iter(per_geometry.values()))
    ranked = [k for k, _ in sorted(base.items(), key=lambda kv: -kv[1])][:SHARES_SHOWN]
    columns = ([("ΔW", result.shares)] if result.shares else []) + [(SHORT[g], s) for g, s in per_geometry.items()]

    parts = {name: fractions(s) for name, s in columns}

    def cell(name, shares, k):  # a percentage, or the part itself where the parts cancel
        f = parts[name]
        return f"{100 * f.get(k, 0.0):.1f}%" if f is not None else f"{shares.get(k, 0.0):.3g}"

    head = "".join(f"<th>{html.escape(name)}</th>" for name, _ in columns)
    rows = "".join(f"<tr><td>{html.escape(k)}</td>" + "".join(f"<td>{cell(n, s, k)}</td>" for n, s in columns)
                   + "</tr>" for k in ranked)
    why = "".join(f"<br>{html.escape(name)}: {html.escape(why_no_shares(s))}" for name, s in columns
                  if parts[name] is None)
    # two lines, so that a few rows show below them in a 1280×720 window (the probe batch: the tooltip)
    own = f"of each geometry's step from G({result.step})"
    intro = (f"<b>Route classes' shares</b> of ⟨G({result.prev_step}), ΔW⟩ = {sum(result.shares.values()):.3g} (the "
             f"update that reached step {result.step}) and {own}" if result.shares else
             f"No update reached the first saved step. <b>Route classes' shares</b> {own}")
    return f"{intro}:<table cellspacing=4><tr><th>class</th>{head}</tr>{rows}</table>{why}"
