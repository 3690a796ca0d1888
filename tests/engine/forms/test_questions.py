"""The Forms pane's questions (engine/forms/questions.py), answered by a desk as the symbolic process answers
them: the same counts, terms, formulas, stages and console outputs as the engine's own functions, in plain
rows, and a listing that goes on from where it stopped."""

from __future__ import annotations

import queue

from engine.configs.presets import load_preset
from engine.forms import Console, Forms, encoder, latex, text
from engine.forms import questions as fq
from engine.forms import snapshot_export as se
from engine.forms.desk import Desk
from engine.forms.source import Source, SourceChoice
from engine.service_process import ServiceProcess

CHAIN = Source(SourceChoice(depth=3, residual=True, heads=2))


class Job:
    def __init__(self, stop_after_parts: int | None = None):
        self.parts: list = []
        self._stop_after = stop_after_parts

    @property
    def stopped(self) -> bool:
        return self._stop_after is not None and len(self.parts) >= self._stop_after

    def emit(self, part) -> None:
        self.parts.append(part)


def ask(desk, question, job=None):
    return question.answer(desk, job or Job())


def test_derive_counts_as_the_engine_does():
    derived = ask(Desk(), fq.Derive(CHAIN))
    forms = Forms(encoder(3, residual=True, heads=2))
    assert derived.counts == forms.counts() and derived.title == forms.net.title and derived.depth == 3
    model = Source.of(SourceChoice(kind="model"), load_preset("tiny").model)
    assert sum(ask(Desk(), fq.Derive(model)).counts.values()) == 3002


def test_a_listing_in_loads_goes_on_from_where_it_stopped_and_equals_the_engines():
    desk, forms = Desk(), Forms(encoder(3, residual=True, heads=2))
    weight = max(forms.counts(), key=forms.counts().get)
    want = [fq.TermRow.of(t) for t in forms.terms(weight)]
    rows, start = [], 0
    while True:
        job = Job()
        listed = ask(desk, fq.ListTerms(CHAIN, weight, start, start + 7), job)
        rows += [r for part in job.parts for r in part]
        start = listed.listed
        if listed.complete:
            break
    assert rows == want and start == len(want)


def test_a_cancelled_listing_keeps_what_it_sent():
    desk, deep = Desk(), Source(SourceChoice(depth=6, residual=True, heads=2))
    counts = ask(desk, fq.Derive(deep)).counts
    weight = max(counts, key=counts.get)  # thousands of terms
    job = Job(stop_after_parts=1)
    listed = ask(desk, fq.ListTerms(deep, weight, 0, 5000), job)
    assert not listed.complete and listed.listed == sum(map(len, job.parts)) == fq.BATCH


def test_a_terms_formulas_and_its_walkthrough_are_the_engines():
    forms = Forms(encoder(3, residual=True, heads=2))
    term = forms.terms("K_{0,1}")[2]
    got = ask(Desk(), fq.TermDetail(CHAIN, term.id))
    word = forms.term_word(term)
    assert got.row == fq.TermRow.of(term) and got.total == forms.count()
    assert got.word == (latex(word), text(word)) and got.G == ("G = " + latex(term.G), "G = " + text(term.G))
    stages = ask(Desk(), fq.Walkthrough(CHAIN, term.id, one_term=True))
    assert stages.term == fq.TermRow.of(term)
    assert [name for name, _ in stages.sheets] == ["encoder"] + [name for name, _ in forms.stages(term)]
    assert stages.sheets[-1][1] == se.stage_sheet(forms, "finish", forms.stages(term)[-1][1], term)


def test_a_console_line_sees_the_sources_network_and_keeps_its_variables():
    desk = Desk()
    (out,) = ask(desk, fq.ConsoleLine(CHAIN, "log(count(net))"))
    assert int(out.content) == Forms(encoder(3, residual=True, heads=2)).count()
    ask(desk, fq.ConsoleLine(CHAIN, "z = forms(2)"))
    assert ask(desk, fq.ConsoleLine(CHAIN, "log(z.length)")) == Console().run("log(forms(2).length)")


def test_an_export_sheet_is_derived_again_from_the_source_alone():
    forms = Forms(encoder(3, residual=True, heads=2))
    term = forms.term_at(5)
    assert fq.sheet_of(CHAIN, "term", term.id) == se.term_sheet(forms, term)
    assert fq.sheet_of(CHAIN, "weight", weight="W_1") == se.weight_sheet(forms, "W_1")


def test_the_forms_process_answers_without_torch():
    from tests.engine.service_questions import WhereAmI

    service = ServiceProcess(Desk, name="forms")
    got: queue.Queue = queue.Queue()
    try:
        for question in (fq.Derive(CHAIN), fq.ListTerms(CHAIN, "W_0", 0, 100), fq.ConsoleLine(CHAIN, "forms(3)"),
                         fq.Walkthrough(CHAIN, question=True), WhereAmI()):
            number = service.ask(question, lambda n, kind, payload: kind != "part" and got.put((kind, payload)))
            kind, payload = got.get(timeout=120)
            assert kind == "done", payload
        assert payload[1] == []  # neither torch nor Qt loaded in the process, after all of that
    finally:
        service.close()
