"""A run's update-to-weight ratios ‖ΔW‖ / ‖W‖ (engine/training/update_ratio.py) as a weights × steps matrix: the
Training pane's "Update / weight" tab, what Muon-era recipes steer by (a weight whose steps are far smaller than
the others' learns little; far larger, it is near instability).

Each weight is measured once in a rotation of a few steps, so a column covers at least the longest gap between
two measurements of one weight, and more steps when the run has more than `MAX_COLUMNS` rotations: every cell of
a weight the run measured holds a number. A cell is log10 of the geometric mean of the weight's ratios in its
steps (the ratios of a run span decades: ~1e-4 for an embedding under AdamW, ~1e-2 for a matrix under Muon).
Rows are in the model's order of its weights (`order`, engine/model/weight_layout.weight_names), as the other
panes list them; a weight it does not name comes after, in the order it was first measured.
Numbers only, no Qt and no torch: fed by a run's updates.jsonl (Run.updates()) and by live StepReports.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

MAX_COLUMNS = 160  # columns at most: wider, a cell is a pixel or two in a pane's tab


@dataclass
class UpdateHistory:
    order: tuple[str, ...] = ()  # the model's weights in its order: the rows' order
    steps: dict[str, list[int]] = field(default_factory=dict)      # weight -> steps it was measured at
    logs: dict[str, list[float]] = field(default_factory=dict)     # weight -> log10 ‖ΔW‖ / ‖W‖ at those steps
    last_step: int = 0

    def add(self, step: int, ratios: Mapping[str, float]) -> bool:
        """One step's measured ratios; a step not after the last one (a resumed run's replay) is ignored, and so
        is a ratio that is not a positive finite number (a weight that was all zeros). Returns whether added."""
        if step <= self.last_step:
            return False
        self.last_step = step
        for name, ratio in ratios.items():
            if isinstance(ratio, (int, float)) and math.isfinite(ratio) and ratio > 0:
                self.steps.setdefault(name, []).append(step)
                self.logs.setdefault(name, []).append(math.log10(ratio))
        return True

    def add_rows(self, rows: Iterable[tuple[int, Mapping[str, float]]]) -> None:
        for step, ratios in rows:
            self.add(step, ratios)

    @property
    def names(self) -> list[str]:
        """The measured weights, in the rows' order."""
        rank = {name: i for i, name in enumerate(self.order)}
        return sorted(self.steps, key=lambda name: rank.get(name, len(rank)))  # sorted() keeps first-seen ties

    def column_width(self) -> int:
        """Steps a column covers: the longest gap between two measurements of one weight, at least
        1/MAX_COLUMNS of the steps measured."""
        if not self.steps:
            return 1
        first = min(s[0] for s in self.steps.values())
        gap = max((int(np.diff(s).max()) for s in self.steps.values() if len(s) > 1), default=1)
        return max(gap, math.ceil((self.last_step - first + 1) / MAX_COLUMNS))

    def matrix(self) -> tuple[np.ndarray, list[str], list[str]]:
        """(weights, columns) of log10 ‖ΔW‖ / ‖W‖, NaN where a weight was not measured; the row labels (the
        weights) and the column labels (the steps each covers: '241–248')."""
        if not self.steps:
            return np.zeros((0, 0)), [], []
        first, width, names = min(s[0] for s in self.steps.values()), self.column_width(), self.names
        cols = (self.last_step - first) // width + 1
        sums, counts = np.zeros((len(names), cols)), np.zeros((len(names), cols))
        for row, name in enumerate(names):
            col = (np.asarray(self.steps[name]) - first) // width
            np.add.at(sums[row], col, self.logs[name])
            np.add.at(counts[row], col, 1)
        with np.errstate(invalid="ignore"):
            matrix = sums / counts  # 0/0 -> NaN: not measured there
        spans = [(first + c * width, min(first + (c + 1) * width - 1, self.last_step)) for c in range(cols)]
        labels = [str(lo) if lo == hi else f"{lo}–{hi}" for lo, hi in spans]
        return matrix, names, labels
