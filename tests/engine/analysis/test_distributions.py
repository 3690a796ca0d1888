"""Distributions over training: W, G and ΔW of one weight as histograms per saved step on shared bins."""

from __future__ import annotations

import numpy as np
import pytest

from engine.analysis.distributions import histograms
from engine.analysis.run_analysis import RunAnalysis
from engine.errors import UserError
from tests.engine.coefficients.test_coefficients import run  # noqa: F401  (the tiny run)


def test_histograms_share_symmetric_bins_and_each_step_sums_to_one():
    a, b = np.linspace(-1, 1, 201), np.array([50.0, -0.01])
    d = histograms([None, a, b], [0, 5, 10], "dW", bins=5)
    top = np.quantile(np.abs(np.r_[a, b]), 0.995)
    assert 0.99 < top < 50  # one outlier does not set the bins
    np.testing.assert_allclose(d.edges, np.linspace(-top, top, 6))
    assert np.isnan(d.fractions[:, 0]).all()  # no update reached the first step
    np.testing.assert_allclose(d.fractions[:, 1:].sum(axis=0), 1.0)
    np.testing.assert_allclose(d.fractions[:, 2], [0, 0, 0.5, 0, 0.5])  # −0.01 in the middle bin, 50 at the top
    np.testing.assert_allclose(d.fractions[:, 1], [0.2, 0.2, 0.2, 0.2, 0.2], atol=0.01)
    assert d.centres[2] == pytest.approx(0.0, abs=1e-12)


def test_run_analysis_gives_w_g_and_the_update_at_every_saved_step(run):  # noqa: F811
    a = RunAnalysis(run.path)
    steps = a.saved_steps()
    got = a.distributions("blocks.0.W_Q")
    assert set(got) == {"W", "G", "dW"} and all(list(d.steps) == steps for d in got.values())
    W = run.load_weights(steps[-1])["blocks.0.W_Q"].double().numpy()
    top = got["W"].edges[-1]  # values beyond the bins count in the end bins
    counts, _ = np.histogram(np.clip(W.ravel(), -top, top), got["W"].edges)
    np.testing.assert_allclose(got["W"].fractions[:, -1], counts / W.size)
    G = a.coefficients.record("blocks.0.W_Q", steps[1]).G
    top = got["G"].edges[-1]
    counts, _ = np.histogram(np.clip(G.ravel(), -top, top), got["G"].edges)
    np.testing.assert_allclose(got["G"].fractions[:, 1], counts / G.size)
    assert np.isnan(got["dW"].fractions[:, 0]).all()
    assert np.nansum(got["dW"].fractions[:, 1]) == pytest.approx(1)
    with pytest.raises(UserError, match="no weight"):
        a.distributions("nope")
