"""Shared test helpers for the forms engine: chains and GPT configs with their numbers."""

from __future__ import annotations

import torch

from engine.configs.config import ModelConfig
from engine.forms import chain, evaluate, gpt, verify
from engine.forms.derive import Forms

CHAIN_VARIANTS = {
    "plain": {},
    "residual": {"residual": True},
    "heads": {"heads": 2},
    "layer_norm": {"layer_norm": True},
    "cross_entropy": {"cross_entropy": True},
    "causal": {"causal": True},
    "all": {"residual": True, "heads": 2, "layer_norm": True, "cross_entropy": True, "causal": True},
}

# The chain without residuals collapses with depth: at depth 4 its last Q, K gradients are 4e-6…2e-5 of the
# largest, just above the degenerate threshold (docs/verification.md), and their relative error reaches ~2e-12
# (round-off of a near-cancelling gradient). Elsewhere errors are ≤ 1e-14. 1e-10 keeps a margin and is 100×
# below the CLI.
TOL = 1e-10


def chain_case(depth: int, batch: int = 2, n: int = 5, seed: int = 0, **options):
    net = chain.encoder(depth, **options)
    w = chain.random_weights(net, seed)
    x0, targets = chain.random_batch(net, batch, n, seed + 1)
    bound = evaluate.Bound(net, *chain.leaves(net, w, x0, targets))
    return net, Forms(net), bound, verify.chain_reference(net.spec, w, x0, targets)


def small_config(**kw) -> ModelConfig:
    base = dict(n_layer=2, n_head=2, d_model=8, d_ff=12, n_ctx=6, vocab_size=7)
    base.update(kw)
    return ModelConfig(**base)


def gpt_case(cfg: ModelConfig, batch: int = 2, length: int = 6, seed: int = 0):
    w = verify.random_gpt_weights(cfg, seed)
    x, y = verify.random_probe(cfg, batch, length, seed + 2)
    net = gpt.network(cfg)
    bound = gpt.bind(net, w, x, y)
    return net, gpt.derive(cfg), bound, verify.gpt_reference(cfg, w, x, y), (w, x, y)


def assert_close(ours: dict[str, torch.Tensor], ref: dict[str, torch.Tensor], tol: float = TOL) -> None:
    errs = verify.relative_errors(ours, ref)
    bad = {k: e for k, (e, _) in errs.items() if not e <= tol}
    assert not bad, f"relative errors above {tol}: {bad}"
