"""Curvature along the step (issue 39; docs/readings.md#curvature-along-the-step): how sharply the probe loss bends
along the update the run actually took, and whether a step of the run's size along it still descends.

Between two saved steps p < s, on the run's fixed probe batch (float64; H the Hessian of the probe loss E at
W(p)), with δ = (W(s) − W(p)) / (s − p) the run's mean optimizer step over the interval and η̄ the schedule's
mean learning rate over those steps:

    κ      = δᵀHδ / ‖δ‖²                    the curvature along the step, whole model: one Hessian-vector
                                            product Hδ (`along_difference`, or `hessian_along` exactly)
    κ_W    = δ_Wᵀ H_WW δ_W / ‖δ_W‖²          one weight's own curvature along its own step (one product each)
    share  = ⟨δ_W, (Hδ)_W⟩ / δᵀHδ            each weight's part of δᵀHδ (from the whole model's product)
    t_c                                     the smallest multiple of δ from W(p) that raises the probe loss
                                            above E(p): a line search of a few forward passes
    λ_c    = 2 / (t_c η̄)                     the critical sharpness (Kalra et al. 2026, arXiv 2601.16979)

On a quadratic E along δ, t_c = −2 ∇E·δ / δᵀHδ, and for plain gradient descent (δ = −η ∇E) λ_c = κ, which
gradient descent keeps below 2/η to stay stable (Cohen et al. 2021, the edge of stability). λ_c crosses 2/η̄
exactly when t_c < 1: one step of the run's own size, in its own direction, already raises the probe loss.
That comparison holds whatever produced δ, so it is the threshold drawn for every optimizer (`threshold`
says what else applies to each).

In float64 the product Hδ is a central difference of two probe gradients, (∇E(W + εδ) − ∇E(W − εδ)) / 2ε with
‖εδ‖ = DIFFERENCE_STEP, and ∇E(W)·δ from the same two passes (`along_difference`): two backwards, no graph kept, where
the exact double backward (a gradient that keeps its graph, then a backward through it) costs about 3.3. Its
error is O(ε²) truncation plus round-off over ε; at 1e-5 both are near 1e-10 relative (measured against the
exact product on tiny and nanogpt-cpu, random and descending δ: δᵀHδ within 3e-11 to 1.3e-10, each weight's
share within 4e-11; tests/engine/analysis/test_curvature.py holds it to 1e-8 against the whole Hessian). In
float32 its round-off is larger: where the exact double backward fits, float32 keeps it (`exact`); where only the
difference fits (GPT-2 small's probe), Hδ is the float32 difference at ‖εδ‖ = FLOAT32_STEP and the result says so
(`Curvature.approximate`, FLOAT32_ACCURACY: measured against the float64 exact product). The method follows the
memory estimates before anything is allocated (`curvature_method`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import torch

from .interaction import ProbeLoss, gradient, hessian_columns, leaves

FORWARDS = 10      # the line search's budget of forward passes
PARAM_COPIES = 6   # copies of the weights a Hessian-vector product holds: leaves, gradients, their graph, Hδ, δ
FORWARD_COPIES = 6  # … and a forward alone: the weights at p and at s, δ, a shifted copy, the module's own, one spare
T_MAX = 64.0       # multiples of the mean step searched above 1 before saying none raises the loss
T_MIN = 1 / 64     # … and below 1 before saying every step does
DIFFERENCE_STEP = 1e-5  # ‖εδ‖ of the central difference for Hδ in float64 (module docstring)
FLOAT32_STEP = 1e-3     # … in float32 (chosen by the measurement FLOAT32_ACCURACY states)
DIFFERENCE_COPIES = 8   # copies of the weights the difference holds: W(p), W(s), δ, the shifted leaves, the module's
#                         own, the two gradients (Hδ is made in the first's place), one spare
FLOAT32_TOLERANCE = 1e-3  # κ's relative and a share's absolute error it is held to (worst measured 5.4e-4)
FLOAT32_ACCURACY = ("by a float32 central difference of two gradients: κ and each share within 1e-3 of the float64 "
                    "exact product on small models")


@dataclass(frozen=True)
class Curvature:
    """The curvature along the update over [prev_step, step] (module docstring)."""

    step: int
    prev_step: int
    lr: float                    # η̄, the schedule's mean learning rate over the interval's steps
    steps: int                   # optimizer steps in the interval, s − p
    loss: float                  # E(p)
    loss_after: float            # E(s)
    slope: float                 # ∇E(p)·δ: negative when the mean step descends the probe loss
    along: float                 # δᵀHδ
    curvature: float             # κ = δᵀHδ / ‖δ‖²
    shares: dict[str, float]     # weight -> ⟨δ_W, (Hδ)_W⟩ / δᵀHδ (they add up to 1)
    critical_step: float         # t_c (inf: no multiple up to T_MAX raises the loss; T_MIN: every one does)
    bracket: tuple[float, float]  # (lo, hi): E rises at hi and not at lo (lo may be 0)
    forwards: int                # forward passes the line search took
    weight: str | None = None
    weight_curvature: float | None = None  # κ_W of `weight`
    unmeasured: str = ""         # why slope, κ, κ_W and the shares are NaN / empty ("" when they were measured)
    approximate: str = ""        # how κ, κ_W and the shares were computed where less precisely (FLOAT32_ACCURACY)

    @property
    def critical_sharpness(self) -> float:
        """λ_c = 2 / (t_c η̄); where the search found no t_c, its bound (`limit`)."""
        lo, hi = self.bracket
        t = lo if hi == math.inf else hi
        return 2.0 / (t * self.lr) if self.lr > 0 else math.nan

    @property
    def limit(self) -> str:
        """"" when λ_c was found; "at most" when no multiple up to T_MAX raised the loss; "at least" when
        every one down to T_MIN did."""
        lo, hi = self.bracket
        return "at most" if hi == math.inf else "at least" if lo == 0 else ""

    @property
    def threshold(self) -> float:
        """2 / η̄: λ_c above it means a step of the run's size raises the probe loss."""
        return 2.0 / self.lr if self.lr > 0 else math.nan

    @property
    def quadratic_step(self) -> float:
        """t_c of the quadratic model along δ, −2 ∇E·δ / δᵀHδ (inf where it does not bend up)."""
        if math.isnan(self.along):
            return math.nan
        return -2.0 * self.slope / self.along if self.along > 0 else math.inf


def second_order_bytes(cfg, batch: int, tokens: int, itemsize: int) -> int:
    """What a gradient with its graph and one double backward through it hold at their peak, estimated: per
    sequence and block the attention's scores (8 · heads · T²), the MLP's hidden layer (8 · T · d_ff) and the
    stream (16 · T · d), the logits (6 · T · V), and PARAM_COPIES copies of the weights. Fitted on baby-gpt's
    shape (1-2 × 256 tokens: 444-890 MB estimated, 473-898 MB measured in float32 and float64); on GPT-2
    small's (1 × 1024 tokens) it says 10 GiB in float32 and 20 GiB in float64, where a float64 run was killed for
    memory at 18.6 GB."""
    from ..configs.sizes import parameter_count

    per_block = 8 * cfg.n_head * tokens ** 2 + 8 * tokens * cfg.d_ff + 16 * tokens * cfg.d_model
    floats = batch * (cfg.n_layer * per_block + 6 * tokens * cfg.vocab_size) + PARAM_COPIES * parameter_count(cfg)
    return int(floats * itemsize)


def forward_bytes(cfg, batch: int, tokens: int, itemsize: int) -> int:
    """What one probe forward without a graph holds at its peak, estimated: a block's attention (3 · heads · T²
    per sequence: scores, masked scores, weights), the logits with their log-softmax (3 · T · V per sequence),
    and FORWARD_COPIES copies of the weights."""
    from ..configs.sizes import parameter_count

    floats = batch * 3 * (cfg.n_head * tokens ** 2 + tokens * cfg.vocab_size) + FORWARD_COPIES * parameter_count(cfg)
    return int(floats * itemsize)


def difference_bytes(cfg, batch: int, tokens: int, itemsize: int) -> int:
    """What the central difference (`along_difference`) with the line search holds at its peak, estimated: one
    gradient's graph, per sequence and block the attention's scores (3 · heads · T²), the MLP's hidden layer
    (2 · T · d_ff) and the stream (4 · T · d), the logits (3 · T · V), and DIFFERENCE_COPIES copies of the weights.
    Fitted on GPT-2 small's shape cut to 1 and 4 blocks (1 × 1024 tokens, float32): 2.12 and 3.11 GB measured
    (ru_maxrss), 2.15 and 3.30 GB estimated."""
    from ..configs.sizes import parameter_count

    per_block = 3 * cfg.n_head * tokens ** 2 + 2 * tokens * cfg.d_ff + 4 * tokens * cfg.d_model
    floats = batch * (cfg.n_layer * per_block + 3 * tokens * cfg.vocab_size) + DIFFERENCE_COPIES * parameter_count(cfg)
    return int(floats * itemsize)


def second_order_dtype(cfg, batch: int, tokens: int, what: str) -> torch.dtype:
    """float64 when a double backward on the probe batch fits SPLIT_BYTES (engine/coefficients: the most one
    analysis may hold at once), else float32 when that fits; else one clear line (nothing is allocated first)."""
    from ..errors import UserError

    dtype, why = _second_order(cfg, batch, tokens, what)
    if why:
        raise UserError(why)
    return dtype


@dataclass(frozen=True)
class Method:
    """How `curvature` computes Hδ on a model (curvature_method)."""

    dtype: torch.dtype
    exact: bool             # by double backward (else the central difference)
    step: float             # the difference's ‖εδ‖
    unmeasured: str = ""    # why κ, κ_W and the shares are not measured at all ("" when they are)
    approximate: str = ""   # FLOAT32_ACCURACY where Hδ is the float32 difference


def curvature_method(cfg, batch: int, tokens: int, what: str = "κ") -> Method:
    """How the curvature along the step is measured, chosen by the memory estimates before anything is allocated:
    float64 or float32 as second_order_dtype says (float64 by the difference, float32 exactly); else, where the
    float32 difference fits SPLIT_BYTES (difference_bytes), by it (`approximate` says so); else float32 forwards
    alone (the line search's λ_c, without κ, κ_W and shares) where a forward fits; else one clear line."""
    from ..coefficients import SPLIT_BYTES
    from ..errors import UserError

    dtype, why = _second_order(cfg, batch, tokens, what)
    if not why:
        return Method(dtype, dtype != torch.float64, DIFFERENCE_STEP)
    if difference_bytes(cfg, batch, tokens, 4) <= SPLIT_BYTES:
        return Method(torch.float32, False, FLOAT32_STEP, approximate=FLOAT32_ACCURACY)
    why = (f"{why}, and its central difference about {difference_bytes(cfg, batch, tokens, 4) / 2**30:.0f} GB")
    if forward_bytes(cfg, batch, tokens, 4) > SPLIT_BYTES:
        raise UserError(f"{why}; a forward alone would hold about {forward_bytes(cfg, batch, tokens, 4) / 2**30:.0f} "
                        f"GB, also over it")
    return Method(torch.float32, False, FLOAT32_STEP, unmeasured=why)


def _second_order(cfg, batch: int, tokens: int, what: str) -> tuple[torch.dtype, str]:
    """(float64 or float32, "") where a double backward fits SPLIT_BYTES; else (float32, why not)."""
    from ..coefficients import SPLIT_BYTES

    for dtype in (torch.float64, torch.float32):
        if second_order_bytes(cfg, batch, tokens, dtype.itemsize) <= SPLIT_BYTES:
            return dtype, ""
    return torch.float32, (f"{what} is not measured on this model: its double backward on the probe batch ({batch} "
                           f"× {tokens} tokens) would hold about {second_order_bytes(cfg, batch, tokens, 4) / 2**30:.0f}"
                           f" GB even in float32, over the {SPLIT_BYTES / 2**30:.0f} GB budget")


def mean_lr(train, prev_step: int, step: int) -> float:
    """The schedule's mean learning rate over the optimizer steps prev_step … step − 1 (its base rate: every
    parameter group follows it, Muon's matrices scaled to muon_lr)."""
    from ..training.schedule import lr_at

    return float(np.mean([lr_at(k, train) for k in range(prev_step, step)])) if step > prev_step else 0.0


def threshold_words(train) -> str:
    """What the drawn threshold 2/η means for the run's optimizer, and where the comparable ones come from."""
    base = ("λ_c > 2/η ⇔ a step of the run's size along its own direction raises the probe loss (t_c < 1), "
            "whatever the optimizer")
    if train.optimizer == "sgd":
        extra = (f"; for SGD the Hessian's top eigenvalue stays near 2/η at the edge of stability (Cohen et al. "
                 f"2021), and with heavy-ball momentum μ = {train.momentum:g} the stable limit is (2 + 2μ)/η "
                 f"= {2 + 2 * train.momentum:g}/η")
    elif train.optimizer == "adamw":
        b = train.beta1
        extra = (f"; for Adam the comparable limit is on the preconditioned Hessian diag(√v̂ + ε)⁻¹H: "
                 f"(2 + 2β₁)/((1 − β₁)η) = {(2 + 2 * b) / (1 - b):.3g}/η at β₁ = {b:g} (Cohen et al. 2022, "
                 "adaptive gradient methods at the edge of stability); κ, not preconditioned, is not compared "
                 "with it")
    else:
        extra = ("; Muon steps in the spectral norm, whose sharpness (the directional smoothness of a "
                 "non-Euclidean norm) hovers at 2/η for Muon without momentum (arXiv 2603.05002); its matrices "
                 "move at muon_lr and the rest at lr, both on one schedule, so λ_c is in units of lr")
    return base + extra


def line_search(f: Callable[[float], float], forwards: int = FORWARDS) -> tuple[float, tuple[float, float], int]:
    """(t_c, (lo, hi), forwards used): the smallest t > 0 with f(t) > 0 found by doubling or halving from 1
    to a bracket, then bisection until `forwards` evaluations are spent. f(t) = E(p + tδ) − E(p)."""
    used = 1
    if f(1.0) > 0:  # the mean step already raises the loss: halve down to a step that does not
        lo, hi = 0.0, 1.0
        t = 0.5
        while t >= T_MIN and used < forwards:
            used += 1
            if f(t) > 0:
                hi, t = t, t / 2
            else:
                lo = t
                break
        if lo == 0.0:
            return hi, (0.0, hi), used
    else:
        lo, hi = 1.0, math.inf
        t = 2.0
        while t <= T_MAX and used < forwards:
            used += 1
            if f(t) > 0:
                hi = t
                break
            lo, t = t, t * 2
        if hi == math.inf:
            return math.inf, (lo, math.inf), used
    while used < forwards:
        mid = 0.5 * (lo + hi)
        used += 1
        if f(mid) > 0:
            hi = mid
        else:
            lo = mid
    return hi, (lo, hi), used


def _shifted(params: Mapping[str, torch.Tensor], delta: Mapping[str, torch.Tensor], t: float) -> dict:
    return {n: (p.detach() + t * delta[n]) for n, p in params.items()}


def hessian_along(params: Mapping[str, torch.Tensor], grads: Mapping[str, torch.Tensor],
                  delta: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """{W: (Hδ)_W}: one double backward of ⟨∇E, δ⟩ through `grads` (made with their graph at `params`)."""
    names = list(params)
    with torch.enable_grad():
        got = torch.autograd.grad([grads[n] for n in names], [params[n] for n in names],
                                  grad_outputs=[delta[n] for n in names], retain_graph=True, allow_unused=True)
    return {n: torch.zeros_like(params[n]) if g is None else g.detach() for n, g in zip(names, got)}


def along_difference(loss: ProbeLoss, params: Mapping[str, torch.Tensor], delta: Mapping[str, torch.Tensor],
                     only: str | None = None, step: float = DIFFERENCE_STEP) -> tuple[dict[str, torch.Tensor], float]:
    """({W: (Hδ)_W}, ∇E·δ) at `params` by central differences along δ (module docstring): two backwards, no
    graph kept. With `only`, δ moves that weight alone, and only its block H_WW δ_W is returned.

    ∇E·δ comes without a third backward: with ε = step / ‖δ‖ and T = ∇³E[δ, δ, δ], the loss's central difference
    (E₊ − E₋) / 2ε is ∇E·δ + ε²T/6 and the two gradients' mean along δ is ∇E·δ + ε²T/2, so three times the first
    less the second, halved, is ∇E·δ up to O(ε⁴). In float32 the loss's round-off over 2ε is larger than the
    ε² term that cancels, so there ∇E·δ is the two gradients' mean (within 7.3e-5 relative on tiny and nanogpt-cpu,
    where the combination was off by up to 7e-2 along a random δ, nearly level)."""
    names = [only] if only is not None else list(params)
    norm = math.sqrt(sum(float((delta[n] * delta[n]).sum()) for n in names))
    if norm == 0:
        return {n: torch.zeros_like(params[n]) for n in names}, 0.0
    eps = step / norm
    got, E = [], []
    for sign in (1.0, -1.0):
        moved = {n: p.detach() + sign * eps * delta[n] if n in names else p.detach() for n, p in params.items()}
        for n in names:
            moved[n].requires_grad_(True)
        with torch.enable_grad():
            loss_here = loss(moved)
            g = torch.autograd.grad(loss_here, [moved[n] for n in names], allow_unused=True)
        E.append(float(loss_here.detach()))
        got.append([torch.zeros_like(moved[n]) if x is None else x.detach() for n, x in zip(names, g)])
    mean = sum(float(((a + b) * delta[n]).sum()) for n, a, b in zip(names, *got)) / 2
    Hd = {n: a.sub_(b).div_(2 * eps) for n, a, b in zip(names, *got)}  # in place: no third copy of the weights
    if loss.dtype != torch.float64:  # the loss's float32 round-off over 2ε outweighs the ε² term it would cancel
        return Hd, mean
    return Hd, (3 * (E[0] - E[1]) / (2 * eps) - mean) / 2


def curvature(loss: ProbeLoss, before: Mapping, after: Mapping, step: int, prev_step: int, lr: float,
              weight: str | None = None, unmeasured: str = "", exact: bool | None = None,
              step_length: float = DIFFERENCE_STEP, approximate: str = "") -> Curvature:
    """The curvature along the mean step from `before` (W(p)) to `after` (W(s)); `lr` the schedule's mean rate;
    with `weight`, that weight's own κ_W too. With `unmeasured` (why: curvature_method), forwards alone: the line
    search's t_c and λ_c, E(p) and E(s), and no slope, κ, κ_W or shares. `exact`: Hδ by double backward rather
    than by the central difference (default: exact in float32 alone, module docstring); `step_length` the
difference's ‖εδ‖, `approximate` what the result says of its precision (curvature_method gives all four)."""
    names = loss.names(before)
    k = step - prev_step
    delta = {n: ((torch.as_tensor(after[n]).double() - torch.as_tensor(before[n]).double()) / k).to(loss.dtype)
             for n in names}
    norm2 = sum(float((d * d).sum()) for d in delta.values())
    exact = loss.dtype != torch.float64 if exact is None else exact
    if unmeasured or not exact:
        params = {n: torch.as_tensor(before[n]).to(loss.dtype) for n in names}
        with torch.no_grad():
            E0 = float(loss(params))
    if unmeasured:
        along = slope = math.nan
        shares: dict[str, float] = {}
    else:
        if exact:
            params = leaves(before, names, loss.dtype)
            E_p, grads = gradient(loss, params, create_graph=True)
            Hd = hessian_along(params, grads, delta)
            E0 = float(E_p.detach())
            slope = sum(float((grads[n].detach() * delta[n]).sum()) for n in names)
        else:
            Hd, slope = along_difference(loss, params, delta, step=step_length)
        along = sum(float((delta[n] * Hd[n]).sum()) for n in names)
        shares = {n: float((delta[n] * Hd[n]).sum()) / along if along != 0 else math.nan for n in names}
    with torch.no_grad():
        def f(t: float) -> float:
            return float(loss(_shifted(params, delta, t))) - E0

        t_c, bracket, used = line_search(f)
        E_s = float(loss({n: torch.as_tensor(after[n]).to(loss.dtype) for n in names}))
    kw = None
    if weight is not None and not unmeasured:
        if exact:
            col = hessian_columns(params, grads, {weight: delta[weight]})[weight][weight]
        else:
            col = along_difference(loss, params, delta, only=weight, step=step_length)[0][weight]
        d2 = float((delta[weight] * delta[weight]).sum())
        kw = float((delta[weight] * col).sum()) / d2 if d2 > 0 else math.nan
    return Curvature(step, prev_step, lr, k, E0, E_s, slope, along, along / norm2 if norm2 > 0 else math.nan,
                     shares, t_c, bracket, used, weight, kw, unmeasured, "" if unmeasured else approximate)


__all__ = ["FORWARDS", "T_MAX", "T_MIN", "Curvature", "second_order_bytes", "forward_bytes", "second_order_dtype",
           "difference_bytes", "Method", "curvature_method", "FLOAT32_STEP", "FLOAT32_ACCURACY", "FLOAT32_TOLERANCE", "mean_lr", "threshold_words", "line_search", "hessian_along", "along_difference",
           "curvature", "DIFFERENCE_STEP"]
