"""Distributions over training (TensorBoard's histograms, issue 26): for one weight, the values of W, of
its coefficient G (= −∂E/∂W on the run's probe batch) and of the update ΔW that reached each saved step,
as a histogram per step on bins shared by every step, so a spread widening or a tail growing is seen as
a picture (bins × steps). Pure numpy on arrays the caller gives; RunAnalysis.distributions reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

QUANTITIES = ("W", "G", "dW")
LABELS = {"W": "W", "G": "G = −∂E/∂W", "dW": "ΔW, the update that reached the step"}
BINS = 41  # odd: one bin centred on 0
# the bins span this quantile of |value| over every step: spanning the largest, one step's outliers (G at the
# first steps) squeezed every other step into the middle bin (seen on the tiny preset)
TAIL = 0.995


@dataclass(frozen=True)
class Distribution:
    quantity: str
    steps: np.ndarray      # (S,) saved steps
    edges: np.ndarray      # (BINS + 1,) ascending, symmetric about 0, shared by every step
    fractions: np.ndarray  # (BINS, S): share of the entries in each bin; NaN where a step has none (ΔW first)

    @property
    def centres(self) -> np.ndarray:
        return (self.edges[:-1] + self.edges[1:]) / 2


def histograms(values: Sequence[np.ndarray | None], steps: Sequence[int], quantity: str,
               bins: int = BINS) -> Distribution:
    """Each step's values (None: none at that step) binned on ±(the TAIL quantile of |value| over every
    step); a value beyond is counted in the end bin on its side."""
    present = [np.abs(np.asarray(v, dtype=np.float64).ravel()) for v in values if v is not None and np.size(v)]
    every = np.concatenate(present) if present else np.zeros(1)
    top = float(np.quantile(every, TAIL)) or float(every.max()) or 1.0
    edges = np.linspace(-top, top, bins + 1)
    out = np.full((bins, len(steps)), np.nan)
    for j, v in enumerate(values):
        if v is not None and np.size(v):
            counts, _ = np.histogram(np.clip(np.asarray(v, dtype=np.float64).ravel(), -top, top), edges)
            out[:, j] = counts / np.size(v)
    return Distribution(quantity, np.asarray(steps, dtype=np.int64), edges, out)


def distributions(steps: Sequence[int], weight_at: Callable[[int], np.ndarray],
                  coefficient_at: Callable[[int], np.ndarray],
                  update_at: Callable[[int], np.ndarray | None], bins: int = BINS) -> dict[str, Distribution]:
    """{quantity: Distribution} over `steps`, reading each step's W, G and ΔW (None at the first)."""
    read = {"W": weight_at, "G": coefficient_at, "dW": update_at}
    return {q: histograms([read[q](s) for s in steps], steps, q, bins) for q in QUANTITIES}
