"""Summed coefficients equal −grad from autograd in float64 (docs/verification.md, degenerate rule too):
the chain at depths 1–4 with each variant and all together, the GPT of the tiny and seed-chain presets,
and 2-layer GPTs with every option."""

import dataclasses
import itertools

import pytest
import torch

from engine.forms import evaluate, verify
from engine.configs.presets import load_preset

from .helpers import CHAIN_VARIANTS, TOL, assert_close, chain_case, gpt_case, small_config


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
@pytest.mark.parametrize("variant", sorted(CHAIN_VARIANTS))
def test_chain_coefficients_equal_autograd(depth, variant):
    net, f, bound, ref = chain_case(depth, **CHAIN_VARIANTS[variant])
    assert_close(evaluate.total(bound, f), ref)
    assert_close(evaluate.classes_summed(bound, f), ref)
    if f.count() <= 2500:
        per_term = evaluate.terms(bound, f, limit=None)
        summed = {k: 0 * v for k, v in ref.items()}
        for t in f.terms(limit=None):
            summed[t.weight] = summed[t.weight] + per_term[t.id]
        assert_close(summed, ref)


def test_the_degenerate_rule_judges_collapsed_weights_against_the_model():
    # a gradient far below the model's largest is judged by max|Δ| / max over the model (docs/verification.md)
    ref = {"big": torch.tensor([1.0]), "tiny": torch.tensor([1e-9])}
    ours = {"big": torch.tensor([1.0]), "tiny": torch.tensor([2e-9])}
    errs = verify.relative_errors(ours, ref)
    assert errs["tiny"] == (pytest.approx(1e-9), True)
    assert errs["big"] == (0.0, False)


@pytest.mark.parametrize("preset", ["tiny", "seed-chain"])
def test_gpt_presets_equal_autograd(preset):
    cfg = load_preset(preset).model
    cfg = dataclasses.replace(cfg, vocab_size=11, n_ctx=8)  # small vocabulary and context, same architecture
    net, f, bound, ref, _ = gpt_case(cfg, batch=2, length=8)
    checks = verify.compare(f, bound, ref, term_limit=4000)
    assert "terms" in checks[0].methods
    assert max(c.error for c in checks) <= TOL, [c for c in checks if c.error > TOL]


OPTIONS = list(itertools.product(["pre", "post", "none"], [True, False], ["gelu", "relu"], [False, True],
                                 ["cross_entropy", "squared_error"]))


@pytest.mark.parametrize("norm, residual, activation, tied, loss", OPTIONS)
def test_two_layer_gpt_with_every_option_equals_autograd(norm, residual, activation, tied, loss):
    cfg = small_config(norm=norm, residual=residual, activation=activation, tied=tied, loss=loss,
                       pos_encoding="learned", mask="banded", band=2)
    net, f, bound, ref, _ = gpt_case(cfg)
    checks = verify.compare(f, bound, ref)
    assert max(c.error for c in checks) <= TOL, [c for c in checks if c.error > TOL]


@pytest.mark.parametrize("pos, mask", [("sinusoidal", "causal"), ("none", "none"), ("learned", "causal")])
def test_positions_and_masks_equal_autograd(pos, mask):
    net, f, bound, ref, _ = gpt_case(small_config(pos_encoding=pos, mask=mask, n_head=1))
    assert max(c.error for c in verify.compare(f, bound, ref)) <= TOL


def test_float32_evaluation_agrees_to_single_precision():
    from engine.forms import gpt
    cfg = small_config()
    net, f, bound, ref, (w, x, y) = gpt_case(cfg)
    b32 = gpt.bind(net, w, x, y, dtype=torch.float32)
    tot = evaluate.total(b32, f)
    assert all(v.dtype == torch.float32 for v in tot.values())
    assert_close({k: v.double() for k, v in tot.items()}, ref, tol=1e-4)


GPT2_PARTS = list(itertools.product(["pre", "post", "none"], [True, False], [1, 2]))


@pytest.mark.parametrize("norm, residual, heads", GPT2_PARTS)
def test_gpt2_parts_equal_autograd(norm, residual, heads):
    """Attention biases (their coefficients too), GELU's tanh form and a layer-norm ε other than 1e-5."""
    cfg = small_config(norm=norm, residual=residual, n_head=heads, attn_bias=True, activation="gelu_tanh",
                       ln_eps=0.25, pos_encoding="learned", tied=heads == 2)
    net, f, bound, ref, _ = gpt_case(cfg)
    checks = verify.compare(f, bound, ref, term_limit=4000)
    assert "terms" in checks[0].methods or heads == 2
    assert {"blocks.1.b_Q", "blocks.1.b_K", "blocks.1.b_V", "blocks.1.b_O"} <= {c.weight for c in checks}
    assert max(c.error for c in checks) <= TOL, [c for c in checks if c.error > TOL]


def test_the_key_bias_has_no_coefficient():
    """q·b_K is the same for every key a query sees, and a softmax row ignores a constant: G(b_K) = 0
    exactly, while b_Q's is not (the degenerate rule of docs/verification.md judges b_K against the model)."""
    cfg = small_config(attn_bias=True)
    net, f, bound, ref, _ = gpt_case(cfg)
    total = evaluate.total(bound, f)
    top = max(float(v.abs().max()) for v in ref.values())
    assert float(total["blocks.0.b_K"].abs().max()) < 1e-14 * top
    assert float(ref["blocks.0.b_K"].abs().max()) < 1e-14 * top
    assert float(total["blocks.0.b_Q"].abs().max()) > 1e-3 * top
