"""A weight's coefficient over training: what the weight pane and `export --what coefficient` show.

For one weight W of a run at one saved step s, on the run's fixed probe batch (docs/forms.md#read-out):

    G          the form's coefficient, Σ over route classes of Σ G_t^t = −∂L/∂W (engine.forms.Snapshot)
    grad       −∂L/∂W by autograd on engine.model.gpt.GPT in eval mode, the same dtype: the check
    agreement  max|G − grad| / max|grad| (docs/verification.md#the-metric): what the pane's badge shows
    classes    route class -> its matrix (docs/route-classes.md#the-automaton; they sum to G exactly)
    terms      term ID -> its matrix, when the weight has at most TERM_LIMIT terms (else empty)

and the update that reached s from the previous saved step p, ΔW = W(s) − W(p) (so the newest step has one
too), beside the gradient flow G(p) it would have followed from p under plain gradient descent:
cos(ΔW, G(p)) and ‖ΔW‖/‖G(p)‖ (`Update`).
Matrices keep the weight's own shape (a bias is a vector). Norms are Frobenius. `CoefficientStore`
(cache.py) caches records in memory and under RUN/cache/coefficients.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import torch

from ..configs.config import ModelConfig

TERM_LIMIT = 64  # per-term splits for a weight with at most this many terms (lines in a chart stay readable)
DTYPES = {"float32": torch.float32, "float64": torch.float64}


@dataclass(frozen=True)
class Summary:
    """The numbers of one step the charts draw (small: kept for every step computed)."""

    step: int
    norm: float                      # ‖G‖
    grad_norm: float                 # ‖grad‖ (autograd)
    agreement: float
    class_norms: dict[str, float]
    term_norms: dict[str, float]


@dataclass(frozen=True, eq=False)
class StepCoefficient:
    weight: str
    step: int
    W: np.ndarray                    # the weight at this step
    G: np.ndarray                    # the form's coefficient (Σ classes)
    grad: np.ndarray                 # −∂L/∂W by autograd
    agreement: float
    classes: dict[str, np.ndarray]   # route class -> matrix, in the order the automaton reached them
    terms: dict[str, np.ndarray] = field(default_factory=dict)  # term ID -> matrix (small weights only)
    term_count: int = 0              # terms the weight has in all (terms may be empty when it is large)

    def summary(self) -> Summary:
        return Summary(self.step, norm(self.G), norm(self.grad), self.agreement,
                       {k: norm(v) for k, v in self.classes.items()}, {k: norm(v) for k, v in self.terms.items()})

    def part(self, name: str | None) -> np.ndarray:
        """G (None), a class's matrix or a term's matrix by name."""
        if name is None:
            return self.G
        if name in self.classes:
            return self.classes[name]
        return self.terms[name]

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.W, self.G, self.grad, *self.classes.values(), *self.terms.values()))


@dataclass(frozen=True, eq=False)
class Update:
    """What the optimizer did to reach a saved step from the previous one, beside the gradient flow there."""

    weight: str
    step: int
    prev_step: int
    dW: np.ndarray                   # W(step) − W(prev_step)
    cosine: float                    # cos(ΔW, G(prev_step)); NaN when either is zero
    ratio: float                     # ‖ΔW‖ / ‖G(prev_step)‖; NaN when G is zero


def norm(a: np.ndarray) -> float:
    return float(np.sqrt(np.sum(np.square(a, dtype=np.float64))))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = norm(a), norm(b)
    if na == 0 or nb == 0:
        return float("nan")
    return float(np.sum(a.astype(np.float64) * b.astype(np.float64)) / (na * nb))


def agreement(G: np.ndarray, grad: np.ndarray) -> float:
    """max|G − grad| / max|grad| (the absolute difference when grad is zero)."""
    delta = float(np.max(np.abs(G.astype(np.float64) - grad.astype(np.float64)), initial=0.0))
    scale = float(np.max(np.abs(grad), initial=0.0))
    return delta / scale if scale > 0 else delta


def autograd_coefficients(cfg: ModelConfig, weights: Mapping[str, torch.Tensor], x, y,
                          dtype: torch.dtype = torch.float32) -> dict[str, torch.Tensor]:
    """−∂L/∂W of every weight on the batch (x, y) by one backward pass of engine.model.gpt.GPT, eval mode."""
    from ..model.gpt import GPT

    model = GPT(cfg).to(dtype).eval()
    model.load_state_dict({k: v.to(dtype) for k, v in weights.items()})
    with torch.enable_grad():
        _, loss = model(torch.as_tensor(x), torch.as_tensor(y))
        loss.backward()
    return {k: -p.grad.detach() for k, p in model.named_parameters()}


def step_coefficient(cfg: ModelConfig, weights: Mapping[str, torch.Tensor], x, y, weight: str, step: int,
                     dtype: torch.dtype = torch.float32, term_limit: int = TERM_LIMIT) -> StepCoefficient:
    """Everything the pane shows of `weight` at one step: the form's classes (and terms when few), their
    sum G, autograd's −∂L/∂W and their agreement."""
    from ..forms import Snapshot, derive

    if weight not in weights:
        raise KeyError(f"no weight {weight!r} in this model")
    forms = derive(cfg)
    count = forms.count(weight)
    snap = Snapshot(cfg, weights, torch.as_tensor(x), torch.as_tensor(y), dtype)
    classes = {k: v.numpy().copy() for k, v in snap.classes(weight)[weight].items()}
    terms = {}
    if count <= term_limit:
        terms = {k: v.numpy().copy() for k, v in snap.terms(weight, limit=term_limit).items()}
    W = weights[weight].detach().to(dtype).numpy().copy()
    G = np.zeros_like(W)
    for m in classes.values():
        G = G + m
    grad = autograd_coefficients(cfg, weights, x, y, dtype)[weight].numpy().copy()
    return StepCoefficient(weight, step, W, G, grad, agreement(G, grad), classes, terms, count)


def update_between(record: StepCoefficient, step: int, weight_at_step: np.ndarray) -> Update:
    """ΔW from the record's step (the previous saved step) to `step` (the weight saved there), against the
    record's G."""
    dW = np.asarray(weight_at_step, dtype=record.W.dtype) - record.W
    g = norm(record.G)
    return Update(record.weight, step, record.step, dW, cosine(dW, record.G),
                  norm(dW) / g if g > 0 else float("nan"))


def as_matrix(a: np.ndarray) -> np.ndarray:
    """A vector (bias, gain) as one row, so every weight shows as a matrix."""
    return a.reshape(1, -1) if a.ndim == 1 else a


def class_description(name: str) -> str:
    """A route class's ID in words (docs/route-classes.md: a route's first branch off the residual stream)."""
    if name == "direct":
        return "routes that branch off the residual stream at no later layer"
    if name == "unembed":
        return "routes through the tied unembedding"
    parts = name.split(".")
    where = {"q": "query", "k": "key", "v": "value", "mlp": "MLP"}.get(parts[1], parts[1])
    head = f", head {parts[2][1:]}" if len(parts) > 2 else ""
    return f"routes whose first branch is layer {parts[0][1:]}'s {where}{head}"


__all__ = ["TERM_LIMIT", "DTYPES", "Summary", "StepCoefficient", "Update", "norm", "cosine", "agreement",
           "autograd_coefficients", "step_coefficient", "update_between", "as_matrix", "class_description"]
