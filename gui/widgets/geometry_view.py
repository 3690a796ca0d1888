"""The geometry view (FORMS.md §8): one coefficient G turned into a step by each geometry, side by side.

Fed a plain `engine.analysis.update.UpdateGeometry` (computed off the GUI thread): a heatmap per direction
(Euclidean G, sign G, AdamW's G/(√v̂+ε) where the run has v̂, spectral U Vᵀ) and the applied ΔW, each titled
with its cosine with G and with ΔW; their singular-value spectra on one log axis with the effective ranks;
and the route classes' shares of the first-order decrease ⟨G(p), ΔW⟩ over the interval [p, s] that reached
the step, G on the run's fixed probe batch (not the training batches), largest first.
"""

from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QScrollArea, QSplitter, QVBoxLayout, QWidget

from engine.analysis.geometry import GEOMETRIES, LABELS, as_matrix

from .heatmap import HeatmapWidget

PANELS = (*GEOMETRIES, "dW")
COLORS = {"euclidean": "#1f77b4", "sign": "#ff7f0e", "adam": "#2ca02c", "spectral": "#d62728", "dW": "#7f7f7f"}
SHORT = {"euclidean": "G (SGD)", "sign": "sign G", "adam": "G/(√v̂+ε) (AdamW)", "spectral": "U Vᵀ (Muon)"}
SHARES_SHOWN = 12  # route classes listed (the rest summed in one line)


class GeometryView(QWidget):
    """Directions, spectra and route shares of one weight at one step; `show_result` only sets data."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.maps = {name: HeatmapWidget(title=LABELS.get(name, "applied ΔW"), colorbar=False) for name in PANELS}
        self.spectra = pg.PlotWidget()
        self.spectra.setLogMode(y=True)
        self.spectra.setLabel("bottom", "singular value index")
        self.spectra.addLegend(offset=(-5, 5))
        self.curves = {name: self.spectra.plot([], [], pen=pg.mkPen(COLORS[name], width=1.5),
                                               name=LABELS.get(name, "applied ΔW").split(":")[0]) for name in PANELS}
        self.summary, self.shares, self.message = QLabel(), QLabel(), QLabel()
        for label in (self.summary, self.shares):
            label.setTextFormat(Qt.TextFormat.RichText)
            label.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.message.setWordWrap(True)
        self.shares.setWordWrap(True)
        row = QHBoxLayout()
        for m in self.maps.values():
            row.addWidget(m, 1)
        maps = QWidget()
        maps.setLayout(row)
        scroll = QScrollArea()
        scroll.setWidget(self.shares)
        scroll.setWidgetResizable(True)
        lower = QSplitter(Qt.Orientation.Horizontal)
        for w in (self.spectra, self.summary, scroll):
            lower.addWidget(w)
        lower.setSizes([560, 340, 500])
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        col.addWidget(self.message)
        col.addWidget(maps, 3)
        col.addWidget(lower, 2)
        self.result = None
        self.show_message("Choose a weight and a step: the geometries are computed from the run's saved weights.")

    def show_message(self, text: str) -> None:
        self.message.setText(text)

    def show_result(self, result) -> None:
        """Show an UpdateGeometry (its step, directions, ΔW and shares)."""
        self.result = result
        have = {d.geometry: d for d in result.directions}
        for name, m in self.maps.items():
            d = have.get(name)
            if name == "dW":
                matrix = result.dW if result.dW is not None else np.full_like(as_matrix(result.G), np.nan)
                title = (f"applied ΔW = W({result.step}) − W({result.prev_step})" if result.dW is not None
                         else "ΔW: none before the first step")
            else:
                matrix = d.matrix if d is not None else np.full_like(as_matrix(result.G), np.nan)
                title = (f"{SHORT[name]} · cos ΔW {d.cos_dW:.3f}" if d is not None
                         else f"{SHORT[name]}: no v̂ (no AdamW trained this weight)")
            m.set_matrix(as_matrix(matrix), kind="signed", title=title)
            m.setVisible(name != "adam" or d is not None)
        self._show_spectra(result, have)
        self.summary.setText(summary_table(result))
        self.shares.setText(shares_table(result))
        v = f"; v̂ from the checkpoint at step {result.v_step}" if result.v_step is not None else ""
        self.show_message(f"{result.weight} at step {result.step}: G turned into a step by each geometry "
                          f"(run trained with {result.optimizer}{v})")

    def _show_spectra(self, result, have) -> None:
        from engine.analysis.geometry import describe

        spectra = {name: d.singular_values for name, d in have.items()}
        if result.dW is not None:
            spectra["dW"] = describe("dW", result.dW, result.G, result.dW).singular_values
        for name, curve in self.curves.items():
            s = spectra.get(name)
            if s is None or not s.size or s[0] <= 0:
                curve.setData([], [])
                continue
            s = np.maximum(s / s[0], 1e-12)  # relative to the largest, so every geometry shares one axis
            curve.setData(np.arange(1, len(s) + 1, dtype=float), s)
        self.spectra.setLabel("left", "σ / σ_max")


def summary_table(result) -> str:
    rows = "".join(f"<tr><td>{html.escape(d.geometry)}</td><td>{d.cos_G:.3f}</td><td>{d.cos_dW:.3f}</td>"
                   f"<td>{d.effective_rank:.1f}</td><td>{d.norm:.3g}</td></tr>" for d in result.directions)
    return ("<table cellspacing=4><tr><th>geometry</th><th>cos G</th><th>cos ΔW</th><th>eff. rank</th>"
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

    def pct(shares, k):
        total = sum(shares.values())
        return f"{100 * shares.get(k, 0.0) / total:.1f}%" if total else "–"

    head = "".join(f"<th>{html.escape(name)}</th>" for name, _ in columns)
    rows = "".join(f"<tr><td>{html.escape(k)}</td>" + "".join(f"<td>{pct(s, k)}</td>" for _, s in columns)
                   + "</tr>" for k in ranked)
    intro = (f"⟨G({result.prev_step}), ΔW⟩ = {sum(result.shares.values()):.3g} over the update that reached step "
             f"{result.step}" if result.shares else "No update reached the first saved step")
    return (f"<b>Route classes' shares of the first-order decrease</b> (G on the fixed probe batch). {intro}; "
            f"each geometry's step from G({result.step}) split the same way.<table cellspacing=4><tr><th>class</th>"
            f"{head}</tr>{rows}</table>")
