"""What the weight pane computes off the GUI thread: coefficient records step by step, formulas rendered.

`CoefficientFeeder` holds the open run's `engine.coefficients_cache.CoefficientStore` (built on a pool
thread: it imports torch) and fills it one step at a time through a `LatestJob`: the step on screen first,
then the rest of the timeline for the charts, each job computing one step's record and the update to the
next saved step. The GUI thread only peeks at what is in memory, so scrubbing never waits; a step not yet
in memory asks for it and shows when it arrives. `render_formula` turns the engine's mathtext into PNG
bytes with matplotlib, on a pool thread too (the pane makes the pixmap).
"""

from __future__ import annotations

import io

from PySide6.QtCore import QObject, Signal

from ..jobs import LatestJob
from ..worker import ensure_torch


def _open_store(run):
    ensure_torch()
    from engine.coefficients_cache import CoefficientStore

    return CoefficientStore(run)


def _compute(store, weight: str, step: int):
    ensure_torch()
    import torch

    torch.set_num_threads(1)  # per calling thread under OpenMP: training keeps its own threads
    store.record(weight, step)
    store.update(weight, step)
    return weight, step


class CoefficientFeeder(QObject):
    sig_store_ready = Signal(object)     # the CoefficientStore (or None when the run has none)
    sig_computed = Signal(str, int)      # weight, step: its record (and update, if any) is in memory
    sig_failed = Signal(str)             # a sentence for the user

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.store = None
        self.weight: str | None = None
        self.current: int | None = None
        self.steps: list[int] = []
        self._run = None
        self._busy_with: tuple | None = None
        self._failed: set[tuple] = set()
        self._job = LatestJob(self)
        self._job.sig_done.connect(self._on_done)
        self._job.sig_failed.connect(self._on_failed)

    @property
    def busy(self) -> bool:
        return self._job.busy

    def open_run(self, run) -> None:
        self.store, self._run, self._failed = None, run, set()
        if run is not None:
            self._busy_with = ("open", id(run))
            self._job.submit(self._busy_with, _open_store, run)
        else:
            self.sig_store_ready.emit(None)

    def want(self, weight: str | None, current: int | None, steps: list[int]) -> None:
        """Show `weight` at step `current`; fill the other `steps` for the charts after it."""
        self.weight, self.current, self.steps = weight, current, list(steps)
        self._next()

    def missing(self) -> list[int]:
        """Steps to compute, the one on screen first: its record, or an update that can now be made."""
        store, w = self.store, self.weight
        if store is None or w is None:
            return []
        summaries, geometry = store.summaries(w), store.geometry(w)
        last = self.steps[-1] if self.steps else None
        todo = [s for s in self.steps if (s not in summaries or (s != last and s not in geometry))
                and (w, s) not in self._failed]
        if self.current in todo:
            todo.remove(self.current)
            todo.insert(0, self.current)
        if self.current is not None and store.peek(w, self.current) is None and self.current not in todo:
            todo.insert(0, self.current)  # in the summaries but evicted from memory: read it back
        return todo

    def _next(self) -> None:
        if self._job.busy or self.store is None:
            return
        todo = self.missing()
        if todo:
            self._busy_with = (self.weight, todo[0])
            self._job.submit(self._busy_with, _compute, self.store, self.weight, todo[0])

    def _on_done(self, tag, result) -> None:
        if tag[0] == "open":
            if tag[1] != id(self._run):
                return
            self.store = result
            self.sig_store_ready.emit(result)
        elif result is not None and self.store is not None:
            self.sig_computed.emit(*result)
        self._next()

    def _on_failed(self, tag, message: str) -> None:
        if tag[0] == "open":
            self.sig_failed.emit(f"Coefficients need the run's probe batch: {message}")
            return
        self._failed.add(tag)
        self.sig_failed.emit(f"Coefficient of {tag[0]} at step {tag[1]}: {message}")
        self._next()


def formula_text(cfg, weight: str, kind: str, part: str | None, limit: int = 2500) -> tuple[str, str]:
    """(caption, mathtext) for G of a weight (kind "total"), one of its route classes ("class") or one of
    its terms ("term", part its ID)."""
    ensure_torch()
    from engine.coefficients import class_description
    from engine.forms import TooManyTerms, derive, mathtext

    forms = derive(cfg)
    param = forms.net.param(weight)
    if kind == "total":
        return (f"G of {weight}: Σ over its {forms.count(weight)} terms = −∂L/∂W",
                rf"$G = -\partial L / \partial {param.tex}$")
    if kind == "term":
        # by enumeration: Forms.term(id) splits the ID at commas, which labels like Z_{1,0} contain
        term = next((t for t in forms.terms(weight, limit) if t.id == part), None)
        if term is None:
            return f"no term {part} in this model", ""
        return f"term {part}: G =", mathtext(term.G)
    try:
        members = [t for t in forms.terms(weight, limit) if t.route_class == part]
    except TooManyTerms:
        return f"class {part}: {class_description(part)} (too many terms to list)", ""
    if not members:
        return f"class {part}: {class_description(part)}", ""
    shortest = min(members, key=lambda t: t.op_count)
    caption = (f"class {part}: {class_description(part)}; the sum of {len(members)} term(s), "
               f"the shortest of which ({shortest.id}) is")
    return caption, mathtext(shortest.G)


def render_formula(cfg, weight: str, kind: str, part: str | None, color: str,
                   fontsize: int = 13) -> tuple[str, bytes]:
    """(caption, PNG bytes of the formula, or b"" when there is none) via matplotlib's mathtext."""
    caption, text = formula_text(cfg, weight, kind, part)
    if not text:
        return caption, b""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(0.01, 0.01))
    fig.text(0, 0, text, fontsize=fontsize, color=color)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, transparent=True, bbox_inches="tight", pad_inches=0.05)
    return caption, buf.getvalue()
