"""A term's coefficient at a step, as the Forms pane lists it: the matrix Σ G^t of one term, its norm, and
its share of its weight's total G on the run's probe batch (docs/design.md; the terms are docs/rules.md's).

The share is the projection ⟨G_term, G_total⟩ / ‖G_total‖², so the shares of a weight's terms add up to 1
(a term may take a negative share: it pulls against the total). A pure function of an
`engine.forms.Snapshot`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import UserError


@dataclass(frozen=True)
class TermValues:
    step: int
    term_id: str
    weight: str
    matrix: np.ndarray          # the term's Σ G^t in the weight's shape (a row for a vector)
    norm: float
    total_norm: float
    share: float


def term_values(snapshot, term_id: str, weight: str, step: int) -> TermValues:
    try:
        g = snapshot.term(term_id).double().numpy()
    except KeyError as e:
        raise UserError(str(e.args[0])) from None
    total = snapshot.total(weight)[weight].double().numpy()
    tt = float((total * total).sum())
    share = float((g * total).sum()) / tt if tt > 0 else float("nan")
    matrix = g.reshape(1, -1) if g.ndim == 1 else g
    return TermValues(step, term_id, weight, matrix, float(np.linalg.norm(g)), float(np.sqrt(tt)), share)
