"""The Weight pane's "Interaction" tab: how another weight's update moved this weight's coefficient (the
second-order view, engine/analysis/interaction.py; docs/second-order.md says what each number is).

For the weight on screen B, the weight chosen here A and the browsed step s (the update from the saved step p
before it), on the run's probe batch: −H_BA ΔA, the exact change of G_B from A's update alone and the real
ΔG_B side by side, and below them −H_BA ΔA by the route classes of G_B (the mixed form's route classes:
through which routes of B's coefficient A's update moves it); over training, the part of B's real move that
each other weight's update explains
(|⟨−H_BA ΔA, ΔG_B⟩| stacked to 1, the largest few named); and the model's map at s, pair shares
½⟨ΔB, H_BA ΔA⟩ of the curvature term or ‖H_BA ΔA‖ / ‖ΔG_B‖, whose cell [B, A] opens that pair when clicked.

Every number comes from the analysis process as the answer to a question (Interaction, InteractionRoutes,
InteractionMap of engine/analysis/questions.py), which the tab's view model (engine/views/weight_tabs.py) needs:
the pair and the map at the step on screen first, then the other saved steps' maps, and only while the tab is
shown. This widget binds A and the map's quantity to it and draws what it holds.

A B whose coefficient is round-off at both steps (b_K's is identically zero) is degenerate, by the first-order
check's rule: its moves are drawn blank and said to be round-off, with no cosine, class shares or explained
parts, instead of ratios of round-off (engine/analysis/interaction.py).
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSplitter, QVBoxLayout, QWidget

from engine.analysis import interaction
from engine.model.weight_layout import weight_names
from engine.views.weight import shown_step, shown_weight

from ...binding import bind
from ...widgets.heatmap import HeatmapWidget
from .charts import NormsChart

MAP_KINDS = ("pair shares ½⟨ΔB, H_BA ΔA⟩", "‖H_BA ΔA‖ / ‖ΔG_B‖")
NAMED = 5  # weights named in the stacked chart; the rest are summed as "others"
HELP = ("On the run's probe batch, H the Hessian of the probe loss at the saved step p before s and "
        "ΔW = W(s) − W(p): −H_BA ΔA is how A's update moved B's coefficient G_B to first order; beside it the "
        "exact change from A's update alone and the real ΔG_B. The map's shares ½⟨ΔB, H_BA ΔA⟩ add up to "
        "the curvature term of E(s) − E(p) ≈ −Σ⟨G_W, ΔW⟩ + ½ Σ⟨ΔB, H_BA ΔA⟩ (docs/second-order.md).")


def explained_series(maps: dict, weight: str, named: int = NAMED) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(steps, {A: |⟨−H_BA ΔA, ΔG_B⟩| / ‖ΔG_B‖² per step}) for B = `weight` from the maps answered so far
    (step -> InteractionMap), the `named` largest over training by name and the rest as "others"."""
    steps = np.array(sorted(maps), dtype=float)
    if not len(steps):
        return steps, {}
    first = maps[int(steps[0])]
    row = first.names.index(weight)
    table = np.nan_to_num(np.abs(np.array([maps[int(s)].explained[row] for s in steps])))  # (steps, A)
    order = np.argsort(-table.sum(axis=0))
    parts = {first.names[j]: table[:, j] for j in order[:named]}
    if len(order) > named:
        parts["others"] = table[:, order[named:]].sum(axis=1)
    return steps, parts


def degenerate_steps(maps: dict, weight: str) -> list[int]:
    """The steps of `maps` at which B = `weight` is degenerate (its rows of ratios are NaN, not zero)."""
    return [s for s, m in sorted(maps.items())
            if m.degenerate is not None and m.degenerate[m.names.index(weight)]]


class InteractionView(QWidget):
    """The tab's widgets, drawing the tab's view model (`view`, engine/views/weight_tabs.py's) at the
    workspace's weight (B) and step."""

    sig_pair_clicked = Signal(str, str)  # B, A: a cell of the map was clicked

    def __init__(self, view, workspace, parent: QWidget | None = None):
        super().__init__(parent)
        self.view, self.workspace = view, workspace
        self._build()
        self._names: list[str] = []
        self.kind_box.currentIndexChanged.connect(lambda _i: self._draw_map())
        bind(self.kind_box, view, "map_kind", values=range(len(MAP_KINDS)))
        bind(self.other_box, view, "other")
        self.map.sig_cell_clicked.connect(self._on_cell)

    def _build(self) -> None:
        self.other_box, self.kind_box = QComboBox(), QComboBox()
        self.other_box.setToolTip("A: the weight whose update is asked about (or click a cell of the map)")
        self.kind_box.addItems(MAP_KINDS)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setToolTip(HELP)
        row = QHBoxLayout()
        for w in (QLabel("Other weight A:"), self.other_box, QLabel("Map:"), self.kind_box, self.message):
            row.addWidget(w)
        row.setStretch(4, 1)
        self.routes = QLabel()
        self.routes.setWordWrap(True)
        self.routes.setToolTip("−H_BA ΔA split by the route classes of B's coefficient G_B (docs/route-classes.md): "
                               "each class's share is ⟨its part, −H_BA ΔA⟩ / ‖−H_BA ΔA‖², so the shares add up "
                               "to 100 % and a part that works against the whole is negative")
        self.predicted = HeatmapWidget(title="−H_BA ΔA")
        self.exact = HeatmapWidget(title="exact, from ΔA alone")
        self.real = HeatmapWidget(title="real ΔG_B")
        maps = QSplitter(Qt.Orientation.Horizontal)
        for m in (self.predicted, self.exact, self.real):
            maps.addWidget(m)
        self.chart = NormsChart()
        self.map = HeatmapWidget(title="interaction map")
        self.map_change = QLabel()  # the loss change the map's shares are part of: a line of its own, wrapped,
        self.map_change.setWordWrap(True)  # not a title cut at the pane's edge (issue 40: "E change -0…")
        map_column = QWidget()
        column = QVBoxLayout(map_column)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.map, 1)
        column.addWidget(self.map_change)
        bottom = QSplitter(Qt.Orientation.Horizontal)
        bottom.addWidget(self.chart)
        bottom.addWidget(map_column)
        bottom.setSizes([500, 500])  # the map's names need the room a chart does not
        body = QSplitter(Qt.Orientation.Vertical)
        body.addWidget(maps)
        body.addWidget(bottom)
        body.setSizes([500, 500])
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        col.addLayout(row)
        col.addWidget(self.routes)
        col.addWidget(body, 1)

    # ---- drawing ---------------------------------------------------------------------------

    def set_other(self, name: str) -> None:
        self.view.other = name
        self.draw()

    def draw(self) -> None:
        """What the view model holds at the workspace's B and step (the message says what is being computed)."""
        v, ws = self.view, self.workspace
        names = weight_names(ws.model)
        if names != self._names:
            self._names = names
            self.other_box.blockSignals(True)
            self.other_box.clear()
            self.other_box.addItems(names)
            self.other_box.blockSignals(False)
        other = v.other_weight(ws)
        if other is not None and self.other_box.currentText() != other:  # the model's first, until one is chosen
            self.other_box.blockSignals(True)
            self.other_box.setCurrentText(other)
            self.other_box.blockSignals(False)
        asked = v.questions(ws)
        if asked is None:
            return
        pair, routes = asked
        if pair in v.failures:
            self.message.setText(v.failures[pair])
        elif pair in v.pairs:
            self._draw_pair(v.pairs[pair])
        else:
            self.message.setText(f"computing how {pair.other}'s update moved {pair.weight}'s coefficient at step "
                                 f"{pair.step}…")
        if routes in v.failures:
            self.routes.setText(v.failures[routes])
        elif routes in v.routes:
            r = v.routes[routes]
            self.routes.setText(f"−H_BA ΔA by the route classes of {r.weight}'s coefficient (share of the predicted "
                                f"move along each): {r.words()}")
        else:
            self.routes.setText(f"splitting it by the route classes of {pair.weight}'s coefficient…")
        self._draw_chart()
        self._draw_map()

    def _draw_pair(self, pair) -> None:
        from engine.coefficients import as_matrix  # loaded: the answer unpickled into it

        if pair.degenerate:
            self._draw_round_off(pair)
            return
        shared = max(float(np.max(np.abs(pair.predicted), initial=0)), float(np.max(np.abs(pair.exact), initial=0)))
        levels = (-shared, shared) if shared > 0 else None
        self.predicted.set_matrix(as_matrix(pair.predicted), kind="signed", levels=levels,
                                  title=f"−H_BA ΔA · {pair.cosine_words}")
        self.exact.set_matrix(as_matrix(pair.exact), kind="signed", levels=levels,
                              title=f"exact, from {pair.other}'s update alone")
        self.real.set_matrix(as_matrix(pair.real), kind="signed",
                             title=f"real ΔG_B · steps {pair.prev_step} → {pair.step}")
        self.message.setText(f"{pair.other} → {pair.weight}, steps {pair.prev_step} → {pair.step}: share of the "
                             f"curvature term {pair.share:.3g} (probe batch)")

    def _draw_round_off(self, pair) -> None:
        """A degenerate B: its moves blank, each titled with its size, and the reason in the message."""
        from engine.coefficients import as_matrix

        for view, name, move in ((self.predicted, "−H_BA ΔA", pair.predicted),
                                 (self.exact, f"exact, from {pair.other}'s update alone", pair.exact),
                                 (self.real, f"real ΔG_B · steps {pair.prev_step} → {pair.step}", pair.real)):
            size = float(np.max(np.abs(move), initial=0))
            view.set_matrix(np.full(as_matrix(move).shape, np.nan), kind="signed",
                            title=f"{name} · round-off (largest {size:.1e})")
        self.message.setText(f"{pair.other} → {pair.weight}, steps {pair.prev_step} → {pair.step}: "
                             f"{interaction.degenerate_words(pair.weight)}; nothing here is a move")

    def _on_cell(self, row: int, col: int) -> None:
        m = self.view.maps.get(shown_step(self.workspace))
        if m is not None:
            self.set_other(m.names[col])
            self.sig_pair_clicked.emit(m.names[row], m.names[col])

    # ---- drawing ---------------------------------------------------------------------------

    def _draw_chart(self) -> None:
        maps, weight = self.view.maps, shown_weight(self.workspace)
        if not maps or weight is None:
            return
        steps, parts = explained_series(maps, weight)
        self.chart.show_series(steps, np.ones_like(steps), parts, "shares", weight="")
        self.chart.plot.setLabel("left", f"part of ΔG of {weight} explained")
        degenerate = degenerate_steps(maps, weight)
        self.chart.plot.setTitle(f"{weight} is degenerate (its coefficient round-off) at "
                                 f"{len(degenerate)} of {len(steps)} steps: nothing to explain there"
                                 if degenerate else None)
        self.chart.set_cursor(shown_step(self.workspace))

    def _draw_map(self) -> None:
        step = shown_step(self.workspace)
        failed = next((m for question, m in self.view.failures.items()
                       if type(question).__name__ == "InteractionMap" and question.step == step), None)
        if failed is not None:
            self.map.set_matrix(np.full((1, 1), np.nan), kind="signed", title=failed)
            self.map_change.setText("")
        m = self.view.maps.get(step)
        if m is None:
            return
        shares = self.kind_box.currentIndex() == 0
        matrix = m.shares if shares else m.ratios
        self.map.set_matrix(matrix, row_labels=m.names, col_labels=m.names, kind="signed" if shares else "sequential",
                            title=f"{'pair shares' if shares else '‖H_BA ΔA‖ / ‖ΔG_B‖'} · steps {m.prev_step} → "
                                  f"{m.step}")
        self.map_change.setText(f"E({m.step}) − E({m.prev_step}) = {m.change:.3g}; first and second order predict "
                                f"{m.predicted_change:.3g}, of which the curvature term (the shares' sum) "
                                f"{m.curvature:.3g}")
