"""The Weight pane's Distributions tab (TensorBoard's histograms): the values of the weight, of its G and
of its update ΔW at every saved step, one map each (value bins upward × steps, colour the share of the
entries in a bin), so a spread widening or a tail growing over training is seen at a glance. The tab's view
model (engine/views/weight_tabs.py) needs them of the weight shown (RunAnalysis.distributions, a long question);
this widget only draws what it holds.
"""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from engine.analysis.distributions import LABELS, QUANTITIES

from ...widgets.heatmap import HeatmapWidget


class DistributionsView(QWidget):
    def __init__(self, view, workspace, parent: QWidget | None = None):
        super().__init__(parent)
        self.view, self.workspace = view, workspace
        self.result = None
        self.message = QLabel("Open or train a run: its saved steps are binned here.")
        self.message.setWordWrap(True)
        self.maps = {q: HeatmapWidget(self, title=LABELS[q], aspect_locked=False) for q in QUANTITIES}
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        col.addWidget(self.message)
        for heatmap in self.maps.values():
            # shares the tab's height by stretch: their own minimum made the whole pane taller, squeezing
            # nothing on this tab but every map of the coefficient page behind it
            heatmap.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)
            col.addWidget(heatmap, 1)

    def draw(self) -> None:
        v, key = self.view, self.view.key(self.workspace)
        if key is None:
            return
        question, steps = key
        if question in v.failures:
            self.message.setText(v.failures[question])
        elif key in v.answers:
            if v.answers[key] is not self.result:
                self.show_result(question.weight, v.answers[key])
        else:
            progress = f" ({v.progress})" if v.progress is not None else ""
            self.message.setText(f"binning {question.weight} at {len(steps)} saved steps…{progress}")

    def show_result(self, weight: str, result: dict) -> None:
        self.result = result
        for q, d in result.items():
            values = [f"{v:.2g}" for v in d.centres[::-1]]  # the largest values on top, as on a y axis
            self.maps[q].set_matrix(d.fractions[::-1], values, [str(s) for s in d.steps], "sequential",
                                    title=f"{LABELS[q]}: share of entries per value (ends: beyond)",
                                    row_title="value",
                                    col_title="step")
        steps = len(next(iter(result.values())).steps)
        self.message.setText(f"{weight}: {steps} saved steps; each column sums to 1 (empty: no update reached "
                             "the first step). Hover a cell for its value range and share.")
