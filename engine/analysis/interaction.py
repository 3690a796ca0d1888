"""How one weight's update moved another's coefficient: the second-order view (docs/second-order.md, issue 25;
the definitions are docs/second-order.md).

On the run's fixed probe batch, with E the probe loss, G = −∇E and H = ∇²E at the earlier of two saved
steps p < s, and Δ = W(s) − W(p) the update between them (float64 throughout):

    predicted   −H_BA ΔA: how A's update alone moved B's coefficient, to first order (one Hessian-vector
                product: a double backward through the gradient's graph)
    exact       G_B(W(p) + ΔA only) − G_B(W(p)): the same move computed without the expansion
    real        ΔG_B = G_B(s) − G_B(p): what B's coefficient really did under every update at once
    share       ½ ⟨ΔB, H_BA ΔA⟩: the pair's part of the curvature term of the loss change

Summed over every A (B included) the predictions give −(HΔ)_B, which equals the real ΔG_B up to O(‖Δ‖²);
summed over every ordered pair the shares give the curvature term of

    E(s) − E(p) ≈ −Σ_W ⟨G_W, ΔW⟩ + ½ Σ_{A,B} ⟨ΔB, H_BA ΔA⟩.

H is symmetric, so the map of shares is symmetric: entry [B, A] = entry [A, B], and each unordered pair of
distinct weights carries twice its entry.

A B whose coefficient is round-off at both steps is *degenerate*, by the first-order check's rule
(docs/verification.md#degenerate-weights: its largest entry far below the model's largest; here below 1e-12 of
it, since a real gradient can be 4e-7 of it at initialisation, verify.ROUND_OFF): b_K's gradient is
identically zero, for one (a constant added to a row of scores leaves the softmax as it was), and so is its
whole Hessian row. Its three moves are round-off too, so no cosine, no route-class shares and no ratio to its
real move are given for it: ratios of round-off would read as a move (cos 0.59 and "direct 97 %" for moves of
size 1e-21 on a trained run, issue 43). Pure functions of a model config, two sets of weights and a
batch; RunAnalysis (run_analysis.py) feeds them a run's saved steps and probe batch and caches the results.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch
from torch.func import functional_call

from ..coefficients import cosine


class _Explicit(list):
    """A trace that keeps nothing: passing one selects the model's explicit attention path (the fused kernel has
    no second derivative) without holding every layer's scores, masked scores and weights beside what autograd
    keeps (GPT-2 small's 1,024 probe tokens: 1.8 GB in float32 that a forward without a graph held for nothing)."""

    def append(self, item) -> None:
        pass


class ProbeLoss:
    """E(W) on one batch as a function of a {name: tensor} of weights, in eval mode, in float64 (or `dtype`)."""

    def __init__(self, cfg, x, y, dtype: torch.dtype = torch.float64):
        self.cfg, self.dtype = cfg, dtype
        self.x, self.y = torch.as_tensor(x), torch.as_tensor(y)
        self._model = None
        self._vocab = None

    def _module(self, vocab: int):
        from ..model.gpt import GPT
        from ..configs.resolve import with_vocab

        if self._model is None or self._vocab != vocab:
            self._model = GPT(with_vocab(self.cfg, vocab)).to(self.dtype).eval()
            self._vocab = vocab
        return self._model

    def config(self, weights: Mapping):
        """The model config with the vocabulary `weights` have (their embedding's rows)."""
        from ..configs.resolve import with_vocab

        return with_vocab(self.cfg, int(weights["W_E"].shape[0]))

    def names(self, weights: Mapping) -> list[str]:
        """The trained weights in model order (engine/model/weight_layout.py)."""
        from ..model.weight_layout import weight_names

        return weight_names(self.config(weights))

    def __call__(self, params: Mapping[str, torch.Tensor]) -> torch.Tensor:
        model = self._module(int(params["W_E"].shape[0]))
        return functional_call(model, dict(params), (self.x, self.y), {"trace": _Explicit()})[1]


def leaves(weights: Mapping, names: list[str], dtype: torch.dtype = torch.float64) -> dict[str, torch.Tensor]:
    """Copies of `names` (float64, or `dtype`) that autograd differentiates by."""
    return {n: torch.as_tensor(weights[n]).detach().to(dtype).clone().requires_grad_(True) for n in names}


def gradient(loss: ProbeLoss, params: Mapping[str, torch.Tensor], create_graph: bool = False):
    """(E, {name: ∇E}) at `params`; with `create_graph` the gradients can be differentiated again."""
    with torch.enable_grad():
        E = loss(params)
        grads = torch.autograd.grad(E, list(params.values()), create_graph=create_graph, allow_unused=True)
    return E, {n: torch.zeros_like(p) if g is None else g for (n, p), g in zip(params.items(), grads)}


def hessian_columns(params: Mapping[str, torch.Tensor], grads: Mapping[str, torch.Tensor],
                    directions: Mapping[str, torch.Tensor]) -> dict[str, dict[str, torch.Tensor]]:
    """{A: {B: H_BA ΔA}} for each A in `directions` (ΔA on block A, zero elsewhere): one double backward
    per A through `grads`, which `gradient(..., create_graph=True)` made at `params`.

    ∂⟨∇_A E, ΔA⟩/∂B = H_BA ΔA, so differentiating the gradient of A alone, weighted by ΔA, gives the
    column of H along ΔA for every B at once."""
    out = {}
    names = list(params)
    for A, dA in directions.items():
        with torch.enable_grad():
            cols = torch.autograd.grad(grads[A], list(params.values()), grad_outputs=dA.to(params[A].dtype),
                                       retain_graph=True, allow_unused=True)
        out[A] = {B: (torch.zeros_like(params[B]) if c is None else c).detach() for B, c in zip(names, cols)}
    return out


@dataclass(frozen=True, eq=False)
class PairInteraction:
    """How `other`'s (A's) update over [prev_step, step] moved `weight`'s (B's) coefficient."""

    weight: str
    other: str
    step: int
    prev_step: int
    predicted: np.ndarray   # −H_BA ΔA, B's shape
    exact: np.ndarray       # G_B(W(p) + ΔA only) − G_B(W(p))
    real: np.ndarray        # G_B(s) − G_B(p)
    share: float            # ½ ⟨ΔB, H_BA ΔA⟩, the pair's part of the curvature term
    degenerate: bool = False  # G_B is round-off at p and at s (module docstring): so are its moves

    @property
    def cosine(self) -> float:
        """cos(−H_BA ΔA, real ΔG_B); NaN when either is zero or B is degenerate."""
        return float("nan") if self.degenerate else cosine(self.predicted, self.real)

    @property
    def cosine_words(self) -> str:
        """The cosine in words for a title, or why there is none (a move is zero, or B is degenerate)."""
        if self.degenerate:
            return f"no cosine: {degenerate_words(self.weight)}"
        cos = self.cosine
        return "no cosine: a move is zero" if np.isnan(cos) else f"cos with real {cos:.3f}"


def degenerate_words(weight: str) -> str:
    """What the view says of a degenerate B instead of ratios of its moves."""
    return (f"{weight}'s coefficient is round-off at both steps next to the model's largest (degenerate, by the "
            "first-order check's rule), and so are its moves")


@dataclass(frozen=True, eq=False)
class RouteMoves:
    """−H_BA ΔA split by the route classes of B's coefficient (engine/forms/mixed_classes.py): through which
    routes of G_B the update of `other` (A) over [prev_step, step] moves it."""

    weight: str
    other: str
    step: int
    prev_step: int
    moves: dict[str, np.ndarray]  # route class -> its part, B's shape; the parts sum to −H_BA ΔA
    degenerate: bool = False      # G_B is round-off at p and at s: so are the parts

    @property
    def shares(self) -> dict[str, float]:
        """class -> ⟨part, −H_BA ΔA⟩ / ‖−H_BA ΔA‖²: how much of the predicted move lies along each class's
        part (they add up to 1; a part against the whole is negative), largest first; empty when nothing moves
        or B is degenerate."""
        total = sum(self.moves.values())
        norm2 = float(np.sum(total * total)) if len(self.moves) else 0.0
        if norm2 == 0.0 or self.degenerate:
            return {}
        shares = {c: float(np.sum(m * total)) / norm2 for c, m in self.moves.items()}
        return dict(sorted(shares.items(), key=lambda kv: -abs(kv[1])))

    def words(self, named: int = 4) -> str:
        """The largest shares in words, e.g. "direct 61 %, L3.mlp 22 %, L2.k 9 %, 2 more classes 8 %"."""
        shares = list(self.shares.items())
        if self.degenerate:
            return f"no shares: {degenerate_words(self.weight)}"
        if not shares:
            return "no class moves: A's update leaves B's coefficient where it was"

        def percent(v: float) -> str:
            return f"{100 * v:.0f} %".replace("-", "−")

        text = [f"{c} {percent(v)}" for c, v in shares[:named]]
        if len(shares) > named:
            text.append(f"{len(shares) - named} more classes {percent(sum(v for _, v in shares[named:]))}")
        return ", ".join(text)


@dataclass(frozen=True, eq=False)
class InteractionMap:
    """Every ordered pair of weights over [prev_step, step]: rows B, columns A, names in model order."""

    step: int
    prev_step: int
    names: list[str]
    shares: np.ndarray       # [B, A] ½ ⟨ΔB, H_BA ΔA⟩ (symmetric; the whole sum is the curvature term)
    ratios: np.ndarray       # [B, A] ‖H_BA ΔA‖ / ‖real ΔG_B‖ (NaN where B's coefficient did not move or B
                             # is degenerate, as in the next two)
    explained: np.ndarray    # [B, A] ⟨−H_BA ΔA, ΔG_B⟩ / ‖ΔG_B‖²: A's part of B's real move (rows sum to ~1)
    first_order: np.ndarray  # [W] −⟨G_W, ΔW⟩, each weight's first-order part of the loss change
    residual: np.ndarray     # [B] ‖−(HΔ)_B − ΔG_B‖ / ‖ΔG_B‖: what second order leaves of B's real move
    loss_before: float       # E(p)
    loss_after: float        # E(s)
    degenerate: np.ndarray | None = None  # [B] G_B is round-off at p and at s (None: none is)

    @property
    def change(self) -> float:
        """E(s) − E(p), the real change of the probe loss."""
        return self.loss_after - self.loss_before

    @property
    def curvature(self) -> float:
        """½ Σ_{A,B} ⟨ΔB, H_BA ΔA⟩."""
        return float(self.shares.sum())

    @property
    def predicted_change(self) -> float:
        """The second-order prediction of E(s) − E(p): first-order sum plus curvature term."""
        return float(self.first_order.sum()) + self.curvature


def interval(steps: list[int], step: int | None, what: str = "the second-order view") -> tuple[int, int]:
    """(p, s): `step` (None: the newest) and the saved step before it; one clear line, naming `what` needs
    it, when there is none."""
    from ..errors import UserError

    if len(steps) < 2:
        raise UserError(f"{what} needs two saved steps (an update between them); this run has {len(steps)}")
    s = steps[-1] if step is None else step
    if s not in steps:
        shown = ", ".join(map(str, steps[:10])) + (" …" if len(steps) > 10 else "")
        raise UserError(f"no weights saved at step {s}; saved steps: {shown}")
    if s == steps[0]:
        raise UserError(f"step {s} is the first saved step: no update reaches it; choose one of "
                        f"{', '.join(map(str, steps[1:6]))}{' …' if len(steps) > 6 else ''}")
    return steps[steps.index(s) - 1], s


def check_pair(names: list[str], weight: str | None, other: str | None) -> None:
    """One clear line when B (`weight`) or A (`other`) is not a weight of the model."""
    from ..errors import UserError

    for flag, name in (("--weight", weight), ("--other", other)):
        if name not in names:
            head = f"{flag} is required" if name is None else f"no weight {name!r}"
            raise UserError(f"{head}; this model's weights: {', '.join(names)}")


def _numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().double().numpy().copy()


def _inner(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() * b.double()).sum())


def degenerate_weights(at_p: Mapping[str, torch.Tensor], at_s: Mapping[str, torch.Tensor]) -> set[str]:
    """The weights whose gradient is round-off next to the model's largest at p and at s (module docstring)."""
    from ..forms.verify import ROUND_OFF, round_off  # the first-order check's rule, where it decides a view

    def small(grads) -> set[str]:
        size = {n: float(g.detach().abs().max()) if g.numel() else 0.0 for n, g in grads.items()}
        top = max(size.values())
        return {n for n, v in size.items() if round_off(v, top, ROUND_OFF)}

    return small(at_p) & small(at_s)


def updates(before: Mapping, after: Mapping, names: list[str]) -> dict[str, torch.Tensor]:
    """{name: W(s) − W(p)} in float64."""
    return {n: torch.as_tensor(after[n]).double() - torch.as_tensor(before[n]).double() for n in names}


def _shifted(params: Mapping[str, torch.Tensor], delta: Mapping[str, torch.Tensor]) -> dict:
    return {n: (p.detach() + delta[n] if n in delta else p.detach()).requires_grad_(True)
            for n, p in params.items()}


def pair_interaction(loss: ProbeLoss, before: Mapping, delta: Mapping[str, torch.Tensor], weight: str,
                     other: str, step: int, prev_step: int) -> PairInteraction:
    """B = `weight`, A = `other`; `before` the weights at p, `delta` every weight's update to s."""
    names = loss.names(before)
    params = leaves(before, names, loss.dtype)
    delta = {n: d.to(loss.dtype) for n, d in delta.items()}
    _, grads = gradient(loss, params, create_graph=True)
    column = hessian_columns(params, grads, {other: delta[other]})[other]
    _, alone = gradient(loss, _shifted(params, {other: delta[other]}))
    _, at_s = gradient(loss, _shifted(params, delta))
    g_p = grads[weight].detach()
    return PairInteraction(weight, other, step, prev_step, _numpy(-column[weight]),
                           _numpy(-(alone[weight] - g_p)), _numpy(-(at_s[weight] - g_p)),
                           0.5 * _inner(delta[weight], column[weight]),
                           weight in degenerate_weights(grads, at_s))


def route_moves(loss: ProbeLoss, before: Mapping, delta: Mapping[str, torch.Tensor], weight: str, other: str,
                step: int, prev_step: int) -> RouteMoves:
    """−H_BA ΔA by B's route classes at p: one forward-mode derivative of B's class split along ΔA."""
    from ..forms.mixed_classes import class_moves

    names = loss.names(before)
    params = leaves(before, names, loss.dtype)
    delta = {n: d.to(loss.dtype) for n, d in delta.items()}
    moves = class_moves(loss.config(before), params, loss.x, loss.y, weight, other, delta[other])
    degenerate = weight in degenerate_weights(gradient(loss, params)[1], gradient(loss, _shifted(params, delta))[1])
    return RouteMoves(weight, other, step, prev_step, {c: _numpy(m) for c, m in moves.items()}, degenerate)


def interaction_map(loss: ProbeLoss, before: Mapping, delta: Mapping[str, torch.Tensor], step: int,
                    prev_step: int) -> InteractionMap:
    """The map over [p, s]: one gradient with its graph at p, one double backward per weight, one gradient
    at s."""
    names = loss.names(before)
    params = leaves(before, names, loss.dtype)
    delta = {n: d.to(loss.dtype) for n, d in delta.items()}
    E_p, grads = gradient(loss, params, create_graph=True)
    columns = hessian_columns(params, grads, {A: delta[A] for A in names})
    E_s, at_s = gradient(loss, _shifted(params, delta))
    n = len(names)
    shares, ratios, explained = np.zeros((n, n)), np.full((n, n), np.nan), np.full((n, n), np.nan)
    residual = np.full(n, np.nan)
    degenerate = degenerate_weights(grads, at_s)
    for i, B in enumerate(names):
        real = -(at_s[B] - grads[B].detach())
        real_norm = 0.0 if B in degenerate else float(real.norm())  # no ratios of round-off
        whole = torch.zeros_like(real)
        for j, A in enumerate(names):
            col = columns[A][B]
            shares[i, j] = 0.5 * _inner(delta[B], col)
            whole -= col
            if real_norm > 0:
                ratios[i, j] = float(col.norm()) / real_norm
                explained[i, j] = _inner(-col, real) / real_norm ** 2
        if real_norm > 0:
            residual[i] = float((whole - real).norm()) / real_norm
    first = np.array([_inner(grads[W].detach(), delta[W]) for W in names])  # −⟨G_W, ΔW⟩ = ⟨∇E, ΔW⟩
    return InteractionMap(step, prev_step, names, shares, ratios, explained, first, residual,
                          float(E_p.detach()), float(E_s.detach()), np.array([B in degenerate for B in names]))


__all__ = ["ProbeLoss", "PairInteraction", "InteractionMap", "leaves", "gradient", "hessian_columns",
           "interval", "check_pair", "degenerate_weights", "degenerate_words", "updates", "pair_interaction",
           "interaction_map"]
