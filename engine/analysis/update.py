"""One weight's update at a saved step, seen through every geometry (docs/geometries.md): `update_geometry`.

For `weight` at saved step s of a run, on the run's fixed probe batch:

    G            the form's coefficient at s (engine.coefficients, float64 by default)
    dW           the update that reached s, W(s) − W(p), p the previous saved step (None at the first step)
    directions   G turned into a step by each geometry (engine.analysis.geometry), with spectra, effective
                 rank and cosines with G and ΔW; Adam's only where an AdamW of the run trained this weight,
                 with v̂ from the checkpoint nearest s (`v_step`; checkpoints hold the optimizer's moments,
                 snapshots only weights)
    shares       route class -> ⟨G_c(p), ΔW⟩: its part of the first-order decrease of the probe loss over
                 [p, s] (G taken at the interval's start, p)
    direction_shares   geometry -> route class -> ⟨G_c(s), D⟩: how each geometry's step D from s would split
                 its first-order decrease among the routes (the same classes, another direction)

It reads the run through engine.coefficients.cache.CoefficientStore and engine.rundir.runs.Run: one function with a
plain result, so it can become a RunAnalysis method unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import geometry as geo


@dataclass(frozen=True, eq=False)
class UpdateGeometry:
    weight: str
    step: int
    prev_step: int | None             # the previous saved step (None at the first)
    optimizer: str                    # what the run trained with (TrainConfig.optimizer)
    G: np.ndarray                     # −∂L/∂W at `step`, the weight's shape
    dW: np.ndarray | None             # W(step) − W(prev_step)
    directions: list[geo.Direction]
    shares: dict[str, float] = field(default_factory=dict)  # route class -> ⟨G_c(prev_step), ΔW⟩
    v_step: int | None = None         # the checkpoint whose second moment v̂ the Adam geometry used
    direction_shares: dict[str, dict[str, float]] = field(default_factory=dict)  # geometry -> class -> share

    def direction(self, name: str) -> geo.Direction:
        return next(d for d in self.directions if d.geometry == name)

    def stack(self) -> np.ndarray:
        """(geometries, rows, cols): every direction as a matrix, in `directions` order."""
        return np.stack([geo.as_matrix(d.matrix) for d in self.directions])


def update_geometry(run, weight: str, step: int | None = None, dtype: str = "float64",
                    store=None) -> UpdateGeometry:
    """The geometries of `weight`'s coefficient at `step` (None: the newest saved step) of `run` (a Run or
    a run directory); see the module docstring. `store`: the run's CoefficientStore where one is kept
    (RunAnalysis.coefficients), so the records are not computed twice; `dtype` is then the store's."""
    from ..coefficients.cache import CoefficientStore
    from ..coefficients.export import check_step, check_weight
    from ..rundir.runs import Run

    run = run if isinstance(run, Run) else Run(run)
    store = store if store is not None else CoefficientStore(run, dtype)
    check_weight(store, weight)
    step = check_step(store, step)
    record = store.record(weight, step)
    G = record.G
    update = store.update(weight, step)
    dW = update.dW.astype(np.float64) if update is not None else None
    shares = {}
    if update is not None:
        shares = geo.class_shares(store.record(weight, update.prev_step).classes, dW)
    t = run.config.train
    v_step, v_hat = second_moment(run, weight, step)
    directions = geo.geometries(G, dW, v_hat, t.adam_eps)
    by_geometry = {d.geometry: geo.class_shares(record.classes, d.matrix) for d in directions}
    return UpdateGeometry(weight, step, update.prev_step if update else None, t.optimizer, G.astype(np.float64),
                          dW, directions, shares, v_step, by_geometry)


def second_moment(run, weight: str, step: int) -> tuple[int | None, np.ndarray | None]:
    """(checkpoint step, bias-corrected v̂) of the AdamW that trained `weight`, from the checkpoint nearest
    `step` (the earlier one on a tie); (None, None) when no AdamW trained it or no checkpoint has it."""
    from ..model.gpt import GPT
    from ..training.optimizers import adam_second_moments, make_optimizer
    from ..rundir.runs import RunError

    steps = run.checkpoint_steps()
    if not steps:
        return None, None
    nearest = min(steps, key=lambda s: (abs(s - step), s))
    try:
        _, state = run.load_checkpoint(nearest)
        model = GPT(run.config.model)
        optimizer = make_optimizer(model, run.config.train)
        optimizer.load_state_dict(state["optimizer"])
    except (RunError, KeyError, ValueError, RuntimeError, TypeError):
        return None, None  # an unreadable or foreign optimizer state: the other geometries still show
    moments = adam_second_moments(optimizer)
    param = dict(model.named_parameters())[weight]
    if param not in moments:
        return None, None
    v, count = moments[param]
    if count < 1:
        return None, None
    v_hat = v.double().numpy() / (1.0 - run.config.train.beta2 ** count)
    return nearest, v_hat


__all__ = ["UpdateGeometry", "update_geometry", "second_moment"]
