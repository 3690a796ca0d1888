"""Two paired runs side by side at the same step, each asked through its own RunAnalysis: the difference
B − A of their attention maps on one prompt, of one weight's coefficient G (docs/forms.md: the form's sum over
route classes), or of the weight itself. For runs made by engine/rundir/fork.py the two start from the same
weights and batches, so a difference here is the changed setting's doing.

Both runs must have the same weight shapes and vocabulary (the same prompt means the same tokens to both);
the step must be one both saved weights at (`common_steps`). Differences are B − A, NaN where masked. The
GUI asks these in its analysis process (the questions PairChoices, PairAttention and PairWeight of
engine/analysis/questions.py); each run's RunAnalysis caches its own attention maps and coefficient records, so swapping A and B recomputes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import UserError
from ..model.weight_layout import weight_shapes
from .run_analysis import RunAnalysis

ATTENTION, COEFFICIENT, WEIGHT = "attention", "G", "W"


@dataclass(frozen=True)
class PairChoices:
    """What the pair can be compared on: the steps both saved, and the weights (same names in both)."""

    steps: list[int]
    weights: list[str]
    parent_second: bool = False  # B is the run A was forked from (its fork.json): shown, the parent is A
    noise: str | None = None     # engine.training.determinism.comparison_note: a run was not trained to the bit


@dataclass(frozen=True)
class PairDiff:
    """One quantity of runs A and B at one step, and B − A. `what` is ATTENTION (a, b: (L, H, T, T), the
    prompt's `tokens`) or (COEFFICIENT | WEIGHT, weight name) (a, b: the weight's matrix)."""

    names: tuple[str, str]
    step: int
    what: str | tuple[str, str]
    a: np.ndarray
    b: np.ndarray
    tokens: tuple[str, ...] = ()

    @property
    def diff(self) -> np.ndarray:
        return self.b - self.a


def common_steps(a: RunAnalysis, b: RunAnalysis) -> list[int]:
    """Steps at which both runs saved weights (a snapshot or a checkpoint)."""
    return sorted(set(a.saved_steps()) & set(b.saved_steps()))


def choices(a: RunAnalysis, b: RunAnalysis) -> PairChoices:
    """The pair's common steps and weights; runs that cannot be compared at all are a UserError."""
    names = f"{a.path.name} and {b.path.name}"
    if a.tokenizer.vocab != b.tokenizer.vocab:
        raise UserError(f"{names} have different vocabularies, so one prompt is not the same tokens to both")
    shapes = weight_shapes(a.config.model)
    if shapes != weight_shapes(b.config.model):
        raise UserError(f"{names} have weights of different shapes")
    from ..training.determinism import comparison_note

    return PairChoices(common_steps(a, b), list(shapes), forked_from(a, b), comparison_note([a.path, b.path]))


def forked_from(a: RunAnalysis, b: RunAnalysis) -> bool:
    """Whether run A is a fork of run B (engine/rundir/fork.py)."""
    from ..rundir.fork import fork_record

    record = fork_record(a.path)
    return bool(record) and Path(record.get("parent", "")) == Path(b.path).resolve()


def _check_step(a: RunAnalysis, b: RunAnalysis, step: int) -> None:
    steps = choices(a, b).steps
    if step not in steps:
        shown = ", ".join(map(str, steps[:10])) or "none"
        raise UserError(f"{a.path.name} and {b.path.name} both saved weights at steps {shown}, not at {step}")


def attention(a: RunAnalysis, b: RunAnalysis, step: int, prompt: str | None = None) -> PairDiff:
    """Both runs' attention at `step` on `prompt` (default: A's heatmap prompt), each from its analysis."""
    _check_step(a, b, step)
    prompt = a.prompt if prompt is None else prompt
    ra, rb = a.attention(step, prompt), b.attention(step, prompt)
    if ra.maps.tokens != rb.maps.tokens:
        raise UserError(f"the prompt is {len(ra.maps.tokens)} tokens to {a.path.name} and {len(rb.maps.tokens)} "
                        f"to {b.path.name} (their contexts differ); use a shorter prompt")
    return PairDiff((a.path.name, b.path.name), step, ATTENTION, ra.maps.weights, rb.maps.weights,
                    tuple(ra.maps.tokens))


def weight(a: RunAnalysis, b: RunAnalysis, step: int, name: str, part: str = COEFFICIENT) -> PairDiff:
    """One weight's coefficient G (`part` COEFFICIENT: each run's coefficient record) or the weight itself
    (WEIGHT) in both runs at `step`, as float64 arrays."""
    _check_step(a, b, step)
    if name not in weight_shapes(a.config.model):
        raise UserError(f"no weight named {name!r} (one of {', '.join(list(a.weights(step))[:6])}, …)")
    if part == COEFFICIENT:
        ma, mb = (r.coefficients.record(name, step).G for r in (a, b))
    elif part == WEIGHT:
        ma, mb = (r.weights(step)[name].double().numpy() for r in (a, b))
    else:
        raise ValueError(f"part must be {COEFFICIENT} or {WEIGHT}, not {part!r}")
    return PairDiff((a.path.name, b.path.name), step, (part, name), np.asarray(ma, np.float64),
                    np.asarray(mb, np.float64))
