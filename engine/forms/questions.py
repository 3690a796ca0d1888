"""What the Forms pane asks of the symbolic process, as frozen question objects, and their plain answers
(docs/design.md#processes-threads-and-caches): derive a source, list a weight's terms from a position, one
term's formulas, a walkthrough's stage sheets, a console line (which Stop cancels), and the sheet an export
writes. Each names its source, so the process can derive it again if it had to start afresh; the answers are
rows of strings and numbers, so the pane keeps no symbolic object and the GUI process's interpreter does none
of the work.

`answer(desk, job)` runs in the symbolic process (engine/service_process.py), on the question's `lane`: the
console has a lane of its own, so a long line never holds up the Terms tab. A term's value at a step is not
asked here: it needs torch, the run's weights and its probe batch, which the analysis process already holds
(engine/analysis/questions.py's TermValuesAt and LiveTermValues); this process stays free of torch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..errors import UserError
from . import printing
from . import snapshot_export as se
from .console import Output
from .derive import Forms, Term
from .desk import Desk
from .mixed import notes_question
from .source import Source
from .walkthrough import stage_sheets

A = TypeVar("A")
BATCH = 250   # terms per part of a listing: the first rows show at once, the rest follow


class FormsQuestion(Generic[A]):
    lane = "pane"

    def answer(self, desk: Desk, job) -> A:
        raise NotImplementedError


@dataclass(frozen=True)
class TermRow:
    """One row of the Terms tab: what the table shows, and what the pane asks about the term afterwards."""

    index: int         # position in Leibniz order among all terms of the form
    id: str
    weight: str
    route_class: str
    op_count: int
    operators: str     # "4 operators"

    @classmethod
    def of(cls, term: Term) -> TermRow:
        return cls(term.index, term.id, term.weight, term.route_class, term.op_count, term.operators)


@dataclass(frozen=True)
class Derived:
    title: str                    # the network's, e.g. "encoder(3, residual)"
    counts: dict[str, int]        # terms per weight, in model order
    seconds: float                # how long the derivation took (0 when it was kept from before)
    depth: int | None             # the chain's depth; None for a model
    question: tuple[str, str]     # (B, A) of the note's question on this network: the walkthrough names them


@dataclass(frozen=True)
class Derive(FormsQuestion[Derived]):
    source: Source

    def answer(self, desk, job):
        t0 = time.perf_counter()
        forms = desk.forms(self.source)
        counts = forms.counts()
        return Derived(forms.net.title, counts, time.perf_counter() - t0, getattr(forms.net.spec, "depth", None),
                       notes_question(forms.net))


@dataclass(frozen=True)
class Listed:
    listed: int      # terms of the weight listed so far (start + the rows sent)
    complete: bool   # every term of the weight is listed


@dataclass(frozen=True)
class ListTerms(FormsQuestion[Listed]):
    """Terms `start` … `stop` − 1 of `weight`, sent as parts of BATCH rows; cancelling keeps what was sent."""

    source: Source
    weight: str
    start: int
    stop: int

    def answer(self, desk, job):
        terms = desk.terms_from(self.source, self.weight, self.start)
        n, batch = self.start, []
        while n < self.stop and not job.stopped:
            term = next(terms, None)
            if term is None:
                break
            batch.append(TermRow.of(term))
            n += 1
            if len(batch) == BATCH:
                job.emit(batch)
                batch = []
        job.emit(batch)
        complete = n >= desk.forms(self.source).count(self.weight)
        if not complete:
            desk.keep_listing(self.source, self.weight, terms, n)
        return Listed(n, complete)


@dataclass(frozen=True)
class TermFormulas:
    row: TermRow
    total: int                 # terms of the whole form
    word: tuple[str, str]      # the term as the expansion writes it: (LaTeX, text)
    G: tuple[str, str]         # its coefficient, "G = …": (LaTeX, text)


@dataclass(frozen=True)
class TermDetail(FormsQuestion[TermFormulas]):
    source: Source
    term_id: str

    def answer(self, desk, job):
        forms = desk.forms(self.source)
        term = _term(forms, self.term_id)
        word = forms.term_word(term)
        return TermFormulas(TermRow.of(term), forms.count(), (printing.latex(word), printing.text(word)),
                            ("G = " + printing.latex(term.G), "G = " + printing.text(term.G)))


@dataclass(frozen=True)
class Stages:
    sheets: tuple[tuple[str, se.Sheet], ...]   # (stage name, its formulas)
    note: str                                  # why the walk stops early, or where the note asks its question
    term: TermRow | None                       # the term followed; None: the whole form or the question
    question: bool


@dataclass(frozen=True)
class Walkthrough(FormsQuestion[Stages]):
    """The stages of the whole form (term_id None, one_term False), of one term (the first when term_id is
    None), or of the note's question."""

    source: Source
    term_id: str | None = None
    one_term: bool = False
    question: bool = False

    def answer(self, desk, job):
        forms = desk.forms(self.source)
        term = None
        if self.one_term and not self.question:
            term = forms.term_at(0) if self.term_id is None else _term(forms, self.term_id)
        sheets, note = stage_sheets(forms, term, self.question)
        return Stages(tuple(sheets), note, None if term is None else TermRow.of(term), self.question)


@dataclass(frozen=True)
class ConsoleLine(FormsQuestion[list[Output]]):
    """A line of the note's command language, `net` being the source's network; Stop cancels it."""

    source: Source
    line: str
    lane = "console"

    def answer(self, desk, job):
        return desk.console_for(self.source).run(self.line, lambda: job.stopped)


@dataclass(frozen=True)
class SheetOf(FormsQuestion[se.Sheet]):
    """The sheet an export writes: `what` is "term" (term_id), "weight" (weight) or "form"."""

    source: Source
    what: str
    term_id: str | None = None
    weight: str | None = None

    def answer(self, desk, job):
        return sheet_of(self.source, self.what, self.term_id, self.weight, desk.forms(self.source))


def sheet_of(source: Source, what: str, term_id: str | None = None, weight: str | None = None,
             forms: Forms | None = None) -> se.Sheet:
    """The sheet of a term, a weight's coefficient or the whole form, derived again when `forms` is not
    given (as an export process does: a derivation costs milliseconds, its terms are listed as needed)."""
    forms = source.derive() if forms is None else forms
    if what == "term":
        return se.term_sheet(forms, _term(forms, term_id))
    if what == "weight":
        return se.weight_sheet(forms, weight)
    if what == "form":
        return se.form_sheet(forms)
    raise ValueError(f"no sheet {what!r}")


def export_sheet_of(path, source: Source, what: str, term_id: str | None = None, weight: str | None = None):
    """Write the sheet of `what` to path (an export's call: the export process derives the source itself)."""
    return se.export_sheet(path, sheet_of(source, what, term_id, weight))


def _term(forms, term_id: str) -> Term:
    try:
        return forms.term(term_id)
    except KeyError as e:
        raise UserError(str(e).strip("'\"")) from None
