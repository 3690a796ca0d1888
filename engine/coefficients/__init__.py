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

A large model (`progressive`: GPT-2 small's probe is 1 × 1024 tokens) is answered in two stages, since its
split costs about one backward pass of the weight's own sub-block per route class: first G = −∂L/∂W from one
autograd backward, shared by every weight at that step (`pending`: the split is still to come), then the split,
computed with autograd on the module a class at a time (class_split.py: blocks.0.W_Q's 46 classes in 40 s at
1.6 GB, W_E's 50 with only its probe tokens' rows, `RowSparse`), where the forms' network held 9.5 GB. A
split that would hold more than SPLIT_BYTES (`split_bytes` for the forms' network, `module_split_bytes` for the
module's) is not computed: the record keeps G whole and says why (`unsplit`). docs/figures.md#gpt-2-small
gives the times.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ..configs.config import ModelConfig
from .rows import RowSparse, dense, inner

TERM_LIMIT = 64  # per-term splits for a weight with at most this many terms (lines in a chart stay readable)
DTYPES = {"float32": torch.float32, "float64": torch.float64}
# A model whose probe forward costs more than this (2 × parameters × probe tokens, in multiply-adds) has its
# coefficients answered in two stages; GPT-2 small on its 1024-token probe is 2.5e11, a lesson model 1e8.
PROGRESSIVE_FLOPS = 2e10
SPLIT_BYTES = 8 * 2**30  # the most a split's stacked adjoints may hold at once (`split_bytes`)


@dataclass(frozen=True)
class Summary:
    """The numbers of one step the charts draw (small: kept for every step computed)."""

    step: int
    norm: float                      # ‖G‖
    grad_norm: float                 # ‖grad‖ (autograd)
    agreement: float
    class_norms: dict[str, float]
    term_norms: dict[str, float]
    pending: bool = False            # the step's split is still to come (StepCoefficient.pending)


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
    pending: bool = False            # G is autograd's and the split is still to come (a large model)
    unsplit: str = ""                # why G is not split (the split's budget), "" when it is
    axes: Any = None                 # window.Axes when the matrices are a drawn view of larger ones (window.py)
    whole: Summary | None = None     # then the whole record's summary

    def summary(self) -> Summary:
        if self.whole is not None:
            return self.whole
        return Summary(self.step, norm(self.G), norm(self.grad), self.agreement,
                       {k: norm(v) for k, v in self.classes.items()}, {k: norm(v) for k, v in self.terms.items()},
                       self.pending)

    def part(self, name: str | None) -> np.ndarray:
        """G (None), a class's matrix or a term's matrix by name."""
        if name is None:
            return self.G
        if name in self.classes:
            return dense(self.classes[name])
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


def norm(a) -> float:
    if isinstance(a, RowSparse):
        a = a.values
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
                          dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu"
                          ) -> dict[str, torch.Tensor]:
    """−∂L/∂W of every weight on the batch (x, y) by one backward pass of engine.model.gpt.GPT, eval mode, on
    `device`; returned on the CPU."""
    model = module(cfg, weights, dtype, device)
    with torch.enable_grad():
        _, loss = model(torch.as_tensor(x, device=device), torch.as_tensor(y, device=device))
        loss.backward()
    return {k: -p.grad.detach().cpu() for k, p in model.named_parameters()}


def module(cfg: ModelConfig, weights: Mapping[str, torch.Tensor], dtype: torch.dtype,
           device: torch.device | str = "cpu"):
    """The GPT holding `weights` in `dtype` on `device` (the weights themselves where they already are so)."""
    from ..model.gpt import GPT

    return GPT.from_weights(cfg, {k: v.to(device=device, dtype=dtype) for k, v in weights.items()})


def progressive(cfg: ModelConfig, probe_tokens: int) -> bool:
    """Whether a model's coefficients come in two stages (G first, then its split): PROGRESSIVE_FLOPS."""
    from ..configs.sizes import parameter_count

    return 2.0 * parameter_count(cfg) * probe_tokens > PROGRESSIVE_FLOPS


_ATTENTION_INPUTS = ("W_Q", "W_K", "W_V", "b_Q", "b_K", "b_V")  # read inside the attention's scores
_MLP_INPUTS = ("W_in", "b_in")                                    # read inside the MLP's hidden layer


def split_bytes(cfg: ModelConfig, weight: str, classes: int, batch: int, tokens: int, itemsize: int = 4) -> int:
    """What splitting `weight` into `classes` route classes holds at once, estimated. Each class carries its
    own adjoint down to the weight: through the attention's scores (heads × B × T²) for a weight read inside
    them (and a pre-LN block's first layer norm), through the MLP's hidden layer (B × T × d_ff) for one read
    there (and the second layer norm), else along the residual stream (B × T × d_model); the class matrices
    themselves count too. Four such stacks are alive at the peak: measured on GPT-2 small's shape,
    blocks.0.W_Q (46 classes) is estimated at 9.3 GB and peaked at 9.5 GB."""
    from ..model.weight_layout import weight_shapes

    last = weight.rsplit(".", 2)
    name = last[-1] if last[-1] not in ("g", "b") else ".".join(last[-2:])
    pre = cfg.norm == "pre"
    sizes = [int(np.prod(weight_shapes(cfg)[weight])), batch * tokens * cfg.d_model]
    if name in _ATTENTION_INPUTS or pre and name.startswith("ln1."):
        sizes.append(cfg.n_head * batch * tokens * tokens)
    if name in _MLP_INPUTS or pre and name.startswith("ln2."):
        sizes.append(batch * tokens * cfg.d_ff)
    return 4 * classes * max(sizes) * itemsize


def module_split_bytes(cfg: ModelConfig, weight: str, classes: int, batch: int, tokens: int,
                       itemsize: int = 4) -> int:
    """What splitting `weight` with autograd on the module (class_split.py) holds at once, estimated: its class
    matrices (W_E's embedding classes as at most one row per probe token, its unembedding's whole), the class
    adjoints at a sub-block's output and input (B × T × d_model each), and a sub-block's graph (the attention's
    few heads × B × T² stacks)."""
    from ..model.weight_layout import weight_shapes

    shape = weight_shapes(cfg)[weight]
    size = int(np.prod(shape))
    if weight == "W_E":
        size = min(shape[0], batch * tokens) * shape[1]
        matrices = classes * size + (int(np.prod(shape)) if cfg.tied else 0)
    else:
        matrices = classes * size
    stream = 2 * classes * batch * tokens * cfg.d_model
    graph = 6 * cfg.n_head * batch * tokens * tokens + 8 * batch * tokens * max(cfg.d_ff, cfg.d_model)
    return (matrices + stream + graph) * itemsize


def step_coefficient(cfg: ModelConfig, weights: Mapping[str, torch.Tensor], x, y, weight: str, step: int,
                     dtype: torch.dtype = torch.float32, term_limit: int = TERM_LIMIT, snapshot=None, grads=None,
                     split: bool = True, by_module: bool = False, device: torch.device | str = "cpu"
                     ) -> StepCoefficient:
    """Everything the pane shows of `weight` at one step: the form's classes (and terms when few), their
    sum G, autograd's −∂L/∂W and their agreement. `snapshot` (a function that gives the forms bound to these
    weights and batch, called only when a split is computed) and `grads` (autograd's −∂L/∂W of every weight)
    are reused when given: both serve every weight of the step. `by_module`: the classes come from autograd
    on the module (class_split.py; no terms), as a large model's do, on `device`.
    Without `split`, or when the split is over SPLIT_BYTES, G is autograd's and no class is computed
    (`pending`, `unsplit`)."""
    from ..forms import Snapshot, derive, evaluate

    if weight not in weights:
        raise KeyError(f"no weight {weight!r} in this model")
    forms = derive(cfg)
    count = forms.count(weight)
    W = weights[weight].detach().to(dtype).numpy().copy()
    grads = autograd_coefficients(cfg, weights, x, y, dtype, device) if grads is None else grads
    grad = np.asarray(grads[weight], dtype=W.dtype).copy()
    if not split:
        return StepCoefficient(weight, step, W, grad, grad, float("nan"), {}, {}, count, pending=True)
    names = evaluate.class_names(forms, weight)
    x = torch.as_tensor(x)
    need = (module_split_bytes if by_module else split_bytes)(cfg, weight, len(names), x.shape[0], x.shape[1],
                                                              W.itemsize)
    if need > SPLIT_BYTES:
        why = (f"not split: its {len(names)} route classes would hold about {need / 2**30:.1f} GB at once on the "
               f"probe batch ({x.shape[0]} × {x.shape[1]} tokens), over the {SPLIT_BYTES / 2**30:.0f} GB budget")
        return StepCoefficient(weight, step, W, grad, grad, float("nan"), {}, {}, count, unsplit=why)
    terms = {}
    if by_module:
        from .class_split import weight_classes

        classes = weight_classes(module(cfg, weights, dtype, device), x, torch.as_tensor(y), weight)
    else:
        snap = Snapshot(cfg, weights, x, torch.as_tensor(y), dtype) if snapshot is None else snapshot()
        classes = {k: v.numpy().copy() for k, v in snap.classes(weight)[weight].items()}
        if count <= term_limit:
            terms = {k: v.numpy().copy() for k, v in snap.terms(weight, limit=term_limit).items()}
    G = np.zeros_like(W)
    for m in classes.values():
        if isinstance(m, RowSparse):
            G[m.rows] += m.values
        else:
            G = G + m
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


__all__ = ["TERM_LIMIT", "DTYPES", "PROGRESSIVE_FLOPS", "SPLIT_BYTES", "Summary", "StepCoefficient", "Update",
           "RowSparse", "dense", "inner", "norm", "cosine", "agreement", "autograd_coefficients", "progressive", "split_bytes",
           "module_split_bytes", "module", "step_coefficient",
           "update_between", "as_matrix", "class_description"]
