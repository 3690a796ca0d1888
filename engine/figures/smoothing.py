"""Exponential moving average of a noisy curve, as TensorBoard's scalar dashboard smooths it.

TensorBoard (tensorboard/components/vz_line_chart2/line-chart.ts, `resmoothDataset`; W&B's default
smoothing is the same) keeps ``last = w·last + (1 − w)·y`` from ``last = 0`` and divides by the debias factor
``1 − w^n`` after n finite points, so the curve starts at the first value instead of rising from zero
(Adam's bias correction, Kingma & Ba 2015 §3). A non-finite point is passed through and does not enter
the average; a curve whose values are all equal is returned as it is (TensorBoard's constant check, which
keeps float round-off off a flat line).

The recurrence runs as numpy cumulative sums rather than a Python loop (a redraw of ten runs' curves
smooths twenty of them while a slider is dragged): within a block, last_k = w^k·(last_0 +
(1 − w)·Σ_(j≤k) w^(−j)·y_j), the block short enough that w^(−j) stays below 1e100. Every block is summed
at once as one row of a matrix from last_0 = 0; only each block's carry, last_0 = the previous block's end,
is a scalar loop (one step per block: 300 for 30,000 points at w = 0.1), added back as w^k·last_0.
"""

from __future__ import annotations

import numpy as np

_MAX_SCALE_LOG = 100 * np.log(10.0)  # ln(1e100): the largest w^(−j) a block multiplies by


def ema(values, weight: float) -> np.ndarray:
    """The debiased exponential moving average of `values` with smoothing weight in [0, 1)."""
    if not 0.0 <= weight < 1.0:
        raise ValueError(f"smoothing weight {weight} is not in [0, 1)")
    y = np.asarray(values, dtype=np.float64)
    out = y.copy()
    finite = np.isfinite(y)
    if weight < 1e-100 or not finite.any() or np.ptp(y[finite]) == 0:
        return out
    n = int(finite.sum())
    out[finite] = _running_average(y[finite], weight) / (1.0 - _powers(weight, n))
    return out


def _running_average(y: np.ndarray, weight: float) -> np.ndarray:
    """last_k = w·last_(k−1) + (1 − w)·y_k from last_0 = 0 (not yet debiased), block by block."""
    n = len(y)
    block = min(n, max(1, int(_MAX_SCALE_LOG / -np.log(weight))))
    rows = -(-n // block)
    padded = np.zeros(rows * block)  # zeros after the end change no value before it
    padded[:n] = y
    powers = _powers(weight, block)
    local = powers * ((1.0 - weight) * np.cumsum(padded.reshape(rows, block) / powers, axis=1))  # (rows, block)
    carries = np.empty(rows)  # each block's last_0
    last = 0.0
    for r in range(rows):
        carries[r] = last
        last = local[r, -1] + powers[-1] * last
    return (local + carries[:, None] * powers).reshape(-1)[:n]


def _powers(weight: float, n: int) -> np.ndarray:
    """w^k for k = 1 … n, as exp(k·ln w): numpy's power is ~20x slower than its exp. The error, k·|ln w| ulps,
    stays under 230 ulps wherever w^k is not negligible beside 1 or a block's other terms."""
    return np.exp(np.arange(1, n + 1) * np.log(weight))
