"""TensorBoard's smoothing, checked against its closed form: after n finite points y_1 … y_n,
s_n = Σ_i w^(n−i) (1 − w) y_i / (1 − w^n)."""

from __future__ import annotations

import numpy as np
import pytest

from engine.figures.smoothing import ema


@pytest.mark.parametrize("w", [0.0, 0.3, 0.6, 0.9, 0.99])
def test_ema_is_the_debiased_weighted_sum(w):
    y = np.random.default_rng(0).normal(3.0, 1.0, 50)
    n = np.arange(1, 51)
    want = [sum(w ** (k - i) * (1 - w) * y[i - 1] for i in range(1, k + 1)) / (1 - w ** k) if w else y[k - 1]
            for k in n]
    np.testing.assert_allclose(ema(y, w), want, rtol=1e-12)


def test_the_first_point_is_kept_and_gaps_pass_through():
    y = np.array([2.0, np.nan, 4.0, np.inf, 6.0])
    s = ema(y, 0.5)
    assert s[0] == 2.0 and np.isnan(s[1]) and np.isinf(s[3])
    np.testing.assert_allclose(s[[2, 4]], ema([2.0, 4.0, 6.0], 0.5)[1:])  # gaps do not enter the average


def test_a_flat_curve_stays_exactly_flat_and_a_bad_weight_is_refused():
    assert np.array_equal(ema(np.full(10, 0.1), 0.9), np.full(10, 0.1))
    with pytest.raises(ValueError):
        ema([1.0], 1.0)


@pytest.mark.parametrize("w", [0.05, 0.6, 0.99])
def test_long_curves_match_tensorboards_loop_across_blocks(w):
    """3000 points span many of the vectorised blocks at small weights; TensorBoard's loop is the reference."""
    y = np.random.default_rng(1).normal(3.0, 1.0, 3000)
    last, debias, want = 0.0, 1.0, []
    for v in y:
        last = last * w + (1 - w) * v
        debias *= w
        want.append(last / (1 - debias))
    np.testing.assert_allclose(ema(y, w), want, rtol=1e-12)
