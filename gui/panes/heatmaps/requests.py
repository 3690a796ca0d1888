"""What the heatmaps pane asks about the weights it shows: one question of engine/analysis/questions.py in,
one result out.

A request names the tab (attention, masks, positional encodings or a head's diff between two steps), where
the weights come from (a copy published by training, a saved step of a run, or, before any run, the builder's
draft at initialisation: engine/analysis/draft.py) and the view's parameters;
`Request.question()` is the question asked. A saved step is answered by the run's RunAnalysis (the diff is
always between two saved steps), a live copy by the same pure functions on one model cache (the copy
crosses to the process once, engine/analysis/live.py), so a refresh costs the forward passes the tab needs.
Results are the frozen dataclasses of numpy arrays that engine/analysis/attention.py defines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.analysis import questions as q
from engine.analysis.live import Published
from engine.configs.config import ModelConfig

TABS = ("attention", "masks", "positional", "diff")


@dataclass(frozen=True)
class Source:
    """The weights to show: a live copy from training ({name: CPU tensor}), step `step` of a run, or the
    builder's `draft` (an ExperimentConfig) as Train would start it."""

    step: int
    config: ModelConfig
    weights: dict | None = None
    run: Any = None  # engine.rundir.runs.Run, read in the job thread
    draft: Any = None

    @property
    def key(self) -> tuple:
        if self.draft is not None:
            return ("draft", self.step, self.draft)
        return ("live" if self.weights is not None else "run", self.step, id(self.weights or self.run))


@dataclass(frozen=True)
class Request:
    tab: str
    source: Source
    tokenizer: Any
    prompt: str
    band: int = 4    # β of the banded mask on the masks tab
    shift: int = 1   # k of the shift map on the positional tab
    other: int | None = None  # the saved step subtracted on the diff tab

    @property
    def key(self) -> tuple:
        params = {"attention": (), "masks": (self.band,), "positional": (self.shift,), "diff": (self.other,)}
        return (self.tab, self.source.key, self.prompt, *params[self.tab])

    def question(self) -> q.Question:
        """The question for the analysis process: about a saved step of a run, or about a published copy."""
        src = self.source
        if self.tab == "diff":
            return q.AttentionDiff(str(src.run.path), src.step, self.other, self.prompt)
        if src.draft is not None:
            where = q.Draft(src.draft)
        elif src.weights is None:
            where = q.Saved(str(src.run.path), src.step)
        else:
            where = q.Live(src.config, Published(src.weights), src.step, tokenizer=self.tokenizer)
        return {"attention": lambda: q.Attention(where, self.prompt),
                "masks": lambda: q.Masks(where, self.prompt, self.band),
                "positional": lambda: q.Positional(where, self.shift)}[self.tab]()
