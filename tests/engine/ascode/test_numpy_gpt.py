"""engine/ascode/numpy_gpt.py, the GPT written out in NumPy: its loss equals engine.model.gpt.GPT's, its G
equals autograd's −∂L/∂W and its route classes equal the forms engine's, in float64, on every switch of the
model; asked for a few weights it gives the same numbers; and it loads nothing but NumPy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.ascode import numpy_gpt as ng
from engine.ascode.inputs import config_dict, numpy_weights
from engine.forms import Snapshot, verify
from engine.model.gpt import GPT
from tests.engine.forms.helpers import small_config
from tests.fresh_imports import ROOT, loaded_by

CONFIGS = {
    "relu, two heads, sinusoidal": small_config(norm="none", activation="relu"),
    "no residual, squared error, learned positions, tied": small_config(
        n_head=1, norm="none", activation="relu", residual=False, loss="squared_error", pos_encoding="learned",
        tied=True),
    "exact GELU, attention biases": small_config(norm="none", activation="gelu", attn_bias=True),
    "pre-LN, GELU's tanh form, biases, no positions (GPT-2's block)": small_config(
        norm="pre", activation="gelu_tanh", attn_bias=True, pos_encoding="none"),
    "post-LN, tied, three heads": small_config(norm="post", activation="relu", tied=True, n_head=3, d_model=12),
    "banded mask, post-LN, no residual": small_config(mask="banded", band=2, residual=False, norm="post"),
    "no mask, pre-LN, squared error": small_config(mask="none", loss="squared_error", norm="pre"),
}
TOL = 1e-10


def case(cfg, seed=0):
    w = verify.random_gpt_weights(cfg, seed)
    x, y = verify.random_probe(cfg, seed=seed + 2)
    return w, x, y


def autograd(cfg, w, x, y):
    model = GPT(cfg).double().eval()
    model.load_state_dict(w)
    loss = model(x, y)[1]
    grads = torch.autograd.grad(loss, list(model.parameters()))
    return float(loss.detach()), {n: -g for (n, _), g in zip(model.named_parameters(), grads)}


@pytest.mark.parametrize("label", list(CONFIGS))
def test_loss_coefficients_and_route_classes_equal_the_models_autograds_and_the_forms_engines(label):
    cfg = CONFIGS[label]
    w, x, y = case(cfg)
    loss, ref = autograd(cfg, w, x, y)
    W = numpy_weights(cfg, w)
    ours = ng.coefficients(config_dict(cfg), W, x.numpy(), y.numpy())
    assert ng.loss(config_dict(cfg), W, x.numpy(), y.numpy()) == pytest.approx(loss, rel=1e-13)
    totals = {n: torch.from_numpy(sum(c.values())) for n, c in ours.items()}
    assert set(totals) == set(ref)
    errors = verify.relative_errors(totals, ref)  # b_K's gradient is round-off: judged by the model's scale
    assert max(e for e, _ in errors.values()) <= TOL, errors
    snap = Snapshot(cfg, w, x, y, torch.float64)
    top = max(float(r.abs().max()) for r in ref.values())
    for name in ref:
        engine = snap.classes(name)[name]
        assert set(engine) == set(ours[name]), name
        for c, g in engine.items():
            assert np.abs(g.numpy() - ours[name][c]).max() <= TOL * top, (name, c)


def test_a_few_weights_asked_for_get_the_same_numbers_and_one_class_is_the_whole():
    cfg = CONFIGS["pre-LN, GELU's tanh form, biases, no positions (GPT-2's block)"]
    w, x, y = case(cfg, seed=4)
    c, W, xs, ys = config_dict(cfg), numpy_weights(cfg, w), x.numpy(), y.numpy()
    every = ng.coefficients(c, W, xs, ys)
    want = ["blocks.1.W_K", "blocks.1.ln1.g", "ln_f.b"]
    some = ng.coefficients(c, W, xs, ys, want)
    assert set(some) == set(want)
    for n in want:
        assert set(some[n]) == set(every[n]) and all(np.array_equal(some[n][k], every[n][k]) for k in some[n])
    whole = ng.coefficients(c, W, xs, ys, want, classes=False)
    for n in want:
        assert list(whole[n]) == ["G"]
        np.testing.assert_allclose(whole[n]["G"], sum(every[n].values()), rtol=0, atol=1e-14)


def test_uses_add_up_position_by_position_to_the_coefficient():
    # the token readout reads G as a sum over the probe's positions: each use's per-position pieces add up to it
    cfg = CONFIGS["post-LN, tied, three heads"]
    w, x, y = case(cfg, seed=6)
    c, W = config_dict(cfg), numpy_weights(cfg, w)
    _, cache = ng.forward(c, W, x.numpy(), y.numpy())
    uses = ng.backward(c, W, cache, ["W_E", "blocks.0.W_in"])
    assert [u.kind for u in uses["W_E"]] == ["matrix_t", "rows"]  # the tied unembedding, then the embedding
    u = uses["blocks.0.W_in"][0]
    N = x.numel()
    assert u.kind == "matrix" and u.X.shape[0] == N
    for cls, delta in u.deltas.items():
        pieces = sum(np.outer(u.X[t], delta[t]) for t in range(N))
        np.testing.assert_allclose(pieces, u.G(delta, W["blocks.0.W_in"].shape), rtol=1e-12, atol=1e-15)


def test_the_module_loads_nothing_but_numpy(tmp_path):
    code = f"import runpy; runpy.run_path({str(ROOT / 'engine/ascode/numpy_gpt.py')!r})"
    assert loaded_by(code, ("torch", "engine", "scipy", "matplotlib"), tmp_path) == []


@pytest.mark.parametrize("label", list(CONFIGS))
def test_the_torch_loss_a_generated_file_checks_with_is_the_models(label):
    cfg = CONFIGS[label]
    w, x, y = case(cfg, seed=5)
    loss, _ = autograd(cfg, w, x, y)
    W = {k: torch.from_numpy(v) for k, v in numpy_weights(cfg, w).items()}
    assert float(ng.torch_loss(config_dict(cfg), W, x, y)) == pytest.approx(loss, rel=1e-13)
