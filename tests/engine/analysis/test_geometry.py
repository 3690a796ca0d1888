"""Geometries of G and route-class shares of an update (engine/analysis/geometry.py, docs/geometries.md),
checked against torch's SVD and against the probe loss of engine.model.gpt.GPT in float64."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.analysis import geometry as geo
from engine.configs.config import ModelConfig
from engine.forms import Snapshot
from engine.model.gpt import GPT

CFG = ModelConfig(n_layer=2, n_head=2, d_model=8, d_ff=16, n_ctx=6, vocab_size=7, tied=False)


@pytest.mark.parametrize("shape", [(6, 6), (9, 4), (3, 8), (5,)])
def test_spectral_direction_has_unit_singular_values_and_is_u_vt(shape):
    G = np.random.default_rng(0).standard_normal(shape)
    D = geo.spectral_direction(G)
    U, _, Vh = torch.linalg.svd(torch.as_tensor(geo.as_matrix(G)), full_matrices=False)
    assert D.shape == G.shape
    np.testing.assert_allclose(geo.as_matrix(D), (U @ Vh).numpy(), atol=1e-12)
    np.testing.assert_allclose(np.linalg.svd(geo.as_matrix(D), compute_uv=False), 1.0, atol=1e-12)


def test_spectral_direction_maximises_the_pairing_among_unit_spectral_norm_steps():
    rng = np.random.default_rng(1)
    G = rng.standard_normal((7, 5))
    best = geo.inner(G, geo.spectral_direction(G))
    assert best == pytest.approx(np.linalg.svd(G, compute_uv=False).sum())  # the nuclear norm: the dual norm
    for _ in range(50):
        D = rng.standard_normal((7, 5))
        D /= np.linalg.svd(D, compute_uv=False)[0]
        assert geo.inner(G, D) <= best + 1e-12


def test_sign_and_adam_directions():
    G = np.array([[0.5, -2.0], [-1.5, 3.0]])
    d = geo.directions(G, v_hat=G ** 2, eps=0.0)
    np.testing.assert_array_equal(d["sign"], np.sign(G))
    np.testing.assert_allclose(d["adam"], np.sign(G))  # v̂ = G², ε = 0: Adam is sign descent
    np.testing.assert_allclose(geo.directions(G, v_hat=np.full_like(G, 4.0), eps=1.0)["adam"], G / 3.0)
    assert list(geo.directions(G)) == ["euclidean", "sign", "spectral"]  # no v̂: no Adam geometry
    assert [d.geometry for d in geo.geometries(G, v_hat=G ** 2)] == list(geo.GEOMETRIES)


def test_effective_rank_counts_equal_singular_values():
    assert geo.effective_rank(np.array([2.0, 2.0, 2.0, 0.0])) == pytest.approx(3.0)
    assert geo.effective_rank(np.array([5.0, 0.0])) == pytest.approx(1.0)
    assert geo.effective_rank(np.zeros(3)) == 0.0
    assert 1.0 < geo.effective_rank(np.array([3.0, 1.0])) < 2.0


def test_described_direction_cosines_and_norms():
    rng = np.random.default_rng(2)
    G, dW = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    euclid = geo.geometries(G, dW)[0]
    assert euclid.cos_G == pytest.approx(1.0) and euclid.norm == pytest.approx(np.linalg.norm(G))
    assert euclid.cos_dW == pytest.approx(np.sum(G * dW) / np.linalg.norm(G) / np.linalg.norm(dW))
    assert np.isnan(geo.geometries(G)[0].cos_dW)


# ---- route-class shares against the probe loss ------------------------------------------------

def setup_model():
    torch.manual_seed(0)
    model = GPT(CFG).to(torch.float64).eval()
    weights = {k: v.detach().clone() for k, v in model.state_dict().items()}
    gen = torch.Generator().manual_seed(1)
    x = torch.randint(0, CFG.vocab_size, (3, CFG.n_ctx), generator=gen)
    y = torch.randint(0, CFG.vocab_size, (3, CFG.n_ctx), generator=gen)
    classes = Snapshot(CFG, weights, x, y, torch.float64).classes()
    return model, weights, x, y, {w: {c: m.numpy() for c, m in cl.items()} for w, cl in classes.items()}


def probe_loss(model: GPT, weights: dict, x, y) -> float:
    model.load_state_dict(weights)
    with torch.no_grad():
        return float(model(x, y)[1])


def test_class_shares_sum_to_the_pairing_with_g():
    _, weights, _, _, classes = setup_model()
    rng = np.random.default_rng(3)
    for name, cl in classes.items():
        dW = rng.standard_normal(weights[name].shape)
        G = sum(cl.values())
        shares = geo.class_shares(cl, dW)
        assert list(shares) == list(cl)
        assert sum(shares.values()) == pytest.approx(geo.inner(G, dW), rel=1e-12, abs=1e-15)


def test_first_order_shares_predict_a_small_sgd_step_to_second_order():
    model, weights, x, y, classes = setup_model()
    base = probe_loss(model, weights, x, y)
    errors = []
    for eta in (1e-2, 5e-3):
        dW = {w: eta * sum(cl.values()) for w, cl in classes.items()}  # SGD along G = −∂L/∂W
        stepped = {k: v + torch.as_tensor(dW[k]) if k in dW else v for k, v in weights.items()}
        shares = {w: geo.class_shares(cl, dW[w]) for w, cl in classes.items()}
        predicted = -sum(v for _, v in geo.rank_routes(shares))
        actual = probe_loss(model, stepped, x, y) - base
        assert predicted < 0 and actual < 0
        errors.append(abs(actual - predicted))
        assert errors[-1] < 0.05 * abs(actual)
    assert 3.0 < errors[0] / errors[1] < 5.0  # the error halves twice when the step halves: second order


def test_rank_routes_sums_classes_over_weights_largest_first():
    ranked = geo.rank_routes({"a": {"direct": 1.0, "L1.q": 0.5}, "b": {"direct": -0.25, "L1.q": 2.0, "L1.mlp": 0.1}})
    assert ranked == [("L1.q", 2.5), ("direct", 0.75), ("L1.mlp", 0.1)]


def test_spectral_direction_drops_round_off_singular_values():
    rng = np.random.default_rng(4)
    G = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 5))  # rank 2
    s = np.linalg.svd(geo.spectral_direction(G), compute_uv=False)
    np.testing.assert_allclose(s[:2], 1.0, atol=1e-12)
    assert np.all(s[2:] < 1e-12)


def test_spectra_from_one_svd_equal_each_directions_own():
    rng = np.random.default_rng(5)
    G = rng.standard_normal((9, 7))
    for d in geo.geometries(G, rng.standard_normal((9, 7)), G ** 2 + 0.1):
        np.testing.assert_allclose(d.singular_values, np.linalg.svd(d.matrix, compute_uv=False), atol=1e-12)


def test_a_share_is_undefined_where_the_parts_cancel():
    # 22330.9% was shown for a part of 2.2 over a sum of 0.0098: parts that cancel give no share
    assert geo.fractions({"a": 2.2330, "b": -2.2232}) is None
    assert "cancel" in geo.why_no_shares({"a": 2.2330, "b": -2.2232})
    assert geo.fractions({"a": 0.0, "b": 0.0}) is None and "0" in geo.why_no_shares({"a": 0.0})
    shares = geo.fractions({"a": 3.0, "b": -1.0})
    assert shares == {"a": 1.5, "b": -0.5}  # a part larger than the sum is fine while the sum means something
    edge = geo.SHARE_DEFINED * 2.0
    assert geo.fractions({"a": 1.0 + edge / 2, "b": -1.0 + edge / 2}) is not None
