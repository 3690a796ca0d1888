"""The Head diff tab of the heatmaps pane: the chosen head's attention on the prompt at the step the shared
timeline is at, minus its attention at another saved step (chosen here), on a signed colour map: red where
the head attends more now, blue where less. Rows of the difference sum to 0 (two distributions over the
same keys). Render-only, from an AttentionDiff (engine.analysis.attention, RunAnalysis.attention_diff).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QComboBox, QLabel, QVBoxLayout, QWidget

from engine.analysis.attention import AttentionDiff

from ...widgets.heatmap import HeatmapWidget
from ...widgets.tiles import row_of
from .chosen import ChosenHead


class DiffView(QWidget, ChosenHead):
    """The chosen head's attention at the timeline's step minus at another saved step (`other`, bound by the
    pane to its view model)."""

    def __init__(self, chosen: Callable[[], tuple[int, int]] = lambda: (0, 0), parent: QWidget | None = None):
        super().__init__(parent)
        self.result: AttentionDiff | None = None
        self.chosen = chosen  # () -> (layer, head) chosen (the pane's: the workspace's selection), read when drawn
        self.other = QComboBox()
        self.other.setObjectName("heatmaps_diff_other")
        self.other.setToolTip("The saved step whose attention is subtracted from the timeline's step")
        self.note = QLabel(" ")
        self.note.setWordWrap(True)
        self.map = HeatmapWidget()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(row_of(QLabel("minus the attention at"), self.other))
        layout.addWidget(self.note)
        layout.addWidget(self.map, 1)

    def other_step(self) -> int | None:
        return self.other.currentData()

    def set_steps(self, steps: list[int]) -> None:
        """The run's saved steps to subtract; the choice is kept while it is saved (the first step else)."""
        if [self.other.itemData(i) for i in range(self.other.count())] == steps:
            return
        chosen = self.other_step()
        self.other.blockSignals(True)
        self.other.clear()
        for step in steps:
            self.other.addItem(f"step {step}", step)
        self.other.setCurrentIndex(max(0, self.other.findData(chosen)) if chosen is not None else 0)
        self.other.blockSignals(False)
        if self.other_step() != chosen:  # said as the user's choice would be
            self.other.currentIndexChanged.emit(self.other.currentIndex())

    def show_result(self, result: AttentionDiff) -> None:
        self.result = result
        self._render()

    def show_chosen(self) -> None:
        self._render()

    def matrix(self):
        """(T, T) of the chosen head: attention at the step minus at the other step (None: nothing yet)."""
        r = self.result
        if r is None or self.layer >= r.diff.shape[0] or self.head >= r.diff.shape[1]:
            return None
        return r.diff[self.layer, self.head]

    def _render(self) -> None:
        m, r = self.matrix(), self.result
        if m is None:
            return
        self.map.set_matrix(m, r.tokens, r.tokens, "signed",
                            f"layer {self.layer} · head {self.head}: step {r.step} − step {r.other_step}",
                            "query", "key")
        self.note.setText(f"Attention of layer {self.layer} · head {self.head} at step {r.step} minus at step "
                          f"{r.other_step}, same prompt: red where it attends more at step {r.step}, blue "
                          "where less.")
