"""Verification against torch autograd in float64 (docs/verification.md).

The references are independent of the words: the note's chain is written here directly in torch
(F.layer_norm, a masked softmax, F.cross_entropy), and the GPT is engine.model.gpt.GPT itself. The symbolic
side sums coefficients three ways — over every term (when there are few enough), over route classes, and by
the backward pass of the pull-back templates — and each is compared with −grad.

Metric per weight: max|Δ| / max|grad|. A weight whose gradient is below 1e-6 of the model's largest is
degenerate (the plain chain collapses at depth ≥ 4 and its last Q, K gradients are round-off): it is judged
by max|Δ| / max over the model instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..configs.config import ModelConfig
from ..model.gpt import GPT
from . import chain as chain_mod
from . import evaluate, gpt
from .chain import ChainSpec
from .derive import DEFAULT_LIMIT, Forms
from .network import Network

TOLERANCE = 1e-8
DEGENERATE = 1e-6
# The same rule where it decides what a view shows rather than how an error is judged (the second-order view's
# degenerate B): a float64 gradient this far below the model's largest is round-off. b_K's, identically zero,
# is 1e-21 of it; a real one can be small at initialisation (b_Q of a 2-layer model: 4e-7, which DEGENERATE
# would call round-off, and the view would hide a real move).
ROUND_OFF = 1e-12


@dataclass(frozen=True)
class Check:
    weight: str
    error: float        # docs/verification.md#the-metric, worst of the methods compared
    degenerate: bool
    methods: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return self.error <= TOLERANCE


def round_off(size: float, top: float, threshold: float = DEGENERATE) -> bool:
    """Whether a weight's largest entry `size` (of a gradient, or of a mixed derivative) is round-off next to
    the model's largest `top`: the degenerate rule of docs/verification.md#degenerate-weights."""
    return size < threshold * top


def relative_errors(ours: dict[str, torch.Tensor], ref: dict[str, torch.Tensor]) -> dict[str, tuple[float, bool]]:
    """weight -> (error, degenerate) by the metric of docs/verification.md#the-metric."""
    top = max(float(r.abs().max()) for r in ref.values())
    out = {}
    for name, r in ref.items():
        scale = float(r.abs().max())
        degenerate = round_off(scale, top)
        delta = float((ours[name] - r).abs().max())
        out[name] = (delta / (top if degenerate else scale) if (top if degenerate else scale) > 0 else delta,
                     degenerate)
    return out


# ---- the note's chain in plain torch ----

def chain_loss(spec: ChainSpec, w: dict[str, torch.Tensor], x0: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The loss of docs/forms.md written directly: ½‖T − X_L‖² summed, or the mean cross-entropy."""
    X = x0
    n = x0.shape[-2]
    masked = torch.ones(n, n, dtype=torch.bool).triu(1)
    for i in range(spec.depth):
        A = X
        if spec.layer_norm:
            A = F.layer_norm(X, (spec.d,), w[f"g_{i}"].reshape(-1), w[f"beta_{i}"].reshape(-1), spec.ln_eps)
        U = w[f"b_{i}"]
        for h in range(spec.heads):
            sub = str(i) if spec.heads == 1 else f"{{{i},{h}}}"
            scores = (A @ w[f"Q_{sub}"]) @ (A @ w[f"K_{sub}"]).transpose(-1, -2) / math.sqrt(spec.d_k)
            if spec.causal:
                scores = scores.masked_fill(masked, float("-inf"))
            U = U + torch.softmax(scores, dim=-1) @ A @ w[f"V_{sub}"]
        Xn = torch.relu(U) @ w[f"W_{i}"] + w[f"f_{i}"]
        X = X + Xn if spec.residual else Xn
    if spec.cross_entropy:
        logits = X @ w["U_o"] + w["c_o"]
        return F.cross_entropy(logits.reshape(-1, spec.vocab), targets.reshape(-1))
    return 0.5 * ((targets - X) ** 2).sum()


def chain_reference(spec: ChainSpec, weights, x0, targets) -> dict[str, torch.Tensor]:
    """−∂L/∂W by autograd for every weight of the chain."""
    w = {k: v.detach().clone().requires_grad_(True) for k, v in weights.items()}
    chain_loss(spec, w, x0, targets).backward()
    return {k: -v.grad for k, v in w.items()}


def gpt_reference(cfg: ModelConfig, weights, x, y) -> dict[str, torch.Tensor]:
    """−∂L/∂W by autograd on engine.model.gpt.GPT in float64, eval mode (no dropout)."""
    model = GPT(cfg).double().eval()
    model.load_state_dict({k: v.double() for k, v in weights.items()})
    _, loss = model(x, y)
    loss.backward()
    return {k: -p.grad for k, p in model.named_parameters()}


def random_gpt_weights(cfg: ModelConfig, seed: int = 0) -> dict[str, torch.Tensor]:
    """GPT initial weights from a fixed seed with every parameter perturbed, so that biases and gains
    are not 0 and 1 and every term is exercised."""
    torch.manual_seed(seed)
    model = GPT(cfg).double()
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.2 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def random_probe(cfg: ModelConfig, batch: int = 2, length: int = 8, seed: int = 2):
    g = torch.Generator().manual_seed(seed)
    T = min(length, cfg.n_ctx)
    return (torch.randint(cfg.vocab_size, (batch, T), generator=g),
            torch.randint(cfg.vocab_size, (batch, T), generator=g))


# ---- the checks ----

def compare(forms: Forms, bound: evaluate.Bound, ref: dict[str, torch.Tensor],
            term_limit: int = DEFAULT_LIMIT) -> list[Check]:
    """Summed symbolic coefficients (backward templates, route classes, and every term when the form has
    at most `term_limit`) against the reference, per weight in model order."""
    methods = {"total": evaluate.total(bound, forms), "classes": evaluate.classes_summed(bound, forms)}
    if forms.count() <= term_limit:
        per_term = evaluate.terms(bound, forms, limit=None)
        summed: dict[str, torch.Tensor] = {k: torch.zeros_like(v) for k, v in ref.items()}
        for t in forms.iter_terms():
            summed[t.weight] = summed[t.weight] + per_term[t.id]
        methods["terms"] = summed
    errs = {m: relative_errors(v, ref) for m, v in methods.items()}
    out = []
    for p in forms.net.params:
        worst = max(errs[m][p.name][0] for m in methods)
        out.append(Check(p.name, worst, errs["total"][p.name][1], tuple(methods)))
    return out


def verify_chain(net: Network, batch: int = 2, n: int = 5, seed: int = 0,
                 term_limit: int = DEFAULT_LIMIT) -> list[Check]:
    spec: ChainSpec = net.spec
    weights = chain_mod.random_weights(net, seed)
    x0, targets = chain_mod.random_batch(net, batch, n, seed + 1)
    bound = evaluate.Bound(net, *chain_mod.leaves(net, weights, x0, targets))
    return compare(Forms(net), bound, chain_reference(spec, weights, x0, targets), term_limit)


def verify_gpt(cfg: ModelConfig, batch: int = 2, length: int = 8, seed: int = 0,
               term_limit: int = DEFAULT_LIMIT) -> list[Check]:
    weights = random_gpt_weights(cfg, seed)
    x, y = random_probe(cfg, batch, length, seed + 2)
    net = gpt.network(cfg)
    bound = gpt.bind(net, weights, x, y)
    return compare(gpt.derive(cfg), bound, gpt_reference(cfg, weights, x, y), term_limit)


__all__ = ["Check", "relative_errors", "chain_loss", "chain_reference", "gpt_reference", "random_gpt_weights",
           "random_probe", "compare", "verify_chain", "verify_gpt", "TOLERANCE"]
