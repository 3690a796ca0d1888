"""How the Weight pane gets coefficient records: it asks the app's analysis process (gui/analysis.py) for each
step it needs and keeps only what it was answered.

`CoefficientFeeder` asks through one `AnalysisJob` (questions.CoefficientAt, answered by the
run's RunAnalysis.coefficients, which keeps the memory and disk cache): the step on screen first, with its
matrices, then the rest of the timeline for the charts, whose answers are only each step's summary and
update geometry. One request is in the process at a time and the feeder picks the next when it is answered,
so while the user scrubs the newest step on screen is the next asked: scrubbing never builds a queue. The
answers live in `ShownRecords`, GUI-side: every summary and geometry (a few numbers a step) and the
matrices of the few steps last shown, bounded in bytes. The GUI thread only reads them, never waits.

A large model (GPT-2 small) answers each step in two stages (engine/coefficients): G alone first, then,
asked again with `split` as a background question, its route classes; the feeder asks the step on screen's
split first, then the other steps'. The step on screen comes as drawn through the pane's row `window`
(engine/coefficients/window.py) when the weight is too large to send whole.

The forms engine is mostly Python: computed on a thread in this process it held the interpreter lock so that
the GUI thread, whose every pyqtgraph paint calls back into Python, stalled 50–180 ms at a time while
scrubbing (measured here with a 5 ms timer probe). Records unpickle into engine.coefficients, which imports
torch: the window imports it before it builds a pane (MainWindow._build_panes), so no two threads import it at once.

The geometry and routes views ask the same process through their own AnalysisJobs (pane.py).
"""

from __future__ import annotations

from collections import OrderedDict

from PySide6.QtCore import QObject, Signal

from engine.analysis import questions as q
from engine.analysis.cache import nbytes

from ...jobs import AnalysisJob

SHOWN_BYTES = 64 * 2**20  # matrices kept GUI-side: the steps last shown (the newest is always kept)


class ShownRecords:
    """What the analysis process answered about one run, read by the pane on the GUI thread: the run's
    model config and weight names, every step's summary and update geometry, and the (record, update) of
    the steps last shown within SHOWN_BYTES."""

    def __init__(self, run, cfg, names: list[str], max_bytes: int = SHOWN_BYTES):
        self.run, self.cfg, self._names, self._max_bytes = run, cfg, list(names), max_bytes
        self._shown: OrderedDict[tuple, tuple] = OrderedDict()  # (weight, step) -> (record, update)
        self._bytes = 0
        self._summaries: dict[str, dict] = {}
        self._geometry: dict[str, dict] = {}
        self._newest: dict[str, int] = {}  # weight -> the step whose matrices arrived last

    def steps(self) -> list[int]:
        """Saved steps, listed afresh (a directory listing: a live run keeps adding them)."""
        return self.run.saved_steps()

    def weight_names(self) -> list[str]:
        return list(self._names)

    def keep(self, weight: str, step: int, answer: tuple) -> None:
        summary, geometry, shown = answer
        self._summaries.setdefault(weight, {})[step] = summary
        if geometry is not None:
            self._geometry.setdefault(weight, {})[step] = geometry
        if shown is None:
            return
        old = self._shown.pop((weight, step), None)
        self._bytes += nbytes(shown) - (nbytes(old) if old is not None else 0)
        self._shown[(weight, step)] = shown
        self._newest[weight] = step
        while self._bytes > self._max_bytes and len(self._shown) > 1:
            self._bytes -= nbytes(self._shown.popitem(last=False)[1])

    def _get(self, weight: str, step: int) -> tuple | None:
        got = self._shown.get((weight, step))
        if got is not None:
            self._shown.move_to_end((weight, step))
        return got

    def peek(self, weight: str, step: int):
        got = self._get(weight, step)
        return got[0] if got is not None else None

    def peek_update(self, weight: str, step: int):
        got = self._get(weight, step)
        return got[1] if got is not None else None

    def forget_matrices(self) -> None:
        """Drop every kept (record, update): they were drawn through another window."""
        self._shown.clear()
        self._bytes = 0
        self._newest.clear()

    def newest(self, weight: str) -> int | None:
        """The step of `weight` whose matrices arrived last, if they are still kept."""
        step = self._newest.get(weight)
        return step if (weight, step) in self._shown else None

    def summaries(self, weight: str) -> dict:
        return dict(self._summaries.get(weight, {}))

    def geometry(self, weight: str) -> dict:
        """step -> (cos(ΔW, G), ‖ΔW‖/‖G‖, ‖ΔW‖) of the updates answered so far."""
        return dict(self._geometry.get(weight, {}))


class CoefficientFeeder(QObject):
    sig_store_ready = Signal(object)     # the ShownRecords (or None when no run is open)
    sig_computed = Signal(str, int, bool)  # weight, step, whether its matrices came (or its summary alone)
    sig_failed = Signal(str)             # a sentence for the user

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.store: ShownRecords | None = None
        self.weight: str | None = None
        self.current: int | None = None
        self.steps: list[int] = []
        self.window = None  # engine.coefficients.window.Window of the step on screen (None: pooled overview)
        self._run = None
        self._failed: set[tuple] = set()
        self._job = AnalysisJob(self)
        self._job.sig_done.connect(self._on_done)
        self._job.sig_failed.connect(self._on_failed)

    @property
    def busy(self) -> bool:
        return self._job.busy

    def open_run(self, run) -> None:
        self.store, self._run, self._failed = None, run, set()
        if run is not None:
            self._job.ask(q.CoefficientTable(str(run.path)), tag=("open", id(run)))
        else:
            self.sig_store_ready.emit(None)

    def want(self, weight: str | None, current: int | None, steps: list[int]) -> None:
        """Show `weight` at step `current`; fill the other `steps` for the charts after it."""
        self.weight, self.current, self.steps = weight, current, list(steps)
        self._next()

    def set_window(self, window) -> None:
        """Draw the step on screen through `window` from now on (its matrices are asked again)."""
        if window != self.window:
            self.window = window
            if self.store is not None:
                self.store.forget_matrices()
            self._next()

    def missing(self) -> list[tuple[int, bool]]:
        """(step, split) to ask for, the one on screen first: its matrices (then, for a large model, its
        split), or an update that can now be made; then the other steps' splits."""
        store, w = self.store, self.weight
        if store is None or w is None:
            return []
        summaries, geometry = store.summaries(w), store.geometry(w)
        first = self.steps[0] if self.steps else None  # the first saved step has no update reaching it
        ok = [s for s in self.steps if (w, s) not in self._failed]
        todo = [(s, False) for s in ok if (s not in summaries or (s != first and s not in geometry))
                and s != self.current]
        todo += [(s, True) for s in ok if s in summaries and summaries[s].pending and s != self.current]
        if self.current is not None and (w, self.current) not in self._failed:
            shown = store.peek(w, self.current)
            if shown is None:
                todo.insert(0, (self.current, False))  # not shown yet, or its matrices left the GUI-side memory
            elif shown.pending:
                todo.insert(0, (self.current, True))
        return todo

    def _next(self) -> None:
        if self._job.busy or self.store is None:
            return
        todo = self.missing()
        if todo:
            step, split = todo[0]
            full = step == self.current
            window = self.window if full else None
            self._job.ask(q.CoefficientAt(str(self._run.path), self.weight, step, full, split, window),
                          tag=(id(self._run), self.weight, step, window))

    def _on_done(self, tag, result) -> None:
        if tag[0] == "open":
            if tag[1] == id(self._run):
                self.store = ShownRecords(self._run, *result)
                self.sig_store_ready.emit(self.store)
        elif tag[0] == id(self._run) and self.store is not None:
            if result[2] is not None and tag[3] != self.window:  # drawn through a window since left
                result = (*result[:2], None)
            self.store.keep(tag[1], tag[2], result)
            self.sig_computed.emit(tag[1], tag[2], result[2] is not None)
        self._next()

    def _on_failed(self, tag, message: str) -> None:
        if tag[0] == "open":
            self.sig_failed.emit(f"Coefficients need the run's probe batch: {message}")
            return
        self._failed.add(tag[1:3])
        self.sig_failed.emit(f"Coefficient of {tag[1]} at step {tag[2]}: {message}")
        self._next()
