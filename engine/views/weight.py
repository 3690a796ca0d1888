"""The Weight pane's coefficient page, as a view model: which part of G is shown, the norms chart's options, the
rows a weight too large to draw is drawn through, and what the analysis process answered of the open run's
coefficients (engine/coefficients, questions.CoefficientTable / CoefficientAt / CoefficientFormula / LargestTerms).

The weight and the step are the workspace's selection (`shown_weight`, `shown_step`: the weight chosen anywhere,
else the model's first block's; the step the shared timeline browses, else the newest saved). What the view
needs, in order: the run's table of weights, the step on screen with its matrices (drawn through the row window
for a large weight) and, for a large model, its split (a long question), the chosen part's formula, the largest
terms of a weight with too many to split, then every other saved step's summary and update for the charts and
their splits. The answers are kept in `ShownRecords`: every step's summary and update geometry (a few numbers) and
the matrices of the steps last shown within SHOWN_BYTES.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from ..analysis import questions as q
from ..analysis.cache import nbytes
from ..model.weight_layout import weight_names, weight_shapes
from .view import View

SHOWN_BYTES = 64 * 2**20  # matrices kept: the steps last shown (the newest is always kept)
ROWS = ("pooled", "tokens", "from")  # a large weight's rows: every row pooled, a text's tokens', a run of rows


def shown_weight(ws, names: list[str] | None = None) -> str | None:
    """The weight the Weight pane shows: the selection's, if the model has it (a head's block such as
    blocks.0.W_Q.h1 is its matrix's), else its first block's first."""
    names = weight_names(ws.model) if names is None else names
    if not names:
        return None
    chosen = ws.selection.weight
    if chosen is not None and chosen not in names and chosen.rsplit(".", 1)[0] in names:
        chosen = chosen.rsplit(".", 1)[0]
    return chosen if chosen in names else names[1 if len(names) > 1 else 0]


def shown_step(ws) -> int | None:
    """The saved step shown: the one the shared timeline browses, else the open run's newest."""
    if ws.selection.step is not None:
        return ws.selection.step
    steps = ws.open_run.saved_steps() if ws.open_run is not None else []
    return steps[-1] if steps else None


def run_path(ws) -> str | None:
    run = ws.open_run
    return None if run is None or run.path is None else str(run.path)


class ShownRecords:
    """What the analysis process answered about one run's coefficients: every step's summary and update
    geometry, and the (record, update) drawn of the steps last shown within `max_bytes` (keyed by the row window
    they were drawn through)."""

    def __init__(self, max_bytes: int = SHOWN_BYTES):
        self._max_bytes = max_bytes
        self._shown: OrderedDict[tuple, tuple] = OrderedDict()  # (weight, step, window) -> (record, update)
        self._bytes = 0
        self._summaries: dict[str, dict] = {}
        self._geometry: dict[str, dict] = {}
        self._newest: dict[tuple, int] = {}  # (weight, window) -> the step whose matrices arrived last

    def __bool__(self) -> bool:
        """Anything answered is held."""
        return bool(self._summaries or self._shown)

    def keep(self, weight: str, step: int, answer: tuple, window=None) -> None:
        summary, geometry, shown = answer
        self._summaries.setdefault(weight, {})[step] = summary
        if geometry is not None:
            self._geometry.setdefault(weight, {})[step] = geometry
        if shown is None:
            return
        key = (weight, step, window)
        old = self._shown.pop(key, None)
        self._bytes += nbytes(shown) - (nbytes(old) if old is not None else 0)
        self._shown[key] = shown
        self._newest[(weight, window)] = step
        while self._bytes > self._max_bytes and len(self._shown) > 1:
            self._bytes -= nbytes(self._shown.popitem(last=False)[1])

    def _get(self, weight: str, step: int, window) -> tuple | None:
        got = self._shown.get((weight, step, window))
        if got is not None:
            self._shown.move_to_end((weight, step, window))
        return got

    def peek(self, weight: str, step: int, window=None):
        got = self._get(weight, step, window)
        return got[0] if got is not None else None

    def peek_update(self, weight: str, step: int, window=None):
        got = self._get(weight, step, window)
        return got[1] if got is not None else None

    def newest(self, weight: str, window=None) -> int | None:
        """The step of `weight` whose matrices arrived last through `window`, if they are still kept."""
        step = self._newest.get((weight, window))
        return step if (weight, step, window) in self._shown else None

    def summaries(self, weight: str) -> dict:
        return dict(self._summaries.get(weight, {}))

    def geometry(self, weight: str) -> dict:
        """step -> (cos(ΔW, G), ‖ΔW‖/‖G‖, ‖ΔW‖) of the updates answered so far."""
        return dict(self._geometry.get(weight, {}))


@dataclass(eq=False)
class CoefficientView(View):
    kind: str = "total"            # total | class | term: what the main map shows
    part: str | None = None        # the class or term shown (None for G)
    split: str = "classes"         # the norms chart: classes | terms
    mode: str = "lines"            # the norms chart: lines | shares
    log: bool = True               # the norms chart's lines on a log axis (classes differ by decades)
    rows: str = "pooled"           # ROWS: how a weight too large to draw whole is drawn
    rows_text: str = ""            # the text whose tokens' rows are drawn ("tokens")
    rows_start: int = 0            # the first row drawn ("from")
    table: object = None           # (model config, weight names) of the open run's coefficients
    records: ShownRecords = field(default_factory=ShownRecords)
    formulas: dict = field(default_factory=dict)   # CoefficientFormula -> (caption, LaTeX, text notation)
    largest: dict = field(default_factory=dict)    # (weight, step) -> engine.coefficients.largest.LargestTerms
    answered: int = 0              # raised with every answer kept (the pane redraws)

    # ---- what is shown -----------------------------------------------------------------------

    def names(self) -> list[str]:
        return list(self.table[1]) if self.table is not None else []

    def weight(self, ws) -> str | None:
        return shown_weight(ws, self.names() or None) if self.table is not None else None

    def large(self, ws) -> bool:
        """The weight shown has more rows or columns than a screen: drawn through a row window."""
        from ..coefficients.window import Window, needed

        name = self.weight(ws)
        shape = weight_shapes(self.table[0]).get(name) if name is not None else None
        return shape is not None and needed(shape, Window())

    def window(self, ws):
        """The rows drawn of the weight shown (engine.coefficients.window.Window), None when drawn whole."""
        from ..coefficients.window import MAX_SHOWN, Window

        if self.table is None or not self.large(ws):
            return None
        if self.rows == "tokens":  # encoded where the run's tokenizer is: the analysis process
            return Window(text=self.rows_text) if self.rows_text else Window()
        if self.rows == "from":
            last = weight_shapes(self.table[0])[self.weight(ws)][0] - 1
            start = min(max(0, self.rows_start), last)
            return Window(tuple(range(start, min(start + MAX_SHOWN, last + 1))))
        return Window()

    def record(self, ws):
        """The record drawn at the step shown (None while it is computed)."""
        weight, step = self.weight(ws), shown_step(ws)
        return None if weight is None or step is None else self.records.peek(weight, step, self.window(ws))

    def failure(self, ws) -> str | None:
        """Why the step shown cannot be drawn (the one line its question failed with), if it cannot."""
        weight, step, window = self.weight(ws), shown_step(ws), self.window(ws)
        return next((m for question, m in self.failures.items() if isinstance(question, q.CoefficientAt)
                     and question.full and (question.weight, question.step, question.window) == (weight, step, window)),
                    None)

    def formula_question(self, ws):
        weight = self.weight(ws)
        return None if weight is None else q.CoefficientFormula(self.table[0], weight, self.kind, self.part)

    # ---- what it needs -----------------------------------------------------------------------

    def needs(self, ws) -> list:
        path = run_path(ws)
        if path is None:
            return []
        if self.table is None:
            return [q.CoefficientTable(path)]
        weight, step, window = self.weight(ws), shown_step(ws), self.window(ws)
        if weight is None:
            return []
        steps = ws.open_run.saved_steps()
        out = []
        if step is not None:
            shown = self.records.peek(weight, step, window)
            if shown is None:
                out.append(q.CoefficientAt(path, weight, step, True, False, window))
            elif shown.pending:
                out.append(q.CoefficientAt(path, weight, step, True, True, window))
            elif not shown.terms and shown.term_count and (weight, step) not in self.largest:
                out.append(q.LargestTerms(path, step, weight))
        formula = self.formula_question(ws)
        if formula not in self.formulas:
            out.append(formula)
        summaries, geometry = self.records.summaries(weight), self.records.geometry(weight)
        first = steps[0] if steps else None  # the first saved step has no update reaching it
        out += [q.CoefficientAt(path, weight, s, False) for s in steps
                if s != step and (s not in summaries or (s != first and s not in geometry))]
        out += [q.CoefficientAt(path, weight, s, False, True) for s in steps
                if s != step and s in summaries and summaries[s].pending]
        return out

    # ---- answers -----------------------------------------------------------------------------

    def take(self, question, answer) -> None:
        if isinstance(question, q.CoefficientTable):
            self.table = answer
        elif isinstance(question, q.CoefficientAt):
            self.records.keep(question.weight, question.step, answer, question.window if question.full else None)
        elif isinstance(question, q.CoefficientFormula):
            self.formulas = {**self.formulas, question: answer}
        elif isinstance(question, q.LargestTerms):
            self.largest = {**self.largest, (question.weight, question.step): answer}
        self.answered += 1

    def forget(self) -> None:
        self.update(table=None, records=ShownRecords(), formulas={}, largest={}, part=None, kind="total")
        super().forget()
