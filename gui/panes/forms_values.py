"""Numbers for the forms pane's terms, computed off the GUI thread: a term's coefficient G at a step of the
open run (on the run's probe batch), its norm, and its share of its weight's total G (DESIGN §4: all of it
recomputed from the run directory, or from the weights training just published). No Qt here.

The share is the projection ⟨G_term, G_total⟩ / ‖G_total‖², so the shares of a weight's terms add up to 1
(a term may take a negative share: it pulls against the total).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from engine.config import ModelConfig
from engine.errors import UserError

from ..worker import ensure_torch


@dataclass(frozen=True, eq=False)
class ValueRequest:
    model: ModelConfig
    run_path: str               # the run whose probe batch (and, without `weights`, snapshot) is read
    step: int
    term_id: str
    weight: str
    weights: dict | None = None  # published weights ({name: CPU tensor}); None: load `step` from the run


@dataclass(frozen=True)
class TermValues:
    step: int
    term_id: str
    weight: str
    matrix: np.ndarray          # the term's Σ G^t in the weight's shape (a row for a vector)
    norm: float
    total_norm: float
    share: float


_LOCK = threading.Lock()
_SNAPSHOT: dict = {}  # (model, run path, step) -> engine.forms.Snapshot, the newest one only


def _snapshot(req: ValueRequest):
    from engine.forms import Snapshot
    from engine.runs import Run

    key = (req.model, req.run_path, req.step)
    with _LOCK:
        snap = _SNAPSHOT.get(key)
        if snap is None:
            run = Run(req.run_path)
            probe = run.probe()
            weights = req.weights if req.weights is not None else run.load_weights(req.step)
            snap = Snapshot(req.model, weights, probe.x, probe.y)
            _SNAPSHOT.clear()
            _SNAPSHOT[key] = snap
        return snap


def term_values(req: ValueRequest) -> TermValues:
    ensure_torch()
    snap = _snapshot(req)
    try:
        g = snap.term(req.term_id).double().numpy()
    except KeyError as e:
        raise UserError(str(e.args[0])) from None
    total = snap.total(req.weight)[req.weight].double().numpy()
    tt = float((total * total).sum())
    share = float((g * total).sum()) / tt if tt > 0 else float("nan")
    matrix = g.reshape(1, -1) if g.ndim == 1 else g
    return TermValues(req.step, req.term_id, req.weight, matrix, float(np.linalg.norm(g)),
                      float(np.sqrt(tt)), share)
