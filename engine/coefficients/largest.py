"""The largest terms of a weight with too many terms to split at every step (issue 16 item 12).

A weight with more than TERM_LIMIT terms is split by route classes at every step (engine/coefficients);
at one step a person may still ask which single terms carry its coefficient. `largest_terms` evaluates the
weight's terms once, in Leibniz order through the shared route prefixes (docs/forms.md: about #terms / L
backward passes), one term at a time, and keeps only the K with the largest ‖G_t‖ (a heap), so memory is K
matrices whatever the count. A weight with more than TERM_BUDGET terms is refused in one line (the
enumeration alone would cost more than a person waits for): its route classes say the same at a glance.

Each term's share is ‖G_t‖ / Σ_t ‖G_t‖ over ALL the weight's terms, the same measure the parts list gives
route classes (norms do not add up to ‖G‖: the terms are not orthogonal).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np
import torch

from ..errors import UserError
from ..forms.count_text import count_text
from ..forms.derive import DEFAULT_LIMIT
from ..forms.evaluate import iter_term_coefficients

TOP_K = 12                   # terms offered in the parts list
TERM_BUDGET = DEFAULT_LIMIT  # terms evaluated at most for one request (the forms engine's own listing limit)


@dataclass(frozen=True, eq=False)
class LargestTerms:
    weight: str
    step: int
    count: int                       # the weight's terms in all (every one was evaluated)
    norm_sum: float                  # Σ ‖G_t‖ over all of them: the shares' denominator
    terms: dict[str, np.ndarray]     # term ID -> its matrix in the weight's shape, largest ‖G_t‖ first
    norms: dict[str, float]          # term ID -> ‖G_t‖, in the same order

    def share(self, term_id: str) -> float:
        return self.norms[term_id] / self.norm_sum if self.norm_sum > 0 else 0.0


def largest_terms(snapshot, weight: str, step: int, k: int = TOP_K, budget: int = TERM_BUDGET) -> LargestTerms:
    """The `k` terms of `weight` with the largest Frobenius norm at the snapshot's step, sorted largest
    first (ties keep Leibniz order)."""
    forms = snapshot.forms
    try:
        count = forms.count(weight)
    except KeyError:
        raise UserError(f"no weight {weight!r} in this model") from None
    if count > budget:
        raise UserError(f"{weight} has {count_text(count)} terms, more than the {count_text(budget)} searched for the largest; "
                        "its route classes split it instead")
    kept: list[tuple[float, int, str, np.ndarray]] = []  # a min-heap of (‖G_t‖, −order, ID, matrix)
    norm_sum = 0.0
    with torch.no_grad():
        for order, (tid, g) in enumerate(iter_term_coefficients(snapshot.bound, forms.terms(weight, budget))):
            n = float(torch.linalg.vector_norm(g.double()))
            norm_sum += n
            item = (n, -order, tid, g)
            if len(kept) < k:
                heapq.heappush(kept, item)
            elif item[:2] > kept[0][:2]:
                heapq.heapreplace(kept, item)
    best = sorted(kept, key=lambda t: (-t[0], -t[1]))
    return LargestTerms(weight, step, count, norm_sum, {tid: g.numpy().copy() for _, _, tid, g in best},
                        {tid: n for n, _, tid, _ in best})


__all__ = ["TOP_K", "TERM_BUDGET", "LargestTerms", "largest_terms"]
