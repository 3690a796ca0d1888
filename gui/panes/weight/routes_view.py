"""Which routes the optimizer used over training (docs/geometries.md, issue 13): the Weight pane's "Routes" tab.

It draws the tab's view model (engine/views/weight_tabs.py's RoutesView, answered by the analysis process's
RunAnalysis.route_shares): the plain `engine.analysis.routes.RouteShares`, one line per route class, its share ⟨G_c(p), ΔW⟩ of the
first-order decrease of the probe loss over each interval [p, s] of saved steps, drawn at s, beside their
sum ⟨G(p), ΔW⟩ (bold). The scope is the weight on screen or the whole model (every weight summed); the
direction is the update the run applied or the step a geometry would have taken from G(p). Below, the ranking of routes over training: each class's
fraction of the whole decrease under the applied update and under each geometry, so a user sees which
routes the optimizer descended along and how another geometry would have split its step.

The tab's view model needs one long question, of the weight or of the whole model: for a large model the analysis
process sums every weight an interval at a time in one pass, without any class's matrix (engine/analysis/routes.py
model_interval: GPT-2 small's interval in minutes, see docs/figures.md#gpt-2-small); a small model's weights are
each split. Its progress is shown with the time left.
"""

from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QScrollArea, QVBoxLayout, QWidget

from engine.analysis.geometry import why_no_shares
from engine.analysis.routes import APPLIED, NOTE
from engine.views.weight import shown_weight

from ...binding import bind
from ...theme import color_of, plot_colors, recolor_legend
from ...widgets.first_sight import when_built
from .charts import _Chart, cached

SCOPES = ("this weight", "whole model")
SHORT = {APPLIED: "applied ΔW", "euclidean": "Euclidean G", "sign": "sign G", "spectral": "spectral U Vᵀ"}
RANKED = 8  # classes in the ranking table


class RoutesChart(_Chart):
    """⟨G_c(p), D⟩ per route class over the intervals, and their sum."""

    def add_plots(self) -> None:
        self.legend = pg.LegendItem(labelTextSize="8pt", verSpacing=-6)
        self.plot = self.add_plot(0, "⟨G_c(p), ΔW⟩")
        self.plot.setLabel("bottom", "step s (interval [p, s])")
        self.plot.setTitle(NOTE, size="8pt")
        self.graphics.addItem(self.legend, row=0, col=1)
        self.curves: dict[str, pg.PlotDataItem] = {}

    def _restyle(self) -> None:
        super()._restyle()
        if hasattr(self, "legend"):
            recolor_legend(self.legend, plot_colors().foreground)
        if "Σ" in getattr(self, "curves", {}):  # Σ is drawn in the text colour
            self.curves["Σ"].setPen(pg.mkPen(plot_colors().foreground, width=2.5))

    @when_built
    def show_shares(self, shares, direction: str) -> None:
        for item in self.curves.values():
            self.plot.removeItem(item)
        self.legend.clear()
        self.curves = {}
        steps = np.asarray(shares.steps, float)
        self.plot.setLabel("left", f"⟨G_c(p), {SHORT.get(direction, direction)}⟩")
        total = cached(self.plot.plot(steps, shares.total(direction), pen=pg.mkPen(plot_colors().foreground, width=2.5)))
        self.curves["Σ"] = total
        self.legend.addItem(total, "Σ classes = ⟨G(p), D⟩")
        for i, name in enumerate(shares.classes):
            curve = cached(self.plot.plot(steps, shares.shares[direction][:, i], pen=pg.mkPen(color_of(i), width=1.5)))
            self.curves[name] = curve
            self.legend.addItem(curve, name)
        self.plot.enableAutoRange()


def ranking_table(shares) -> str:
    """HTML: the classes ranked by their summed share under the applied update, each one's fraction of the
    whole decrease under it and under each geometry."""
    directions = shares.directions
    fractions = {d: shares.fractions(d) for d in directions}
    head = "".join(f"<th>{html.escape(SHORT.get(d, d))}</th>" for d in directions)
    rows = []
    for rank, (name, value) in enumerate(shares.ranking()[:RANKED], 1):
        cells = "".join(f"<td align='right'>{100 * fractions[d][name]:.1f}%</td>" if fractions[d] is not None
                        else "<td align='right'>undefined</td>" for d in directions)
        rows.append(f"<tr><td>{rank}. {html.escape(name)}</td><td align='right'>{value:.3g}</td>{cells}</tr>")
    more = len(shares.classes) - RANKED
    tail = f"<br>…and {more} more classes" if more > 0 else ""
    tail += "".join(f"<br>{html.escape(SHORT.get(d, d))}: {html.escape(why_no_shares(shares.sums(d)))}"
                    for d in directions if fractions[d] is None)
    return (f"<b>Routes over training</b> ({NOTE}): Σ over intervals of ⟨G_c(p), ΔW⟩, and each class's "
            f"fraction of the decrease per direction<table cellspacing='6'><tr><th>class</th><th>Σ share</th>"
            f"{head}</tr>{''.join(rows)}</table>{tail}")


class RoutesView(QWidget):
    """The chart, its scope and direction choices (bound to the tab's view model), and the ranking; `draw()`
    shows what the view model holds at the workspace's weight."""

    def __init__(self, view, workspace, parent: QWidget | None = None):
        super().__init__(parent)
        self.view, self.workspace = view, workspace
        self.result = None
        self.scope_box, self.direction_box = QComboBox(), QComboBox()
        self.scope_box.addItems(SCOPES)
        self.scope_box.setToolTip("The weight on screen, or every weight of the model summed (a ranking of routes)")
        self.direction_box.setToolTip("Split the update the run applied, or the step a geometry would take from G(p)")
        self.chart = RoutesChart()
        self.message, self.ranking = QLabel(), QLabel()
        self.message.setWordWrap(True)
        self.ranking.setTextFormat(Qt.TextFormat.RichText)
        self.ranking.setWordWrap(True)  # the heading's sentence wraps instead of scrolling sideways
        for box in (self.scope_box, self.direction_box):
            box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.ranking.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        scroll = QScrollArea()
        scroll.setWidget(self.ranking)
        scroll.setWidgetResizable(True)
        row = QHBoxLayout()
        for w in (QLabel("Scope:"), self.scope_box, QLabel("Direction:"), self.direction_box, self.message):
            row.addWidget(w)
        row.setStretch(4, 1)
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        col.addLayout(row)
        col.addWidget(self.chart, 3)
        col.addWidget(scroll, 2)
        bind(self.scope_box, view, "whole", values=(False, True))
        bind(self.direction_box, view, "direction")
        view.changed.connect(lambda name: self._draw() if name == "direction" else None)

    @property
    def whole_model(self) -> bool:
        return self.view.whole

    def draw(self) -> None:
        v, ws = self.view, self.workspace
        shares = v.shown(ws)
        key = v.key(ws)
        failure = v.failures.get(key[0]) if key is not None else None
        if shares is not None and shares is not self.result:
            self.show_result(shares)
        elif shares is None and self.result is not None:
            self.clear()
        if failure is not None:
            self.show_message(failure)
        elif shares is None and key is not None:
            what = "the whole model (every weight summed)" if v.whole else shown_weight(ws)
            progress = f" ({v.progress})" if v.progress is not None else ""
            self.show_message(f"computing the route shares of {what} over every saved step…{progress}")

    def show_message(self, text: str) -> None:
        self.message.setText(text)

    def clear(self) -> None:
        """Show nothing (another run or weight, asked now)."""
        self.result = None
        self.chart.hide()
        self.ranking.setText("")
        self.show_message("")

    def show_result(self, shares) -> None:
        self.result = shares
        self.chart.show()
        chosen = self.view.direction
        self.direction_box.blockSignals(True)
        self.direction_box.clear()
        for d in shares.directions:
            self.direction_box.addItem(SHORT.get(d, d), d)
        self.direction_box.setCurrentIndex(max(0, self.direction_box.findData(chosen)))
        self.direction_box.blockSignals(False)
        what = shares.weight if shares.weight is not None else "the whole model (every weight summed)"
        self.message.setText(f"{what}: {len(shares.steps)} intervals" if len(shares.steps) else
                             f"{what}: no update yet (a share needs two saved steps)")
        self._draw()

    def _draw(self) -> None:
        shares = self.result
        if shares is None or not len(shares.steps):
            self.ranking.setText("")
            return
        self.chart.show_shares(shares, self.direction_box.currentData() or APPLIED)
        self.ranking.setText(ranking_table(shares))
