"""A weight's update at a saved step through every geometry (engine/analysis/update.py) and its export
(`gpt-explorer export --what update`), on tiny runs trained with each optimizer."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import torch

from engine.analysis import geometry as geo
from engine.analysis.update import update_geometry
from engine.cli import main
from engine.configs.config import DataConfig, ExperimentConfig, ModelConfig, TrainConfig
from engine.text.corpus import shakespeare_text
from engine.model.gpt import GPT
from engine.rundir.runs import Run
from engine.training.trainer import Trainer


def trained(path, optimizer: str) -> Run:
    """6 steps of a 2-layer model; saved steps 0, 2, 3, 4, 6 (checkpoints at 3 and 6)."""
    cfg = ExperimentConfig(
        name="update", model=ModelConfig(n_layer=2, n_head=2, d_model=16, d_ff=32, n_ctx=16),
        train=TrainConfig(steps=6, batch_size=4, warmup_steps=1, eval_every=3, eval_batches=1, checkpoint_every=3,
                          snapshot_every=2, sample_tokens=8, torch_threads=1, device="cpu", optimizer=optimizer,
                          lr=0.05 if optimizer == "sgd" else 1e-3),
        data=DataConfig(corpus="test text"))
    list(Trainer(cfg, path, text=shakespeare_text()[:20_000]).steps())
    return Run(path)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("update")
    return {name: trained(base / name, name) for name in ("adamw", "muon", "sgd")}


def test_update_at_a_step_is_w_minus_the_previous_saved_w_with_every_geometry(runs):
    run = runs["adamw"]
    assert sorted(set(run.snapshot_steps()) | set(run.checkpoint_steps())) == [0, 2, 3, 4, 6]
    r = update_geometry(run, "blocks.0.W_V", 4)
    assert (r.step, r.prev_step, r.optimizer) == (4, 3, "adamw")
    want = run.load_weights(4)["blocks.0.W_V"].double() - run.load_weights(3)["blocks.0.W_V"].double()
    np.testing.assert_allclose(r.dW, want.numpy(), rtol=0, atol=1e-7)
    assert [d.geometry for d in r.directions] == list(geo.GEOMETRIES)
    np.testing.assert_array_equal(r.direction("euclidean").matrix, r.G)
    assert r.direction("euclidean").cos_dW == pytest.approx(geo.cosine(r.G, r.dW))
    assert r.stack().shape == (4, 16, 16)


def test_adam_geometry_uses_the_runs_bias_corrected_second_moment(runs):
    run = runs["adamw"]
    r = update_geometry(run, "blocks.0.W_V", 4)
    assert r.v_step == 3  # the nearest checkpoint
    _, state = run.load_checkpoint(3)
    params = list(GPT(run.config.model).named_parameters())
    order = [n for n, p in params if p.dim() >= 2] + [n for n, p in params if p.dim() < 2]  # our groups' order
    s = state["optimizer"]["state"][order.index("blocks.0.W_V")]
    v_hat = s["exp_avg_sq"].double().numpy() / (1 - run.config.train.beta2 ** int(s["step"]))
    np.testing.assert_allclose(r.direction("adam").matrix, r.G / (np.sqrt(v_hat) + run.config.train.adam_eps),
                               rtol=1e-12)


def test_route_shares_split_the_first_order_decrease_exactly(runs):
    from engine.coefficients.cache import CoefficientStore

    run = runs["adamw"]
    r = update_geometry(run, "blocks.1.W_Q", 6)
    G_prev = CoefficientStore(run, "float64", disk=False).record("blocks.1.W_Q", 4).G
    assert r.prev_step == 4 and len(r.shares) > 1
    assert sum(r.shares.values()) == pytest.approx(geo.inner(G_prev, r.dW), rel=1e-10)
    for d in r.directions:  # each geometry's step from G(6) splits over the same classes, exactly
        assert set(r.direction_shares[d.geometry]) == set(r.shares)
        assert sum(r.direction_shares[d.geometry].values()) == pytest.approx(geo.inner(r.G, d.matrix), rel=1e-10)


def test_the_first_step_has_no_update_and_the_newest_has_one(runs):
    run = runs["adamw"]
    first = update_geometry(run, "W_E", 0)
    assert first.dW is None and first.prev_step is None and first.shares == {}
    assert all(np.isnan(d.cos_dW) for d in first.directions)
    assert update_geometry(run, "W_E").step == 6 and update_geometry(run, "W_E").dW is not None


def test_adam_geometry_only_where_an_adamw_trained_the_weight(runs):
    assert update_geometry(runs["muon"], "blocks.0.W_Q", 6).v_step is None  # Muon trained it
    assert "adam" not in [d.geometry for d in update_geometry(runs["muon"], "blocks.0.W_Q", 6).directions]
    assert update_geometry(runs["muon"], "W_E", 6).v_step == 6  # Muon's AdamW part trained the embedding
    assert "adam" not in [d.geometry for d in update_geometry(runs["sgd"], "W_E", 6).directions]


def test_export_update_writes_csv_npy_and_figures(runs, tmp_path, capsys):
    run = runs["muon"]
    # one figure format: the figure is the same whatever the suffix, and export.save_figure's SVG is written by the
    # heads and coefficient exports' tests (an SVG here was 1.2 s of CPU)
    for suffix in ("csv", "npy", "png"):
        out = tmp_path / f"u.{suffix}"
        rc = main(["export", "--run", str(run.path), "--what", "update", "--weight", "blocks.1.W_O",
                   "--step", "4", "--out", str(out)])
        assert rc == 0 and out.stat().st_size > 0
    capsys.readouterr()
    r = update_geometry(run, "blocks.1.W_O", 4, "float32")  # the export reads RunAnalysis's float32 records
    with open(tmp_path / "u.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert [row["geometry"] for row in table] == ["euclidean", "sign", "spectral", "applied_dW"]
    spectral = table[2]
    # U Vᵀ has as many unit singular values as G has rank (15 here: the layer norm after W_O's output removes
    # the mean direction from every gradient reaching it)
    assert float(spectral["effective_rank"]) == pytest.approx(np.linalg.matrix_rank(r.G.astype(np.float32))) == 15
    assert float(spectral["cos_dW"]) == pytest.approx(r.direction("spectral").cos_dW, rel=1e-12)
    np.testing.assert_array_equal(np.load(tmp_path / "u.npy"), r.stack())
    assert (tmp_path / "u.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("argv, says", [
    (["--weight", "blocks.9.W_Q"], "no weight"), ([], "--weight is required"),
    (["--weight", "W_E", "--step", "5"], "no weights saved at step 5"),
])
def test_export_update_refusals_are_one_line(runs, tmp_path, capsys, argv, says):
    rc = main(["export", "--run", str(runs["sgd"].path), "--what", "update", "--out", str(tmp_path / "u.csv"),
               *argv])
    err = capsys.readouterr().err
    assert rc == 2 and says in err and err.count("\n") == 1


def test_muon_direction_is_close_to_the_polar_factor_it_approximates():
    """One torch.optim.Muon step without momentum or decay moves along Newton–Schulz(G) ≈ our exact U Vᵀ."""
    G = torch.randn(32, 16, generator=torch.Generator().manual_seed(0))
    w = torch.nn.Parameter(torch.zeros(32, 16))
    w.grad = -G  # the gradient is −G
    torch.optim.Muon([w], lr=1.0, momentum=0.0, weight_decay=0.0).step()
    assert geo.cosine(w.detach().numpy(), geo.spectral_direction(G.numpy())) > 0.95
