"""The mixed form by route classes (engine/forms/mixed_classes.py) in float64: the classes of B's coefficient
moved along A's update sum to autograd's −H_BA ΔA, and each is its class's mixed terms read along ΔA."""

from __future__ import annotations

from collections import defaultdict

import pytest
import torch

from engine.analysis.interaction import ProbeLoss, gradient, hessian_columns, leaves
from engine.forms import gpt, verify
from engine.forms.mixed import MixedForm
from engine.forms.mixed_classes import class_moves
from tests.engine.forms.helpers import small_config

CONFIGS = {
    "pre-LN, GELU": small_config(norm="pre", activation="gelu"),
    "post-LN, ReLU, tied": small_config(norm="post", activation="relu", tied=True),
    "no norm, GELU's tanh form, attention biases": small_config(norm="none", activation="gelu_tanh", attn_bias=True),
}
PAIRS = [("blocks.1.W_K", "blocks.0.W_Q"), ("blocks.0.W_out", "blocks.0.W_in"), ("blocks.0.W_Q", "blocks.1.W_V")]


def case(cfg, seed: int = 0):
    w = verify.random_gpt_weights(cfg, seed)
    x, y = verify.random_probe(cfg, 2, 6, seed + 2)
    return w, x, y


@pytest.mark.parametrize("label", list(CONFIGS))
@pytest.mark.parametrize("B, A", PAIRS)
def test_class_moves_sum_to_minus_h_delta(label, B, A):
    cfg = CONFIGS[label]
    w, x, y = case(cfg)
    delta = 0.1 * torch.randn(w[A].shape, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    moves = class_moves(cfg, w, x, y, B, A, delta)
    loss = ProbeLoss(cfg, x, y)
    params = leaves(w, loss.names(w))
    _, grads = gradient(loss, params, create_graph=True)
    want = -hessian_columns(params, grads, {A: delta})[A][B]
    got = sum(moves.values())
    assert len(moves) > 1
    assert float((got - want).abs().max()) <= 1e-10 * float(want.abs().max())


@pytest.mark.parametrize("B, A", PAIRS)
def test_each_class_is_its_mixed_terms_read_along_the_update(B, A):
    cfg = CONFIGS["pre-LN, GELU"]
    w, x, y = case(cfg, 1)
    g = torch.Generator().manual_seed(7)
    delta = torch.randn(w[A].shape, dtype=torch.float64, generator=g)
    V = torch.randn(w[B].shape, dtype=torch.float64, generator=g)
    moves = class_moves(cfg, w, x, y, B, A, delta)
    form = MixedForm(gpt.derive(cfg), B, A, limit=None)
    values = form.values(gpt.bind(form.net, w, torch.as_tensor(x), torch.as_tensor(y)), V)
    by_class = defaultdict(float)
    for t in form.terms:
        by_class[t.route_class] += float((values[t.id] * delta).sum())
    assert set(by_class) <= set(moves)
    for c, move in moves.items():
        assert abs(float((V * move).sum()) - by_class[c]) <= 1e-10 * max(1.0, abs(by_class[c])), c
