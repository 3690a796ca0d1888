"""The Weight pane's Distributions tab (TensorBoard's histograms): the values of the weight, of its G and
of its update ΔW at every saved step, one map each (value bins upward × steps, colour the share of the
entries in a bin), so a spread widening or a tail growing over training is seen at a glance. Asked from
the analysis process (RunAnalysis.distributions); this view only asks and draws.
"""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from engine.analysis.questions import Distributions
from engine.analysis.distributions import LABELS, QUANTITIES

from ...jobs import AnalysisJob
from ...widgets.heatmap import HeatmapWidget


class DistributionsView(QWidget):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.result = None
        self._asked: tuple | None = None  # (run path, weight, steps) asked or shown
        self._job = AnalysisJob(self)
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
        self._job.sig_done.connect(self._on_done)
        self._job.sig_failed.connect(lambda _tag, message: self.message.setText(message))

    def ask(self, run_path: str, weight: str, steps: list[int]) -> None:
        """Ask for `weight`'s distributions unless already asked for these saved steps (only while shown:
        the pane asks again when the tab is opened)."""
        key = (run_path, weight, tuple(steps))
        if key == self._asked or not self.isVisible():
            return
        self._asked = key
        self.message.setText(f"binning {weight} at {len(steps)} saved steps…")
        self._job.ask(Distributions(run_path, weight), tag=key)

    def _on_done(self, key, result) -> None:
        if key == self._asked:
            self.show_result(key[1], result)

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
