"""What the forms pane asks the analysis process (gui/analysis.py) about a term: its coefficient G at a step
of the open run (on the run's probe batch), its norm, and its share of its weight's total G (docs/design.md;
the arithmetic is engine/analysis/terms.py). A saved step is answered by the run's RunAnalysis, weights
that training just published by `engine.analysis.service.term_values_live`. No Qt here.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.analysis import service
from engine.analysis.live import Published
from engine.analysis.terms import TermValues
from engine.config import ModelConfig

__all__ = ["TermValues", "ValueRequest"]


@dataclass(frozen=True, eq=False)
class ValueRequest:
    model: ModelConfig
    run_path: str               # the run whose probe batch (and, without `weights`, saved step) is read
    step: int
    term_id: str
    weight: str
    weights: dict | None = None  # published weights ({name: CPU tensor}); None: the run's saved `step`

    def call(self) -> tuple:
        """(fn, *args) for the analysis process."""
        if self.weights is None:
            return (service.ask, self.run_path, "term_values", self.step, self.term_id, self.weight)
        return (service.term_values_live, self.run_path, self.model, Published(self.weights), self.step,
                self.term_id, self.weight)
