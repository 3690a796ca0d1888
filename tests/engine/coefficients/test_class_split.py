"""Route classes by autograd on the module (engine/coefficients/class_split.py): in float64 they equal the forms
engine's classes, weight by weight and class by class, for every option of ModelConfig, and sum to autograd's
−∂L/∂W; the whole model's shares of an update equal those read from the classes' matrices."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
import torch

from engine.coefficients import RowSparse, class_split, dense, inner
from engine.configs.config import ModelConfig
from engine.forms import Snapshot
from engine.model.gpt import GPT

V = 11


def case(**kw):
    torch.manual_seed(0)
    cfg = ModelConfig(n_layer=2, n_head=2, d_model=8, d_ff=12, n_ctx=6, vocab_size=V, **kw)
    model = GPT(cfg).double().eval()
    with torch.no_grad():  # biases and gains away from their initial 0 and 1, so that every route carries
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.add_(0.3 * torch.randn_like(p))
    g = torch.Generator().manual_seed(1)
    x, y = torch.randint(V, (2, 5), generator=g), torch.randint(V, (2, 5), generator=g)
    return model, x, y


OPTIONS = [dict(norm=n, residual=r, tied=t) for n, r, t in itertools.product(["pre", "post", "none"], [True, False],
                                                                            [True, False])]
OPTIONS += [dict(attn_bias=True), dict(attn_bias=True, norm="post"), dict(pos_encoding="sinusoidal"),
            dict(pos_encoding="none"), dict(mask="banded", band=1), dict(mask="none"), dict(activation="relu"),
            dict(activation="gelu_tanh"), dict(loss="squared_error"), dict(loss="squared_error", tied=True)]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_every_weights_classes_equal_the_forms_engines(options):
    model, x, y = case(**options)
    weights = {k: v.detach() for k, v in model.state_dict().items()}
    forms = Snapshot(model.cfg, weights, x, y, torch.float64).classes()
    model.zero_grad()
    with torch.enable_grad():
        model(x, y)[1].backward()
    # every weight from one pass (weight_classes is the same pass for one weight, stopped at its sub-block; checked
    # weight by weight against model_shares below): one pass per weight was 0.17 s of CPU a case
    split = class_split.model_classes(model, x, y, [name for name, _ in model.named_parameters()])
    for name, p in model.named_parameters():
        got = split[name]
        want = {c: m.numpy() for c, m in forms[name].items()}
        assert set(got) == set(want), name
        for c in want:
            np.testing.assert_allclose(dense(got[c]), want[c], rtol=1e-10, atol=1e-13, err_msg=f"{name} {c}")
        np.testing.assert_allclose(sum(dense(m) for m in got.values()), -p.grad.numpy(), rtol=1e-10, atol=1e-13)


def test_the_embeddings_classes_are_the_probes_rows():
    model, x, y = case(tied=True)
    got = class_split.weight_classes(model, x, y, "W_E")
    rows = np.unique(x.numpy())
    for c, m in got.items():
        if c == "unembed":
            assert isinstance(m, np.ndarray) and m.shape == (V, 8)  # the readout reaches every token
        else:
            assert isinstance(m, RowSparse) and np.array_equal(m.rows, rows) and m.shape == (V, 8)


@pytest.mark.parametrize("options", [dict(), dict(norm="post", tied=True), dict(residual=False, attn_bias=True)],
                         ids=str)
def test_the_whole_models_shares_are_the_sum_of_each_weights(options):
    model, x, y = case(**options)
    g = torch.Generator().manual_seed(2)
    names = [n for n, _ in model.named_parameters()]
    directions = {d: {n: torch.randn(p.shape, generator=g, dtype=torch.float64) for n, p in model.named_parameters()}
                  for d in ("applied", "sign")}
    among = names[::2]  # any set of weights: the others count nothing
    got = class_split.model_shares(model, x, y, among, lambda n: {d: D[n] for d, D in directions.items()})
    for d, D in directions.items():
        want: dict[str, float] = {}
        for n in among:
            for c, m in class_split.weight_classes(model, x, y, n).items():
                want[c] = want.get(c, 0.0) + inner(m, D[n].numpy())
        assert set(got[d]) == set(want)
        for c in want:
            assert got[d][c] == pytest.approx(want[c], rel=1e-9, abs=1e-12), (d, c)
