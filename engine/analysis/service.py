"""What the GUI's analysis process runs (gui/analysis.py sends each request here): top-level functions, so
they cross a process boundary, that keep the process's RunAnalysis objects and live-copy model between
requests. Qt-free; the process never imports Qt.

`ask(run_path, method, *args)` calls one RunAnalysis method on a saved step of a run (the newest three runs
asked about are kept: the open run and a compared pair); `coefficients_of` and `coefficient_at` answer the
Weight pane from the run's CoefficientStore (RunAnalysis.coefficients: memory, then RUN/cache/, then
computed). `ask_pair(a_path, b_path, function, *args)` answers a question about two runs
(engine/analysis/pair.py) from their two RunAnalysis objects. `run_curves(paths, known)` reads the metrics
logs of runs overlaid (engine/run_curves.py), re-reading only logs that changed; `run_summaries(folders)`
lists the runs in the run browser's folders and the folders to watch (engine/run_list.py).
`ask_live(method, cfg, weights, step, *args)` answers a RunAnalysis question on weights training just
published (not yet saved), through the same pure functions on one model cache; the weights arrive once and
are held between requests (engine/analysis/live.py).
"""

from __future__ import annotations

from collections import OrderedDict

from ..errors import UserError
from . import attention as attn
from .live import GONE

_RUNS: OrderedDict = OrderedDict()  # run path -> RunAnalysis
_KEEP_RUNS = 3
_live = None     # ModelCache of published copies
_masked: dict = {}


def _one_thread() -> None:
    import torch

    # under OpenMP the setting is per calling thread; this process's small passes must not take the cores
    # training uses
    torch.set_num_threads(1)


def analysis(run_path: str):
    """The RunAnalysis of `run_path`, refreshed (the run may have grown since the last request)."""
    from .run_analysis import RunAnalysis

    a = _RUNS.pop(run_path, None) or RunAnalysis(run_path)
    _RUNS[run_path] = a
    while len(_RUNS) > _KEEP_RUNS:
        _RUNS.popitem(last=False)
    a.refresh()
    return a


def ask(run_path: str, method: str, *args):
    _one_thread()
    return getattr(analysis(run_path), method)(*args)


def ask_pair(a_path: str, b_path: str, function: str, *args):
    """`function` is one of engine/analysis/pair.py's: choices, attention or weight."""
    from . import pair

    if function not in ("choices", "attention", "weight"):
        raise ValueError(f"no pair analysis {function!r}")
    _one_thread()
    return getattr(pair, function)(analysis(a_path), analysis(b_path), *args)


_curves = None  # the CurvesReader of the runs overlaid


def run_curves(paths: list[str], known: dict):
    """The curves of the runs at `paths` whose logs changed since the stamps `known` (path -> stamp) the
    asker holds: {path: (stamp, RunCurves or a one-line error)} (engine.run_curves.CurvesReader)."""
    global _curves
    from ..run_curves import CurvesReader

    _curves = _curves or CurvesReader()
    return _curves.changed(paths, known)


def run_summaries(folders: list[str]):
    """The run browser's rows and the folders it watches for runs to come: engine.run_list.list_folders of
    `folders` (a RunListing), so the GUI thread stats none of them."""
    from pathlib import Path

    from ..run_list import list_folders

    return list_folders([Path(f) for f in folders])


def ask_live(method: str, cfg, weights, step: int, *args):
    """`method` is attention (tokenizer, prompt), masks (tokenizer, prompt, band), positional (shift) or
    next_tokens (tokenizer, text, position, temperature, top_k);
    `weights` is the live.Held copy the request's Published weights became in this process."""
    global _live
    _one_thread()
    from .models import ModelCache

    if weights is None:
        raise UserError(GONE)
    _live = _live or ModelCache()
    model = _live.load(cfg, weights, ("live", weights.serial), f"at step {step}")
    if method == "attention":
        return attn.attention(model, *args, step)
    if method == "masks":
        tokenizer, prompt, band = args
        return attn.masks(model, tokenizer, prompt, band, step, _masked)
    if method == "positional":
        return attn.positional(model, *args, step)
    if method == "next_tokens":
        from .next_tokens import next_tokens

        return next_tokens(model, *args, step)  # (tokenizer, text, position, temperature, top_k)
    raise ValueError(f"no live analysis {method!r}")


_live_snapshot: tuple | None = None  # ((cfg, run path, step, copy key), Snapshot) of the newest published copy


def term_values_live(run_path: str, cfg, weights, step: int, term_id: str, weight: str):
    """A term's values on weights training just published, bound to the run's probe batch (the newest
    copy's snapshot is kept: the next term asked at the same step reuses it)."""
    global _live_snapshot
    _one_thread()
    from ..forms import Snapshot
    from . import terms

    if weights is None:
        raise UserError(GONE)
    ident = (cfg, run_path, step, weights.serial)
    if _live_snapshot is None or _live_snapshot[0] != ident:
        probe = analysis(run_path).run.probe()
        _live_snapshot = (ident, Snapshot(cfg, weights, probe.x, probe.y))
    return terms.term_values(_live_snapshot[1], term_id, weight, step)


def render_formula(cfg, weight: str, kind: str, part, color: str) -> tuple[str, bytes]:
    """(caption, PNG bytes) of a weight's coefficient formula (engine/coefficients/formula.py): mathtext's
    parser is pure Python, so it runs here rather than beside the GUI thread."""
    from ..coefficients.formula import render_formula as render

    return render(cfg, weight, kind, part, color)


def coefficients_of(run_path: str):
    """(model config, weight names) of a run whose coefficients can be computed; a run without a probe
    batch raises here, in one line."""
    _one_thread()
    store = analysis(run_path).coefficients
    return store.cfg, store.weight_names()


def coefficient_at(run_path: str, weight: str, step: int, full: bool):
    """What the Weight pane draws of `weight` at `step`: (Summary, the update's (cos, ratio, ‖ΔW‖) or None,
    and when `full` the (StepCoefficient, Update or None) themselves). The charts need only the first two
    at every step, so the matrices cross the process boundary only for the step on screen."""
    _one_thread()
    store = analysis(run_path).coefficients
    record, update = store.record(weight, step), store.update(weight, step)
    return record.summary(), store.geometry(weight).get(step), (record, update) if full else None
