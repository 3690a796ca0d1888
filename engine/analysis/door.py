"""The analysis process's side of the one door to a run's numbers: `answer(question)` is the only function
the GUI sends there (gui/analysis.py), and `Door` holds what the process keeps between questions.

Kept, and why (measured in earlier rounds; see docs/design.md#the-analysis-process):
- the RunAnalysis of the newest three runs asked about (the open run and a compared pair): each holds its
  model cache and result cache, so scrubbing a timeline recomputes nothing it has seen;
- one model cache of the weights training published (they cross to the process once, engine/analysis/live.py)
  and the forms snapshot of the newest published copy (the next term asked at that step reuses it);
- the run-curves reader, which re-reads only the metrics logs that changed;
- the builder's draft at initialisation (engine/analysis/draft.py) of the newest config asked about, so the
  Heatmaps tabs and a new prompt before any run build its model and tokenizer once.
Qt-free; the process never imports Qt.
"""

from __future__ import annotations

from collections import OrderedDict

from ..heap import HeapTrim

KEEP_RUNS = 3


class Door:
    def __init__(self):
        self._runs: OrderedDict = OrderedDict()  # run path -> RunAnalysis
        self._live = None            # ModelCache of published copies
        self._masked: dict = {}      # published models rebuilt under other masks (the masks tab)
        self._live_snapshot: tuple | None = None  # ((cfg, run, step, serial), Snapshot)
        self._curves = None
        self._draft: tuple | None = None  # (ExperimentConfig, (model, tokenizer))

    def analysis(self, run_path: str):
        """The RunAnalysis of `run_path`, refreshed (the run may have grown since the last question)."""
        from .run_analysis import RunAnalysis

        a = self._runs.pop(run_path, None) or RunAnalysis(run_path)
        self._runs[run_path] = a
        while len(self._runs) > KEEP_RUNS:
            self._runs.popitem(last=False)
        a.refresh()
        return a

    def live_model(self, config, weights, step: int):
        from .models import ModelCache

        self._live = self._live or ModelCache()
        return self._live.load(config, weights, ("live", weights.serial), f"at step {step}")

    def draft(self, cfg):
        """(model at step 0, tokenizer) of the builder's draft `cfg`, built once per config."""
        from .draft import build_draft

        if self._draft is None or self._draft[0] != cfg:
            self._draft = None  # the previous draft's model is freed before the next is built
            self._draft = (cfg, build_draft(cfg))
        return self._draft[1]

    def live_masks(self, model, tokenizer, prompt: str, band: int, step: int):
        from . import attention as attn

        return attn.masks(model, tokenizer, prompt, band, step, self._masked)

    def live_snapshot(self, run_path: str, config, weights, step: int):
        from ..forms import Snapshot

        ident = (config, run_path, step, weights.serial)
        if self._live_snapshot is None or self._live_snapshot[0] != ident:
            probe = self.analysis(run_path).run.probe()
            self._live_snapshot = (ident, Snapshot(config, weights, probe.x, probe.y))
        return self._live_snapshot[1]

    def curves(self):
        from ..figures.run_curves import CurvesReader

        self._curves = self._curves or CurvesReader()
        return self._curves


_door: Door | None = None


def door() -> Door:
    global _door
    if _door is None:
        import torch

        # under OpenMP the setting is per calling thread; this process's small passes must not take the
        # cores training uses
        torch.set_num_threads(1)
        _door = Door()
    return _door


def answer(question):
    """The answer to a question (engine/analysis/questions.py), computed in this process."""
    try:
        return question.answer(door())
    finally:
        _trim()  # engine/heap.py


_trim = HeapTrim()


def reset() -> None:
    """Forget everything kept (tests of the shared process)."""
    global _door
    _door = None
