"""The Masks tab of the heatmaps pane: the mask in force beside causal, banded (β on a slider) and none,
for the prompt's length, and the chosen head's attention under each, computed with the same weights.
Render-only, from a MasksResult (engine.analysis.attention)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSlider, QVBoxLayout, QWidget

from engine.analysis.attention import BAND, MasksResult

from ...widgets.heatmap import HeatmapWidget
from ...widgets.tiles import Tiles, row_of
from .chosen import ChosenHead


class MasksView(QWidget, ChosenHead):
    """The mask in force beside causal, banded (β on a slider) and none, and the chosen head's attention
    under each, computed with the same weights. β is the pane's view model's (bound by the pane)."""

    def __init__(self, chosen: Callable[[], tuple[int, int]] = lambda: (0, 0), parent: QWidget | None = None):
        super().__init__(parent)
        self.result: MasksResult | None = None
        self.chosen = chosen  # () -> (layer, head) chosen (the pane's: the workspace's selection), read when drawn
        self.band = QSlider(Qt.Orientation.Horizontal)
        self.band.setRange(1, 63)
        self.band.setValue(BAND)
        self.band.setMinimumWidth(160)
        self.band_label = QLabel(f"β = {BAND}")
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
        layout.addLayout(row_of(QLabel("band β of the banded mask:"), self.band, self.band_label))
        layout.addWidget(self.note)
        layout.addWidget(tiles, 1)
        self.band.valueChanged.connect(lambda v: self.band_label.setText(f"β = {v}"))

    def set_context(self, n_ctx: int) -> None:
        self.band.setMaximum(max(1, n_ctx - 1))

    def show_result(self, result: MasksResult) -> None:
        self.result = result
        t = result.tokens
        for w, name in zip(self.masks, result.names):
            w.set_matrix(result.masks[name], t, t, "probability", f"mask: {name}", "query", "key")
        self._render_head()

    def show_chosen(self) -> None:
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
