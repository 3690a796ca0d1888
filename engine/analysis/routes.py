"""Which routes the optimizer used over training (docs/geometries.md, issue 13): `route_shares`.

Over every interval [p, s] between consecutive saved steps the probe loss changes, to first order, by
ΔL ≈ −Σ_W ⟨G_W(p), ΔW⟩ with ΔW = W(s) − W(p), and since G_W = Σ_c G_{W,c} over the route classes of
docs/route-classes.md, the decrease splits exactly by linearity into the classes' shares ⟨G_{W,c}(p), ΔW⟩
(engine.analysis.geometry.class_shares). G is taken on the run's fixed probe batch, not on the training
minibatches the optimizer saw, so a share says how the update served the probe's loss.

`by_geometry` splits, the same way, the step each geometry would have taken from G(p) (engine.analysis
.geometry.directions without Adam, whose v̂ needs a checkpoint per step): ⟨G_{W,c}(p), D_geo(G_W(p))⟩.
Comparing its fractions with the applied update's says how the run's optimizer differs from each geometry
in which routes it descends along. Summed over every weight (`combine`), the shares over training rank the
routes of the whole model (geometry.rank_routes). Pure functions of a CoefficientStore's records.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import geometry as geo

APPLIED = "applied ΔW"  # the key of the update the run applied, beside the geometries' own steps
NOT_SPLIT = "not split"  # the class of a weight whose G is over the split's budget (engine/coefficients)
NOTE = "G on the run's fixed probe batch at each interval's start p, not the training minibatch"  # say it


@dataclass(frozen=True)
class Interval:
    """One weight's split of the first-order decrease over [prev_step, step]."""

    step: int
    prev_step: int
    shares: dict[str, float]                   # route class -> ⟨G_c(prev_step), ΔW⟩
    by_geometry: dict[str, dict[str, float]]   # geometry -> route class -> ⟨G_c(prev_step), D_geometry⟩


@dataclass(frozen=True, eq=False)
class RouteShares:
    """Shares over training of one weight (`weight`) or of the whole model (`weight` None, summed)."""

    weight: str | None
    steps: np.ndarray            # each interval's end s (the update that reached s)
    prev_steps: np.ndarray       # each interval's start p
    classes: list[str]           # route classes, in the order first reached
    shares: dict[str, np.ndarray] = field(default_factory=dict)  # direction -> (intervals, classes)

    @property
    def directions(self) -> list[str]:
        """APPLIED first, then the geometries."""
        return list(self.shares)

    def total(self, direction: str = APPLIED) -> np.ndarray:
        """⟨G(p), D⟩ per interval: the first-order decrease of the probe loss (for APPLIED, −ΔL ≈ this)."""
        return self.shares[direction].sum(axis=1)

    def ranking(self, direction: str = APPLIED) -> list[tuple[str, float]]:
        """(class, summed share over training), largest first."""
        per_interval = {i: dict(zip(self.classes, row)) for i, row in enumerate(self.shares[direction])}
        return geo.rank_routes(per_interval)

    def sums(self, direction: str = APPLIED) -> dict[str, float]:
        """class -> its share summed over training."""
        return {c: float(v) for c, v in zip(self.classes, self.shares[direction].sum(axis=0))}

    def fractions(self, direction: str = APPLIED) -> dict[str, float] | None:
        """class -> its part of the whole decrease over training (they sum to 1); None where the classes
        cancel and no share is defined (geometry.fractions)."""
        return geo.fractions(self.sums(direction))


def interval(store, weight: str, step: int) -> Interval | None:
    """The split of the update that reached `step` (None at the first saved step)."""
    update = store.update(weight, step)
    if update is None:
        return None
    record = store.record(weight, update.prev_step)
    dW = np.asarray(update.dW, np.float64)
    found = geo.directions(record.G)
    classes = {NOT_SPLIT: record.G} if record.unsplit else record.classes  # its whole share, unsplit
    return Interval(step, update.prev_step, geo.class_shares(classes, dW),
                    {name: geo.class_shares(classes, D) for name, D in found.items()})


def model_interval(store, step: int, among: tuple[str, ...] | None = None) -> Interval | None:
    """The split of the update that reached `step` summed over every weight (or those `among`), for a large
    model: Σ_W ⟨G_W,c(p), D_W⟩ for the applied ΔW and each geometry's step from G_W(p), from one backward pass
    with an adjoint per route class and no class's matrix (engine/coefficients/class_split.model_shares): GPT-2
    small's 148 weights in minutes, where splitting each weight took about an hour an interval. None at the
    first saved step."""
    import torch

    from ..coefficients import DTYPES, module
    from ..coefficients.class_split import model_shares

    earlier = [s for s in store.steps() if s < step]
    if not earlier:
        return None
    prev = earlier[-1]
    weights, grads = store.gradients(prev)
    after = store.run.load_weights(step)
    names = [n for n in store.weight_names() if among is None or n in among]

    dtype = DTYPES[store.dtype]

    def directions(name: str) -> dict[str, np.ndarray]:  # in the records' dtype: W_E's four are 0.6 GB so
        applied = (after[name].double() - weights[name].double()).numpy()
        found = {APPLIED: applied, **geo.directions(grads[name])}
        return {k: torch.as_tensor(d).to(dtype) for k, d in found.items()}

    model = module(store.cfg, weights, dtype, store.device)
    with torch.no_grad():
        shares = model_shares(model, store.x, store.y, names, directions)
    applied = shares.pop(APPLIED, {})
    return Interval(step, prev, applied, shares)


def assemble(weight: str | None, intervals: list[Interval]) -> RouteShares:
    """The intervals as arrays (a class missing from an interval counts 0)."""
    classes = list(dict.fromkeys(c for it in intervals for c in it.shares))
    names = [APPLIED] + list(dict.fromkeys(g for it in intervals for g in it.by_geometry))

    def table(get) -> np.ndarray:
        return np.array([[get(it).get(c, 0.0) for c in classes] for it in intervals],
                        dtype=np.float64).reshape(len(intervals), len(classes))

    shares = {n: table(lambda it, n=n: it.shares if n == APPLIED else it.by_geometry.get(n, {})) for n in names}
    return RouteShares(weight, np.array([it.step for it in intervals], dtype=np.int64),
                       np.array([it.prev_step for it in intervals], dtype=np.int64), classes, shares)


def combine(per_weight: list[RouteShares]) -> RouteShares:
    """The whole model: every weight's shares summed per class and interval (same saved steps)."""
    if not per_weight:
        return RouteShares(None, np.zeros(0, np.int64), np.zeros(0, np.int64), [], {APPLIED: np.zeros((0, 0))})
    first = per_weight[0]
    classes = list(dict.fromkeys(c for r in per_weight for c in r.classes))
    names = list(dict.fromkeys(n for r in per_weight for n in r.shares))
    shares = {n: np.zeros((len(first.steps), len(classes))) for n in names}
    for r in per_weight:
        if not np.array_equal(r.steps, first.steps):
            raise ValueError(f"{r.weight} has other intervals than {first.weight}")
        columns = [classes.index(c) for c in r.classes]
        for n, table in r.shares.items():
            shares[n][:, columns] += table
    return RouteShares(None, first.steps, first.prev_steps, classes, shares)


__all__ = ["APPLIED", "NOT_SPLIT", "NOTE", "Interval", "RouteShares", "interval", "model_interval", "assemble",
           "combine"]
