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
The process answers in two lanes at once (engine/service_process.py, gui/analysis.py): what is kept here is changed under one lock,
held only while it is looked up or replaced (the published copies' model and the draft are asked about by light
questions, so by the `now` lane alone); a run's own work is locked by its RunAnalysis, a piece at a time.
Qt-free; the process never imports Qt.
"""

from __future__ import annotations

import sys
import threading
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
        self._lock = threading.RLock()   # the lanes': one looks up or replaces what is kept at a time

    def analysis(self, run_path: str):
        """The RunAnalysis of `run_path`, refreshed (the run may have grown since the last question)."""
        from .run_analysis import RunAnalysis

        with self._lock:
            a = self._runs.pop(run_path, None) or RunAnalysis(run_path)
            self._runs[run_path] = a
            while len(self._runs) > KEEP_RUNS:
                self._runs.popitem(last=False)
        a.refresh()
        return a

    def live_model(self, config, weights, step: int):
        from .models import ModelCache

        with self._lock:  # one model for published copies: the lanes load it one at a time
            self._live = self._live or ModelCache()
            return self._live.load(config, weights, ("live", weights.serial), f"at step {step}")

    def draft(self, cfg):
        """(model at step 0, tokenizer) of the builder's draft `cfg`, built once per config."""
        from .draft import build_draft

        with self._lock:
            if self._draft is None or self._draft[0] != cfg:
                self._draft = None  # the previous draft's model is freed before the next is built
                self._draft = (cfg, build_draft(cfg))
            return self._draft[1]

    def live_masks(self, model, tokenizer, prompt: str, band: int, step: int):
        from . import attention as attn

        with self._lock:
            return attn.masks(model, tokenizer, prompt, band, step, self._masked)

    def live_snapshot(self, run_path: str, config, weights, step: int):
        from ..forms import Snapshot

        ident = (config, run_path, step, weights.serial)
        probe = self.analysis(run_path).run.probe()
        with self._lock:
            if self._live_snapshot is None or self._live_snapshot[0] != ident:
                self._live_snapshot = (ident, Snapshot(config, weights, probe.x, probe.y))
            return self._live_snapshot[1]

    def curves(self):
        from ..figures.run_curves import CurvesReader

        with self._lock:
            self._curves = self._curves or CurvesReader()
            return self._curves


_door: Door | None = None
_door_lock = threading.Lock()
_threads_set = threading.local()


def door() -> Door:
    global _door
    with _door_lock:
        if _door is None:
            _door = Door()
    return _door


def _one_torch_thread() -> None:
    """This process's small passes must not take the cores training uses: one thread, which torch takes from
    OMP_NUM_THREADS when it loads (engine/training/thread_policy.py), and which OpenMP sets per calling thread, so each lane
    sets its own once torch is loaded, after an answer (never while the other lane is still loading it: a
    question that needs no torch, the runs listing, never waits for that)."""
    torch = sys.modules.get("torch")
    if getattr(_threads_set, "done", False) or torch is None or getattr(torch.__spec__, "_initializing", False):
        return
    torch.set_num_threads(1)
    _threads_set.done = True


def serve_answer(_door: Door, question, _job):
    """engine/service_process.py's `answer` for the analysis process: a question's progress and cancel reach
    its work through engine/progress.py, so it needs no more than the question."""
    return answer(question)


def answer(question):
    """The answer to a question (engine/analysis/questions.py), computed in this process."""
    try:
        return question.answer(door())
    finally:
        _one_torch_thread()
        _trim()  # engine/heap.py


_trim = HeapTrim()


def reset() -> None:
    """Forget everything kept (tests of the shared process)."""
    global _door
    _door = None
