"""One snapshot of a GPT on its probe batch: what the weight pane asks for (docs/design.md#data-flow).

The derivation is cached per architecture (`gpt.derive`); a Snapshot binds one step's weights to the run's
probe batch once (the forward cache) and answers the total, the route classes and the terms of any weight,
all in the weight's own shape as Σ G^t = −∂L/∂W, summed over the batch's sequences.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from ..configs.config import ModelConfig
from . import evaluate, gpt
from .derive import DEFAULT_LIMIT, Forms, Term


class Snapshot:
    def __init__(self, cfg: ModelConfig, weights: Mapping[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor,
                 dtype: torch.dtype = torch.float32):
        self.forms: Forms = gpt.derive(cfg)
        with torch.no_grad():
            self.bound = gpt.bind(self.forms.net, weights, torch.as_tensor(x), torch.as_tensor(y), dtype)

    def total(self, weight: str | None = None) -> dict[str, torch.Tensor]:
        with torch.no_grad():
            return evaluate.total(self.bound, self.forms, weight)

    def classes(self, weight: str | None = None, by_head: bool = False) -> dict[str, dict[str, torch.Tensor]]:
        with torch.no_grad():
            return evaluate.classes(self.bound, self.forms, weight, by_head)

    def terms(self, weight: str | None = None, limit: int | None = DEFAULT_LIMIT) -> dict[str, torch.Tensor]:
        """term ID -> coefficient; TooManyTerms when there are more than `limit`."""
        with torch.no_grad():
            return evaluate.terms(self.bound, self.forms, weight, limit)

    def term(self, term: Term | str) -> torch.Tensor:
        """One term's coefficient (its route prefix evaluated once)."""
        t = self.forms.term(term) if isinstance(term, str) else term
        with torch.no_grad():
            return evaluate.term_coefficients(self.bound, [t])[t.id]
