"""Numbers for the forms pane's terms, computed off the GUI thread: a term's coefficient G at a step of the
open run (on the run's probe batch), its norm, and its share of its weight's total G (DESIGN §4; the
arithmetic is engine/analysis/terms.py). A saved step is answered by the run's RunAnalysis; weights that
training just published are bound to the run's probe batch here, the newest copy only. No Qt here.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from engine.analysis.terms import TermValues
from engine.config import ModelConfig

from ..worker import ensure_torch

__all__ = ["TermValues", "ValueRequest", "term_values"]


@dataclass(frozen=True, eq=False)
class ValueRequest:
    model: ModelConfig
    run_path: str               # the run whose probe batch (and, without `weights`, saved step) is read
    step: int
    term_id: str
    weight: str
    weights: dict | None = None  # published weights ({name: CPU tensor}); None: the run's saved `step`


_LOCK = threading.Lock()
_ANALYSIS: dict = {}  # run path -> RunAnalysis, the newest run only
_LIVE: dict = {}      # (model, run path, step) -> Snapshot of published weights, the newest one only


def _analysis(run_path: str):
    from engine.analysis.run_analysis import RunAnalysis

    a = _ANALYSIS.get(run_path)
    if a is None:
        _ANALYSIS.clear()
        a = _ANALYSIS[run_path] = RunAnalysis(run_path)
    a.refresh()
    return a


def _live_snapshot(req: ValueRequest):
    from engine.forms import Snapshot

    key = (req.model, req.run_path, req.step)
    snap = _LIVE.get(key)
    if snap is None:
        probe = _analysis(req.run_path).run.probe()
        snap = Snapshot(req.model, req.weights, probe.x, probe.y)
        _LIVE.clear()
        _LIVE[key] = snap
    return snap


def term_values(req: ValueRequest) -> TermValues:
    ensure_torch()
    from engine.analysis import terms

    with _LOCK:
        if req.weights is None:
            return _analysis(req.run_path).term_values(req.step, req.term_id, req.weight)
        return terms.term_values(_live_snapshot(req), req.term_id, req.weight, req.step)
