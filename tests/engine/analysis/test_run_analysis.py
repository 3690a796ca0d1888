"""RunAnalysis: its answers equal the engine's own computations, results are cached through one helper,
and refresh() drops exactly what the run's growth or a rewritten file made stale. No Qt."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
import torch

from engine.model import probes
from engine.analysis.run_analysis import RunAnalysis
from engine.coefficients.cache import CoefficientStore
from engine.forms import Snapshot
from engine.rundir.runs import SNAPSHOTS, step_name
from tests.engine.coefficients.test_coefficients import fresh, run  # noqa: F401  (the tiny run and a copy of it)


def test_config_and_steps_are_the_runs(run):
    a = RunAnalysis(run.path)
    assert a.config == run.config and a.config.model.vocab_size == run.tokenizer.vocab_size
    assert a.saved_steps() == run.saved_steps() == [0, 2, 3, 4, 6]


def test_one_model_is_reloaded_per_step(run):
    a = RunAnalysis(run.path)
    m2 = a.model(2)
    assert torch.equal(m2.W_E, run.load_weights(2)["W_E"])
    m4 = a.model(4)
    assert m4 is m2 and torch.equal(m4.W_E, run.load_weights(4)["W_E"]) and not m4.training


def test_attention_is_the_probes_on_the_saved_model(run):
    a = RunAnalysis(run.path)
    got = a.attention(4, "To be, or not")
    ids = probes.prompt_ids(run.tokenizer, "To be, or not", run.config.model.n_ctx)
    want = probes.attention_maps(run.build_model(4), ids).weights
    np.testing.assert_allclose(got.maps.weights, want, atol=1e-6)
    assert got.step == 4 and got.entropy.shape == (2, 2)
    assert a.attention(4, "To be, or not") is got  # the second ask is the cached answer


def test_attention_diff_is_the_difference_of_the_two_steps_attention(run):
    a = RunAnalysis(run.path)
    d = a.attention_diff(6, 2, "To be, or not")
    want = probes.attention_maps(run.build_model(6), probes.prompt_ids(run.tokenizer, "To be, or not",
                                                                       run.config.model.n_ctx)).weights
    np.testing.assert_array_equal(d.diff, a.attention(6, "To be, or not").maps.weights
                                  - a.attention(2, "To be, or not").maps.weights)
    np.testing.assert_allclose(d.diff + a.attention(2, "To be, or not").maps.weights, want, atol=1e-6)
    causal = np.tril(np.ones(d.diff.shape[-2:], bool))
    assert (d.step, d.other_step) == (6, 2) and np.isnan(d.diff[..., ~causal]).all()
    np.testing.assert_allclose(np.nansum(d.diff, axis=-1), 0, atol=1e-6)  # rows of two distributions
    assert np.abs(d.diff[..., causal]).max() > 0  # training moved some head
    assert a.attention_diff(6, 2, "To be, or not") is d


def test_masks_and_positional_answer_for_the_run(run):
    a = RunAnalysis(run.path)
    m = a.masks(6, "abc", band=2)
    assert m.names[1:] == ("causal", "banded, β = 2", "none") and m.weights["none"].shape == (2, 2, 3, 3)
    p = a.positional(6, shift=3)
    assert p.P.shape == (16, 16) and p.shift == 3


def test_term_values_are_the_snapshots_term_and_share(run):
    a = RunAnalysis(run.path)
    probe = run.probe()
    snap = Snapshot(run.config.model, run.load_weights(2), probe.x, probe.y)
    weight = "blocks.1.W_in"
    term = next(snap.forms.iter_terms(weight))
    got = a.term_values(2, term.id, weight)
    g, total = snap.term(term.id).double().numpy(), snap.total(weight)[weight].double().numpy()
    assert got.norm == pytest.approx(np.linalg.norm(g))
    assert got.share == pytest.approx(float((g * total).sum() / (total * total).sum()))


def test_coefficients_are_the_runs_store(run):
    a = RunAnalysis(run.path)
    rec = a.coefficients.record("blocks.0.W_Q", 4)
    want = CoefficientStore(run, disk=False).record("blocks.0.W_Q", 4)
    np.testing.assert_allclose(rec.G, want.G, rtol=1e-6, atol=1e-9)


def test_refresh_drops_what_a_new_step_or_a_rewritten_file_made_stale(fresh):  # noqa: F811
    fresh = RunAnalysis(fresh.path)
    calls = []

    def compute(tag):
        calls.append(tag)
        return tag

    fresh.cached("plain", 4, (), lambda: compute("plain"))
    fresh.cached("spans", 4, (), lambda: compute("spans"), spans_steps=True)
    fresh.cached("other", 6, (), lambda: compute("other"))
    assert not fresh.refresh() and len(fresh.results) == 3
    snaps = fresh.path / SNAPSHOTS
    shutil.copy(snaps / f"{step_name(6)}.safetensors", snaps / f"{step_name(8)}.safetensors")
    assert fresh.refresh() and fresh.saved_steps()[-1] == 8
    assert fresh.results.peek("plain", 4) == "plain" and fresh.results.peek("spans", 4) is None
    path = snaps / f"{step_name(6)}.safetensors"
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    fresh.refresh()
    assert fresh.results.peek("other", 6) is None and fresh.results.peek("plain", 4) == "plain"
    fresh.cached("plain", 4, (), lambda: compute("again"))
    assert calls == ["plain", "spans", "other"]


def test_memory_is_bounded_by_the_bytes_results_hold(run):
    a = RunAnalysis(run.path, max_bytes=3 * 800)
    for step in (0, 2, 3, 4):
        a.cached("block", step, (), lambda: np.zeros(100))  # 800 bytes each
    assert len(a.results) == 3 and a.results.peek("block", 0) is None and a.results.peek("block", 4) is not None
