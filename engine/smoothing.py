"""Exponential moving average of a noisy curve, as TensorBoard's scalar dashboard smooths it.

TensorBoard (tensorboard/components/vz_line_chart2/line-chart.ts, `resmoothDataset`; W&B's default
smoothing is the same) keeps ``last = w·last + (1 − w)·y`` from ``last = 0`` and divides by the debias factor
``1 − w^n`` after n finite points, so the curve starts at the first value instead of rising from zero
(Adam's bias correction, Kingma & Ba 2015 §3). A non-finite point is passed through and does not enter
the average; a curve whose values are all equal is returned as it is (TensorBoard's constant check, which
keeps float round-off off a flat line).
"""

from __future__ import annotations

import numpy as np


def ema(values, weight: float) -> np.ndarray:
    """The debiased exponential moving average of `values` with smoothing weight in [0, 1)."""
    if not 0.0 <= weight < 1.0:
        raise ValueError(f"smoothing weight {weight} is not in [0, 1)")
    y = np.asarray(values, dtype=np.float64)
    out = y.copy()
    finite = np.isfinite(y)
    if weight == 0.0 or not finite.any() or np.ptp(y[finite]) == 0:
        return out
    points = y[finite].tolist()  # Python floats: a loop over them is ~10x one over numpy scalars
    smoothed, last, debias = [], 0.0, 1.0
    for v in points:
        last = last * weight + (1.0 - weight) * v
        debias *= weight  # w^n, kept as a running product
        smoothed.append(last / (1.0 - debias))
    out[finite] = smoothed
    return out
