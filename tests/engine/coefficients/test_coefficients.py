"""Coefficients over training (issue 7): G against autograd, classes sum to G, ΔW from stored weights, and
the cache (memory, disk, corrupt files, deletion)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from engine import coefficients as co
from engine.coefficients.cache import CACHE_DIR, CoefficientStore
from engine.configs.config import DataConfig, ExperimentConfig, ModelConfig, TrainConfig
from engine.forms.verify import gpt_reference
from engine.rundir.runs import Run
from tests.engine.cli.test_export_cli import trained

WEIGHTS = ["W_E", "blocks.0.W_Q", "blocks.0.ln1.g", "blocks.1.W_in", "blocks.1.b_out", "W_U"]


def tiny_run(path) -> Run:
    """6 steps of a 2-layer, 2-head model; snapshots at 0, 2, 4, 6 (and a checkpoint at 3 and 6): trained once in
    a process and copied (test_export_cli.trained)."""
    return trained(path, ExperimentConfig(
        name="coefficients", model=ModelConfig(n_layer=2, n_head=2, d_model=16, d_ff=32, n_ctx=16),
        train=TrainConfig(steps=6, batch_size=4, warmup_steps=1, eval_every=3, eval_batches=1,
                          checkpoint_every=6, snapshot_every=2, sample_tokens=8, torch_threads=1, device="cpu"),
        data=DataConfig(corpus="test text")))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return tiny_run(tmp_path_factory.mktemp("coefficients") / "run")


@pytest.fixture
def fresh(run, tmp_path):
    """A copy of the run with no cache, so a test may write and damage it."""
    path = tmp_path / "run"
    shutil.copytree(run.path, path, ignore=shutil.ignore_patterns("cache"))
    return Run(path)


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-10), ("float32", 1e-5)])
def test_G_equals_minus_grad_on_the_probe_batch(run, dtype, tol):
    store = CoefficientStore(run, dtype, disk=False)
    probe = run.probe()
    for step in (0, 4):
        weights = run.load_weights(step)
        ref = gpt_reference(run.config.model, weights, torch.as_tensor(probe.x), torch.as_tensor(probe.y))
        for name in WEIGHTS:
            rec = store.record(name, step)
            want = ref[name].numpy()
            scale = np.abs(want).max()
            assert rec.G.shape == want.shape == rec.W.shape
            assert np.abs(rec.G - want).max() <= tol * scale, name
            assert np.abs(rec.grad - want).max() <= tol * scale, name
            assert rec.agreement <= tol
            np.testing.assert_array_equal(rec.W, weights[name].to(co.DTYPES[dtype]).numpy())


def test_route_classes_and_terms_sum_to_G(run):
    store = CoefficientStore(run, "float64", disk=False)
    rec = store.record("blocks.0.W_Q", 2)
    assert set(rec.classes) == {"direct", "L0.mlp", "L1.q", "L1.k", "L1.v", "L1.mlp"}
    np.testing.assert_allclose(sum(rec.classes.values()), rec.G, rtol=0, atol=1e-15 * np.abs(rec.G).max())
    assert 0 < len(rec.terms) == rec.term_count <= co.TERM_LIMIT
    np.testing.assert_allclose(sum(rec.terms.values()), rec.G, rtol=0, atol=1e-12 * np.abs(rec.G).max())
    big = store.record("W_E", 2)  # more terms than TERM_LIMIT: route classes only
    assert big.term_count > co.TERM_LIMIT and big.terms == {}
    s = rec.summary()
    assert s.norm == pytest.approx(np.linalg.norm(rec.G))
    assert s.class_norms["L1.q"] == pytest.approx(np.linalg.norm(rec.classes["L1.q"]))


def test_update_is_the_difference_of_stored_weights(run):
    store = CoefficientStore(run, "float32", disk=False)
    steps = store.steps()
    assert steps == [0, 2, 3, 4, 6]
    for a, b in zip(steps, steps[1:]):
        u = store.update("blocks.1.W_in", b)  # what the optimizer did to reach b, from a
        assert u.prev_step == a and u.step == b
        want = run.load_weights(b)["blocks.1.W_in"].numpy() - run.load_weights(a)["blocks.1.W_in"].numpy()
        np.testing.assert_array_equal(u.dW, want)
        G = store.record("blocks.1.W_in", a).G
        assert u.cosine == pytest.approx(float((u.dW * G).sum() / np.linalg.norm(u.dW) / np.linalg.norm(G)),
                                         rel=1e-5)
        assert u.ratio == pytest.approx(np.linalg.norm(u.dW) / np.linalg.norm(G), rel=1e-5)
    assert store.update("blocks.1.W_in", steps[0]) is None  # the newest step has one, the first none
    assert set(store.geometry("blocks.1.W_in")) == set(steps[1:])


def test_disk_cache_is_reused_and_safe_to_delete(fresh):
    store = CoefficientStore(fresh, "float32")
    rec = store.record("blocks.0.W_K", 4)
    assert store.computed == 1
    again = CoefficientStore(Run(fresh.path), "float32")
    got = again.record("blocks.0.W_K", 4)
    assert again.computed == 0
    for a, b in ((got.G, rec.G), (got.grad, rec.grad), (got.W, rec.W)):
        np.testing.assert_array_equal(a, b)
    assert list(got.classes) == list(rec.classes) and list(got.terms) == list(rec.terms)
    shutil.rmtree(fresh.path / CACHE_DIR)
    run = Run(fresh.path)
    assert run.warnings == []
    third = CoefficientStore(run, "float32")
    np.testing.assert_array_equal(third.record("blocks.0.W_K", 4).G, rec.G)
    assert third.computed == 1


@pytest.mark.parametrize("damage", [b"", b"not a zip file", None])
def test_a_corrupt_or_stale_cache_file_is_computed_again(fresh, damage):
    store = CoefficientStore(fresh, "float32")
    rec = store.record("blocks.1.W_V", 2)
    path = store.folder("blocks.1.W_V") / "step-000002.npz"
    if damage is None:  # a stale entry: the snapshot it came from was rewritten since
        snap = fresh.path / "snapshots" / "step-000002.safetensors"
        snap.write_bytes(snap.read_bytes())
        import os
        os.utime(snap, ns=(1, 1))
    else:
        path.write_bytes(damage)
    again = CoefficientStore(Run(fresh.path), "float32")
    np.testing.assert_array_equal(again.record("blocks.1.W_V", 2).G, rec.G)
    assert again.computed == 1
    assert CoefficientStore(Run(fresh.path), "float32").record("blocks.1.W_V", 2) is not None


def test_memory_stays_within_its_budget(run):
    store = CoefficientStore(run, "float32", memory_mb=0.05, disk=False)
    for s in store.steps():
        store.record("W_E", s)
    assert store._bytes <= 0.05e6 or len(store._records) == 1
    assert store.peek("W_E", 0) is None and store.peek("W_E", 6) is not None
    assert set(store.summaries("W_E")) == set(store.steps())  # summaries are kept for every step


def test_norms_table_and_class_descriptions(run):
    store = CoefficientStore(run, "float64", disk=False)
    table = store.norms_table("blocks.1.W_Q")
    assert table["step"] == [0.0, 2.0, 3.0, 4.0, 6.0]
    assert {"norm_G", "norm_grad", "agreement", "class:direct", "norm_dW", "cos_dW_G", "ratio_dW_G"} <= set(table)
    assert any(k.startswith("term:") for k in table)
    assert np.isnan(table["cos_dW_G"][0]) and not np.isnan(table["cos_dW_G"][-1])  # first step: no update
    assert co.class_description("L1.q") == "routes whose first branch is layer 1's query"
    assert co.class_description("L0.v.h1").endswith("value, head 1")


@pytest.mark.parametrize("weight", ["W_E", "blocks.0.ln1.g"])
def test_largest_terms_equal_the_terms_one_by_one_and_are_sorted(run, weight):
    """A weight with more terms than the pane splits at every step offers its largest; each equals its own
    word evaluated alone (no shared prefixes), the K are the largest of every term, largest first."""
    from engine.analysis.run_analysis import RunAnalysis
    from engine.forms import evaluate

    a = RunAnalysis(run.path)
    step = a.saved_steps()[-1]
    snap = a.snapshot(step)
    assert snap.forms.count(weight) > co.TERM_LIMIT
    got = a.largest_terms(step, weight, 5)
    assert got.count == snap.forms.count(weight) and len(got.terms) == 5
    norms = list(got.norms.values())
    assert norms == sorted(norms, reverse=True) and norms[-1] > 0
    with torch.no_grad():
        every = {t.id: evaluate.word_coefficient(snap.bound, t).double()
                 for t in snap.forms.terms(weight)}
    for tid, matrix in got.terms.items():
        assert np.allclose(matrix, every[tid].numpy(), rtol=1e-4, atol=1e-6 * float(every[tid].abs().max()))
        assert got.norms[tid] == pytest.approx(float(torch.linalg.vector_norm(every[tid])), rel=1e-4)
    rest = sorted((float(torch.linalg.vector_norm(v)) for k, v in every.items() if k not in got.terms),
                  reverse=True)
    assert rest[0] <= norms[-1] * (1 + 1e-4)
    assert got.norm_sum == pytest.approx(sum(float(torch.linalg.vector_norm(v)) for v in every.values()), rel=1e-4)
    assert got.share(next(iter(got.terms))) == pytest.approx(norms[0] / got.norm_sum)


def test_largest_terms_refuse_beyond_the_budget_in_one_line(run):
    from engine.coefficients.largest import largest_terms
    from engine.errors import UserError
    from engine.forms import Snapshot

    probe = run.probe()
    snap = Snapshot(run.config.model, run.load_weights(0), probe.x, probe.y)
    with pytest.raises(UserError, match="196 terms, more than the 100"):
        largest_terms(snap, "W_E", 0, budget=100)
