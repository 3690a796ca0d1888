"""The mixed form against autograd's mixed second derivative, in float64 (docs/second-order.md).

The reference is independent of the words: the loss is verify.chain_loss for the note's chain and
engine.model.gpt.GPT itself for a GPT (its explicit attention path: the fused kernel has no second
derivative). For a random direction V on B it differentiates s = ⟨−∂L/∂B, V⟩ by A, which is what the mixed
terms sum to (Σ M^t = −H_AB V). Metric: max|Δ| / max|reference|, as for the first-order forms; and as there
(docs/verification.md), a pair whose reference is round-off is *degenerate* and is judged by max|Δ| / the largest
mixed derivative of the model's steepest weight along a random direction (the model's scale). Either side can
make it so: B's gradient is round-off (the plain chain collapses at depth ≥ 4 and its last K's whole Hessian row
is round-off, 1e-21 at depth 6), or the mixed derivative itself is (A = one head's slice of b_K, whose gradient
is identically zero: a constant added to a row of scores leaves the softmax as it was, so H_BA = 0 for every B).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.func import functional_call

from . import chain as chain_mod
from . import gpt, verify
from .derive import Forms
from .evaluate import Bound
from .mixed import MixedForm

TOLERANCE = 1e-10


@dataclass(frozen=True)
class MixedCheck:
    weight: str         # B
    other: str          # A
    terms: int
    error: float        # max|Σ M^t − autograd| / max|autograd| (degenerate: / the model's scale)
    degenerate: str = ""  # why the reference is round-off ("" when it is not)

    @property
    def ok(self) -> bool:
        return self.error <= TOLERANCE


@dataclass(frozen=True)
class Reference:
    mixed: torch.Tensor  # ∂⟨−∂L/∂B, V⟩/∂A
    degenerate: str      # why the reference is round-off next to the model's ("" when it is not)
    scale: float         # what an error is divided by: max|mixed|, or the model's scale when degenerate


def mixed_reference(loss, weights: dict[str, torch.Tensor], weight: str, other: str, V: torch.Tensor,
                    seed: int = 0) -> Reference:
    """∂⟨−∂L/∂B, V⟩/∂A by double backward passes; `loss(weights)` is the scalar loss."""
    w = {k: v.detach().clone().requires_grad_(True) for k, v in weights.items()}
    grads = dict(zip(w, torch.autograd.grad(loss(w), list(w.values()), create_graph=True)))

    def row(name: str, direction: torch.Tensor) -> dict[str, torch.Tensor]:
        got = torch.autograd.grad((-grads[name] * direction).sum(), list(w.values()), retain_graph=True,
                                  allow_unused=True)
        return {k: torch.zeros_like(w[k]) if g is None else g for k, g in zip(w, got)}

    mixed = row(weight, V)[other]
    size = {k: float(g.detach().abs().max()) for k, g in grads.items()}
    steepest = max(size, key=size.get)
    scale = max(float(g.abs().max()) for g in row(steepest, _direction(w[steepest].shape, seed)).values())
    if verify.round_off(size[weight], size[steepest]):
        return Reference(mixed, f"{weight}'s gradient is round-off", scale)
    if verify.round_off(float(mixed.abs().max()), scale):
        return Reference(mixed, "the mixed derivative is round-off", scale)
    return Reference(mixed, "", float(mixed.abs().max()))


def _result(form: MixedForm, ours: torch.Tensor, ref: Reference) -> MixedCheck:
    delta = float((ours - ref.mixed).abs().max())
    return MixedCheck(form.weight, form.other, form.count(), delta / ref.scale if ref.scale > 0 else delta,
                      ref.degenerate)


def _direction(shape, seed: int) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def check_chain(form: MixedForm, batch: int = 2, n: int = 5, seed: int = 0) -> MixedCheck:
    """The mixed form of the note's chain on random weights and a random batch from `seed`."""
    net = form.net
    w = chain_mod.random_weights(net, seed)
    x0, targets = chain_mod.random_batch(net, batch, n, seed + 1)
    bound = Bound(net, *chain_mod.leaves(net, w, x0, targets))
    V = _direction(w[form.weight].shape, seed + 2)
    ref = mixed_reference(lambda ws: verify.chain_loss(net.spec, ws, x0, targets), w, form.weight, form.other, V,
                          seed + 3)
    return _result(form, form.total(bound, V), ref)


def check_gpt(form: MixedForm, seed: int = 0) -> MixedCheck:
    """The mixed form of a GPT (form.net.spec, a ModelConfig) on perturbed initial weights from `seed`."""
    from ..model.gpt import GPT

    cfg = form.net.spec
    w = verify.random_gpt_weights(cfg, seed)
    x, y = verify.random_probe(cfg, seed=seed + 2)
    bound = gpt.bind(form.net, w, x, y, torch.float64)
    V = _direction(w[form.weight].shape, seed + 3)
    model = GPT(cfg).double().eval()

    def loss(ws):
        return functional_call(model, ws, (x, y), {"trace": []})[1]

    ref = mixed_reference(loss, w, form.weight, form.other, V, seed + 4)
    return _result(form, form.total(bound, V), ref)


def check(forms: Forms, weight: str, other: str) -> MixedCheck:
    """The mixed form of `weight` by `other` on `forms`' network (the chain or a GPT), checked."""
    form = MixedForm(forms, weight, other)
    if isinstance(forms.net.spec, chain_mod.ChainSpec):
        return check_chain(form)
    return check_gpt(form)


__all__ = ["TOLERANCE", "MixedCheck", "Reference", "mixed_reference", "check_chain", "check_gpt", "check"]
