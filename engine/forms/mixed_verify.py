"""The mixed form against autograd's mixed second derivative, in float64 (FORMS.md §9).

The reference is independent of the words: the loss is verify.chain_loss for the note's chain and
engine.model.GPT itself for a GPT (its explicit attention path: the fused kernel has no second
derivative). For a random direction V on B it differentiates s = ⟨−∂L/∂B, V⟩ by A, which is what the mixed
terms sum to (Σ M^t = −H_AB V). Metric: max|Δ| / max|reference|, as for the first-order forms.
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
    weight: str      # B
    other: str       # A
    terms: int
    error: float     # max|Σ M^t − autograd| / max|autograd|

    @property
    def ok(self) -> bool:
        return self.error <= TOLERANCE


def mixed_reference(loss, weights: dict[str, torch.Tensor], weight: str, other: str,
                    V: torch.Tensor) -> torch.Tensor:
    """∂⟨−∂L/∂B, V⟩/∂A by two backward passes; `loss(weights)` is the scalar loss."""
    w = {k: v.detach().clone().requires_grad_(True) for k, v in weights.items()}
    gB = torch.autograd.grad(loss(w), w[weight], create_graph=True)[0]
    got = torch.autograd.grad((-gB * V).sum(), w[other], allow_unused=True)[0]
    return torch.zeros_like(w[other]) if got is None else got


def _error(ours: torch.Tensor, ref: torch.Tensor) -> float:
    delta = float((ours - ref).abs().max())
    scale = float(ref.abs().max())
    return delta / scale if scale > 0 else delta


def _direction(shape, seed: int) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def check_chain(form: MixedForm, batch: int = 2, n: int = 5, seed: int = 0) -> MixedCheck:
    """The mixed form of the note's chain on random weights and a random batch from `seed`."""
    net = form.net
    w = chain_mod.random_weights(net, seed)
    x0, targets = chain_mod.random_batch(net, batch, n, seed + 1)
    bound = Bound(net, *chain_mod.leaves(net, w, x0, targets))
    V = _direction(w[form.weight].shape, seed + 2)
    ref = mixed_reference(lambda ws: verify.chain_loss(net.spec, ws, x0, targets), w, form.weight, form.other, V)
    return MixedCheck(form.weight, form.other, form.count(), _error(form.total(bound, V), ref))


def check_gpt(form: MixedForm, seed: int = 0) -> MixedCheck:
    """The mixed form of a GPT (form.net.spec, a ModelConfig) on perturbed initial weights from `seed`."""
    from ..model import GPT

    cfg = form.net.spec
    w = verify.random_gpt_weights(cfg, seed)
    x, y = verify.random_probe(cfg, seed=seed + 2)
    bound = gpt.bind(form.net, w, x, y, torch.float64)
    V = _direction(w[form.weight].shape, seed + 3)
    model = GPT(cfg).double().eval()

    def loss(ws):
        return functional_call(model, ws, (x, y), {"trace": []})[1]

    ref = mixed_reference(loss, w, form.weight, form.other, V)
    return MixedCheck(form.weight, form.other, form.count(), _error(form.total(bound, V), ref))


def check(forms: Forms, weight: str, other: str) -> MixedCheck:
    """The mixed form of `weight` by `other` on `forms`' network (the chain or a GPT), checked."""
    form = MixedForm(forms, weight, other)
    if isinstance(forms.net.spec, chain_mod.ChainSpec):
        return check_chain(form)
    return check_gpt(form)


__all__ = ["TOLERANCE", "MixedCheck", "mixed_reference", "check_chain", "check_gpt", "check"]
