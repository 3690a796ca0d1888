"""Where a question's weights come from: a field of every question about one model's weights, so that each
question is one class whatever the source (engine/analysis/questions.py):

- `Saved(run, step)`: a saved step of a run, answered by that run's RunAnalysis and its caches;
- `Live(config, weights, step, run)`: the copy training just published (it crosses to the analysis process once,
  engine/analysis/live.py), answered by the same pure functions on one model cache;
- `Draft(config)`: the builder's draft at initialisation, step 0 of the run Train would start
  (engine/analysis/draft.py).

`source.at(door)` is what answers about those weights: the RunAnalysis of a saved step's run, or a `ModelAt`,
which has RunAnalysis's methods for one model held in memory (no cache: a published copy is asked about once).

    Attention(Saved("runs/tiny", 250), "To be")
    Attention(Live(model_config, Published(weights), 251, run="runs/tiny"), "To be")
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import UserError
from . import attention as attn
from .live import GONE


@dataclass(frozen=True)
class Saved:
    run: str      # the run's folder
    step: int     # a saved step of it

    def at(self, door):
        return door.analysis(self.run)


@dataclass(frozen=True)
class Live:
    config: Any               # ModelConfig of the weights
    weights: Any              # Published on the asking side; the process's held copy (or None) on arrival
    step: int
    run: str | None = None    # the run's folder (its tokenizer and probe batch are read there), once it has one
    tokenizer: Any = field(default=None, hash=False, compare=False)  # only while the run has no folder yet

    def at(self, door) -> ModelAt:
        if self.weights is None:
            raise UserError(GONE)
        tokenizer = door.analysis(self.run).tokenizer if self.run is not None else self.tokenizer
        return ModelAt(door, lambda: door.live_model(self.config, self.weights, self.step), tokenizer, live=self)


@dataclass(frozen=True)
class Draft:
    config: Any               # ExperimentConfig (engine.analysis.draft.draft_of the builder's)

    @property
    def step(self) -> int:
        return 0

    def at(self, door) -> ModelAt:
        model, tokenizer = door.draft(self.config)
        return ModelAt(door, lambda: model, tokenizer)


Source = Saved | Live | Draft


class ModelAt:
    """The analyses RunAnalysis answers for a saved step, for one model held in memory (a published copy or a
    draft); `step` names the weights in the answers."""

    def __init__(self, door, model: Callable[[], Any], tokenizer, live: Live | None = None):
        self._door, self._model, self.tokenizer, self._live = door, model, tokenizer, live

    @property
    def model(self):
        """The GPT holding the weights (loaded when an analysis first needs it: a term's values do not)."""
        return self._model()

    def attention(self, step: int, prompt: str) -> attn.AttentionResult:
        return attn.attention(self.model, self.tokenizer, prompt, step)

    def masks(self, step: int, prompt: str, band: int) -> attn.MasksResult:
        return self._door.live_masks(self.model, self.tokenizer, prompt, band, step)

    def positional(self, step: int, shift: int) -> attn.PositionalResult:
        return attn.positional(self.model, shift, step)

    def next_tokens(self, step: int, text: str, position: int, temperature: float, top_k: int | None):
        from .next_tokens import next_tokens

        return next_tokens(self.model, self.tokenizer, text, position, temperature, top_k, step)

    def tokens(self, weight: str, step: int, split: bool = False):
        """A coefficient of the published weights read in tokens, with the update from the run's newest saved
        step before them (engine/analysis/tokens.py)."""
        return self._door.analysis(self._run("a coefficient in tokens")).tokens_of(self._live.weights, step,
                                                                                   weight, split)

    def curvature(self, step: int, weight: str | None = None):
        """The curvature along the update from the run's newest saved step to the published weights."""
        return self._door.analysis(self._run("the curvature along the step")).curvature_of(self._live.weights,
                                                                                         step, weight)

    def _run(self, what: str) -> str:
        live = self._live
        if live is None or live.run is None:
            raise UserError(f"{what} needs the run's probe batch and saved steps: open or train a run")
        return live.run

    def term_values(self, step: int, term_id: str, weight: str):
        """A term's values, bound to the run's probe batch: published weights of a run with a folder only."""
        from . import terms

        live = self._live
        if live is None or live.run is None:
            raise UserError("a term's values need the run's probe batch: open or train a run")
        snapshot = self._door.live_snapshot(live.run, live.config, live.weights, step)
        return terms.term_values(snapshot, term_id, weight, step)
