"""Roles of attention heads: which score passes its threshold, and the saved step at which it formed.

A head has a role when its score reaches the role's threshold (THRESHOLDS, stated here so every view and the
command line agree); it formed at the first saved step from which the score stays at or above the threshold
to the last step looked at. The thresholds sit far above what an untrained head scores: a causal head that
spreads its attention evenly over T keys gives about ln(T)/T to the previous or the first token (0.06 at
T = 64) and about 1/(1.5·T) to one key of the induction probe's second half (where a character vocabulary
repeats tokens in the probe, to all keys that follow a match: about Σ p² of what it spreads, p the tokens'
frequencies; a previous-token head scored 0.11 so on a planted circuit's twelve skewed tokens); copying is
0 ± 0.1 at random.
Scores are defined in `engine.analysis.heads`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

THRESHOLDS = {"previous_token": 0.4, "induction": 0.3, "duplicate": 0.3, "first_token": 0.5, "copying": 0.7}
ROLE_NAMES = {"previous_token": "previous-token", "induction": "induction", "duplicate": "duplicate-token",
              "first_token": "first-token", "copying": "copying"}


@dataclass(frozen=True)
class Role:
    layer: int
    head: int
    score: str          # a key of THRESHOLDS
    value: float        # the score at the step looked at
    formed: int | None  # the saved step it formed at; None when only one step was looked at

    @property
    def label(self) -> str:
        """"L1 H2 · induction, from step 650" (without the step when there is no timeline)."""
        text = f"L{self.layer} H{self.head} · {ROLE_NAMES[self.score]}"
        return text if self.formed is None else f"{text}, from step {self.formed}"


def formation_step(steps: list[int], series: np.ndarray, threshold: float) -> int | None:
    """The first of `steps` from which `series` (one value per step) stays ≥ threshold; None if the last is below."""
    above = np.asarray(series) >= threshold
    if not above.size or not above[-1]:
        return None
    below = np.flatnonzero(~above)
    return steps[0] if not below.size else steps[below[-1] + 1]


def roles_at(values: dict[str, np.ndarray]) -> list[Role]:
    """The roles of every head at one set of weights (values: score → (L, H)), in layer, head order."""
    found = []
    for score, threshold in THRESHOLDS.items():
        for layer, head in zip(*np.nonzero(values[score] >= threshold)):
            found.append(Role(int(layer), int(head), score, float(values[score][layer, head]), None))
    return sorted(found, key=lambda r: (r.layer, r.head, list(THRESHOLDS).index(r.score)))


def roles_over(steps: list[int], series: dict[str, np.ndarray]) -> list[Role]:
    """Roles at the last step with the step each formed at (series: score → (S, L, H) over `steps`)."""
    last = {name: a[-1] for name, a in series.items()}
    return [Role(r.layer, r.head, r.score, r.value,
                 formation_step(steps, series[r.score][:, r.layer, r.head], THRESHOLDS[r.score]))
            for r in roles_at(last)]


# The roles of attention itself, drawn together in the head timeline's "roles" view (all fractions of a head's
# attention, so one colour scale reads them all); copying is a property of the OV circuit, shown on its own.
ATTENTION_ROLES = ("previous_token", "induction", "duplicate", "first_token")
LESSON_ROLES = ("previous_token", "induction")  # always a row, formed or not: the induction lesson's pair


@dataclass(frozen=True)
class RoleRow:
    """One row of the roles view: a head and the score it is followed by."""

    layer: int
    head: int
    score: str
    formed: int | None  # the saved step it took the role at; None: not (yet) taken

    @property
    def label(self) -> str:
        """"L1 H0 induction", or "L1 H0 induction?" for the best head of a role no head has taken yet."""
        return f"L{self.layer} H{self.head} {ROLE_NAMES[self.score]}{'' if self.formed is not None else '?'}"


def role_rows(steps: list[int], series: dict[str, np.ndarray]) -> list[RoleRow]:
    """The heads that took an attention role (ATTENTION_ROLES), in the order they formed, so both heads of the
    induction lesson read in one chart without choosing a score. A role of LESSON_ROLES no head has taken
    is still a row: the head scoring highest on it at the last step, its label ending in "?"."""
    rows = [RoleRow(r.layer, r.head, r.score, r.formed) for r in roles_over(steps, series)
            if r.score in ATTENTION_ROLES]
    for score in LESSON_ROLES:
        if not any(r.score == score for r in rows) and series[score].size:
            layer, head = np.unravel_index(int(np.argmax(series[score][-1])), series[score].shape[1:])
            rows.append(RoleRow(int(layer), int(head), score, None))
    return sorted(rows, key=lambda r: (r.formed is None, r.formed or 0, ATTENTION_ROLES.index(r.score), r.layer,
                                       r.head))
