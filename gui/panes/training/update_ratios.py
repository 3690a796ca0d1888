"""The Training pane's "Update / weight" tab: how far each step moved each weight against its size, ‖ΔW‖ / ‖W‖, as
a weights × steps heatmap of its log10 (engine/training/update_history.py holds the numbers and the columns).

The pane feeds the history (the open run's updates.jsonl, then each StepReport's measured weights) and calls
`refresh`, which draws only while the tab is seen: a hidden tab keeps what changed and draws it when shown.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from engine.training.update_history import UpdateHistory

from ...screen_fit import PLOT_MIN
from ...widgets.heatmap import HeatmapWidget
from ...widgets.seen import SeenWidget

TITLE = "log₁₀ ‖ΔW‖ / ‖W‖ of a step"
SPAN = (1.0, 99.0)  # percentiles of the cells the colours span: a bias's first steps (from zero) reach 10⁰ and more
EMPTY = ("No update sizes yet: each step measures a few weights in turn (every weight about every 8 steps) and "
         "the run keeps them in updates.jsonl. A run trained before this measure, or imported, has none.")
NOTE = ("How far a step moved each weight against its size: −3 is 0.1%. Each weight is measured every few "
        "steps; a cell is the geometric mean over its steps, and the colours span 98% of the cells. Muon-style "
        "recipes keep their matrices near 10⁻², AdamW's healthy runs near 10⁻³; far below the others a weight "
        "learns little.")


class UpdateRatioPanel(SeenWidget):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.history = UpdateHistory()
        self._drawn: tuple[int, int] | None = None  # (last step, weights) of the history last drawn
        self.heatmap = HeatmapWidget(self, title=TITLE, aspect_locked=False)
        self.heatmap.setObjectName("update_ratio_map")
        self.heatmap.setMinimumHeight(PLOT_MIN)
        self.heatmap.hide()
        self.note = QLabel(EMPTY, self)
        self.note.setWordWrap(True)
        self.note.setObjectName("update_ratio_note")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.heatmap, 1)
        layout.addWidget(self.note)

    def set_history(self, history: UpdateHistory) -> None:
        """Another run's history (or none: an empty one)."""
        self.history, self._drawn = history, None
        self.refresh()

    def refresh(self) -> None:
        """Draw what the history holds now, if the tab is seen and it changed since the last drawing."""
        key = (self.history.last_step, len(self.history.steps))
        if not self.seen() or key == self._drawn:
            return
        self._drawn = key
        matrix, weights, steps = self.history.matrix()
        self.heatmap.setVisible(bool(weights))
        self.note.setText(NOTE if weights else EMPTY)
        if weights:
            finite = matrix[np.isfinite(matrix)]
            lo, hi = np.percentile(finite, SPAN)
            self.heatmap.set_matrix(matrix, weights, steps, "sequential", row_title="weight", col_title="steps",
                                    levels=(float(lo), float(max(hi, lo + 1e-6))))

    def seen_changed(self, seen: bool) -> None:
        if seen:
            self.refresh()
