"""What the heatmaps pane asks, off the GUI thread: one request in, one result out.

A request names the tab (attention, masks or positional encodings), where the weights come from (a copy
published by training, or a saved step of a run) and the view's parameters. A saved step is answered by the
run's `engine.analysis.run_analysis.RunAnalysis`; a live copy by the same pure functions
(engine/analysis/attention.py) on a model from one `ModelCache`, so a refresh costs one state-dict copy and
the forward passes the tab needs. Results are the frozen dataclasses of numpy arrays that module defines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.analysis import attention as attn
from engine.config import ModelConfig

TABS = ("attention", "masks", "positional")


@dataclass(frozen=True)
class Source:
    """The weights to show: a live copy from training ({name: CPU tensor}) or step `step` of a run."""

    step: int
    config: ModelConfig
    weights: dict | None = None
    run: Any = None  # engine.runs.Run, read in the job thread

    @property
    def key(self) -> tuple:
        return ("live" if self.weights is not None else "run", self.step, id(self.weights or self.run))


@dataclass(frozen=True)
class Request:
    tab: str
    source: Source
    tokenizer: Any
    prompt: str
    band: int = 4    # β of the banded mask on the masks tab
    shift: int = 1   # k of the shift map on the positional tab

    @property
    def key(self) -> tuple:
        params = {"attention": (), "masks": (self.band,), "positional": (self.shift,)}[self.tab]
        return (self.tab, self.source.key, self.prompt, *params)


class HeatmapsComputer:
    """Called from one job thread at a time (gui.jobs.LatestJob), so its caches need no lock."""

    def __init__(self):
        self._analysis = None  # RunAnalysis of the run last asked about
        self._models = None    # ModelCache for live copies
        self._masked: dict = {}  # (kind, band) -> the live model under another mask, reused

    def __call__(self, request: Request):
        import torch  # torch loads here, on the job's thread, never on the GUI thread at start-up

        # One thread for these small forward passes. Under OpenMP the setting is per calling thread, so
        # training keeps its own; a second team of spinning threads would take cores from training.
        torch.set_num_threads(1)
        source = request.source
        if source.weights is None:
            return self._from_run(request)
        from engine.analysis.models import ModelCache

        self._models = self._models or ModelCache()
        model = self._models.load(source.config, source.weights, source.key, f"at step {source.step}")
        if request.tab == "positional":
            return attn.positional(model, request.shift, source.step)
        if request.tab == "attention":
            return attn.attention(model, request.tokenizer, request.prompt, source.step)
        return attn.masks(model, request.tokenizer, request.prompt, request.band, source.step, self._masked)

    def _from_run(self, request: Request):
        from engine.analysis.run_analysis import RunAnalysis

        run, step = request.source.run, request.source.step
        if self._analysis is None or self._analysis.path != run.path:
            self._analysis = RunAnalysis(run)
        self._analysis.refresh()
        if request.tab == "positional":
            return self._analysis.positional(step, request.shift)
        if request.tab == "attention":
            return self._analysis.attention(step, request.prompt)
        return self._analysis.masks(step, request.prompt, request.band)
