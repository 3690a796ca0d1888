"""The Forms pane: the source it derives, the term browser (weights with counts, terms, one term's formula
and G, its numbers on an open run), the app-wide weight selection and the walkthrough's stages."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt

from engine.forms import Forms, Snapshot, encoder, latex
from engine.forms.source import Source, SourceChoice
from gui.panes.forms import FormsPane
from gui.session import Session


def make(qtbot, session=None):
    session = session or Session()
    pane = FormsPane(session)
    qtbot.addWidget(pane)
    pane.resize(1300, 900)
    pane.show()
    qtbot.waitExposed(pane)
    qtbot.waitUntil(lambda: pane.derived is not None, timeout=20000)
    return session, pane


def choose_weight(qtbot, pane, name):
    items = pane.terms.weights.findItems(name, Qt.MatchFlag.MatchExactly, 0)
    assert items, name
    pane.terms.weights.setCurrentItem(items[0])
    n = pane.counts[name]
    qtbot.waitUntil(lambda: len(pane.terms.table.terms) == min(n, 5000), timeout=20000)


def test_the_chain_lists_weights_with_their_counts(qtbot):
    _, pane = make(qtbot)
    assert "24 terms over 12 weights" in pane.status.text()
    tree = pane.terms.weights
    rows = {tree.topLevelItem(i).text(0): tree.topLevelItem(i).text(1) for i in range(tree.topLevelItemCount())}
    assert rows == {w: str(n) for w, n in Forms(encoder(2)).counts().items()}
    assert rows["K_0"] == "3" and rows["K_1"] == "1"


def test_selecting_a_term_shows_its_formula_and_its_G(qtbot):
    _, pane = make(qtbot)
    choose_weight(qtbot, pane, "K_0")
    assert [t.id for t in pane.terms.table.terms] == ["K_0 via X_1@Z_1#0", "K_0 via X_1@Z_1#1", "K_0 via X_1@U_1#0"]
    pane.terms.list.setCurrentIndex(pane.terms.table.index(1, 1))
    detail = pane.terms.detail
    term = Forms(encoder(2)).term("K_0 via X_1@Z_1#1")
    assert detail.title.text() == term.id
    assert "route class L1.k" in detail.meta.text() and "4 operators" in detail.meta.text()
    qtbot.waitUntil(lambda: detail.G.tex == "G = " + latex(term.G), timeout=20000)
    assert r"\mathrm{d}K_{0}" in detail.word.tex
    qtbot.waitUntil(lambda: detail.G.rendered and detail.word.rendered, timeout=30000)
    assert detail.G.pixmap().height() > 10
    assert "no run" in detail.values_note.text()


def test_a_weight_with_more_terms_than_a_load_lists_the_first_and_offers_more(qtbot, monkeypatch):
    from gui.panes.forms import terms as forms_terms

    monkeypatch.setattr(forms_terms, "LOAD_CAP", 40)
    _, pane = make(qtbot)
    pane.source.depth.setValue(5)
    qtbot.waitUntil(lambda: pane.derived is not None and sum(pane.counts.values()) == 726, timeout=20000)
    pane.terms.select_weight("Q_0")  # 81 terms
    qtbot.waitUntil(lambda: not pane.terms.loader.running and len(pane.terms.table.terms) == 40, timeout=20000)
    assert "first 40 of 81" in pane.terms.list_status.text()
    assert pane.terms.more_button.isVisibleTo(pane)
    pane.terms.more_button.click()
    qtbot.waitUntil(lambda: len(pane.terms.table.terms) == 80 and not pane.terms.loader.running, timeout=20000)
    pane.terms.more_button.click()
    qtbot.waitUntil(lambda: pane.terms.list_status.text() == "81 terms of Q_0.", timeout=20000)
    assert [t.id for t in pane.terms.table.terms] == [t.id for t in Forms(encoder(5)).terms("Q_0")]


def test_chain_options_change_the_derivation(qtbot):
    _, pane = make(qtbot)
    pane.source.set_choice(SourceChoice(depth=3, residual=True))
    qtbot.waitUntil(lambda: pane.derived is not None and sum(pane.counts.values()) == 126, timeout=20000)
    assert pane.derived.title == "encoder(3, residual)"


def model_session(tmp_path):
    from tests.engine.cli.test_export_cli import tiny_run

    run = tiny_run(tmp_path / "run")
    return Session(run.config), run


def test_selecting_a_weight_selects_it_app_wide_and_follows_the_app(qtbot, tmp_path):
    session, run = model_session(tmp_path)
    _, pane = make(qtbot, session)
    pane.source.kind.setCurrentIndex(1)
    qtbot.waitUntil(lambda: pane.derived is not None and "blocks.0.W_Q" in pane.counts, timeout=20000)
    item = pane.terms.weights.findItems("blocks.0.W_K", Qt.MatchFlag.MatchExactly, 0)[0]
    with qtbot.waitSignal(session.sig_weight_selected, timeout=5000) as got:
        pane.terms.weights.setCurrentItem(item)
    assert got.args == ["blocks.0.W_K"] and session.selected_weight == "blocks.0.W_K"
    session.select_weight("b_U")
    assert pane.terms.weight == "b_U"
    assert pane.terms.weights.currentItem().text(0) == "b_U"
    # the weight listed is the workspace's selection, however it was chosen (the Weight pane's interaction map
    # selects without a click's signal): the pane kept a copy, set only by that signal, which stayed on b_U
    session.workspace.select(weight="blocks.0.W_V")
    assert pane.terms.weight == "blocks.0.W_V"
    # the note's chain lists its own weights; the model's form derived again lists the weight selected meanwhile
    pane.source.kind.setCurrentIndex(0)
    qtbot.waitUntil(lambda: pane.derived is not None and "K_0" in pane.counts, timeout=20000)
    session.workspace.select(weight="blocks.0.W_Q")
    assert pane.terms.weight in pane.counts
    pane.source.kind.setCurrentIndex(1)
    qtbot.waitUntil(lambda: pane.derived is not None and "b_U" in pane.counts, timeout=20000)
    assert pane.terms.weight == "blocks.0.W_Q"


def test_a_terms_value_on_an_open_run_is_its_coefficient_at_that_step(qtbot, tmp_path):
    session, run = model_session(tmp_path)
    _, pane = make(qtbot, session)
    pane.source.kind.setCurrentIndex(1)
    qtbot.waitUntil(lambda: pane.derived is not None and "b_U" in pane.counts, timeout=20000)
    session.set_run(run)
    weight = "blocks.0.W_V"
    choose_weight(qtbot, pane, weight)
    first = pane.terms.table.terms[0].id
    # the pane showed its first weight's first term when it derived: wait for this term's answer
    pane.terms.list.setCurrentIndex(pane.terms.table.index(1, 1))
    pane.terms.list.setCurrentIndex(pane.terms.table.index(0, 1))
    qtbot.waitUntil(lambda: pane.values.values is not None and pane.values.values.term_id == first, timeout=30000)
    values = pane.values.values
    term = pane.terms.term
    step = run.latest_step()
    probe = run.probe()
    snap = Snapshot(run.config.model, run.load_weights(step), probe.x, probe.y)
    want = snap.term(term.id).double().numpy()
    total = snap.total(weight)[weight].double().numpy()
    assert values.step == step and values.term_id == term.id
    np.testing.assert_allclose(values.matrix, want, rtol=1e-6, atol=1e-9)
    assert values.share == pytest.approx(float((want * total).sum() / (total * total).sum()), rel=1e-6)
    shares = sum(float((snap.term(t.id).double().numpy() * total).sum()) for t in pane.terms.table.terms)
    assert shares / float((total * total).sum()) == pytest.approx(1.0, abs=1e-6)  # the shares add up
    detail = pane.terms.detail
    assert detail.values.isVisibleTo(pane) and f"step {step}" in detail.numbers.text()
    np.testing.assert_allclose(detail.heatmap.matrix(), want, rtol=1e-6, atol=1e-9)


def test_the_walkthrough_steps_through_the_notes_stages(qtbot):
    _, pane = make(qtbot)
    walk = pane.walkthrough
    pane.tabs.setCurrentWidget(walk)
    qtbot.waitUntil(lambda: walk.stages.count() == 6, timeout=20000)
    names = [walk.stages.item(i).text() for i in range(walk.stages.count())]
    assert names == ["encoder(2)", "form", "expandAll", "expandmm", "shiftmm", "cycle"]
    assert len(walk.rows.rows) == 12  # five definitions per layer, the error and the form
    for _ in range(3):
        walk.next_button.click()
    assert walk.stages.currentRow() == 3 and len(walk.rows.rows) == 24
    assert not walk.prev_button.isHidden() and walk.prev_button.isEnabled()
    choose_weight(qtbot, pane, "K_0")
    pane.terms.list.setCurrentIndex(pane.terms.table.index(1, 1))
    walk.scope.setCurrentIndex(1)
    qtbot.waitUntil(lambda: walk.shown_term is not None and walk.shown_term.id == "K_0 via X_1@Z_1#1",
                    timeout=20000)
    names = [walk.stages.item(i).text() for i in range(walk.stages.count())]
    assert names[:4] == ["encoder(2)", "form", "expandAll", "expandmm"] and names[-1] == "finish"
    assert sum(n.startswith("shift") for n in names) == 4  # one shift per operator on the path
    walk.stages.setCurrentRow(walk.stages.count() - 1)
    assert walk.rows.rows[0][1] == latex(Forms(encoder(2)).term(walk.shown_term.id).G)


def test_the_walkthrough_follows_the_notes_question_on_the_chain_of_six_layers(qtbot):
    from engine.forms.mixed import MixedForm

    _, pane = make(qtbot)
    walk = pane.walkthrough
    pane.tabs.setCurrentWidget(walk)
    walk.scope.setCurrentIndex(2)  # the note's question, on the depth-2 chain first: it says where the note asks
    qtbot.waitUntil(lambda: walk.shown_question and walk.stages.count() == 6, timeout=20000)
    assert "depth 6" in walk.note.text() and walk.note.isVisibleTo(pane)
    pane.source.depth.setValue(6)
    qtbot.waitUntil(lambda: walk.shown_question and "encoder(6)" in walk.stages.item(0).text()
                    and walk.stages.count() == 6, timeout=20000)
    names = [walk.stages.item(i).text() for i in range(walk.stages.count())]
    assert names == ["encoder(6)", "seed", "differentiate", "expandmm", "pull back", "mixed terms"]
    assert not walk.note.isVisibleTo(pane)
    want = MixedForm(Source(SourceChoice(depth=6)).derive(), "K_5", "Q_3")
    walk.stages.setCurrentRow(5)
    assert len(walk.rows.rows) == want.count() == 24 and "K_5 by Q_3" in walk.about.text()
    assert walk.rows.rows[0][0] == want.terms[0].id and walk.rows.rows[0][1] == "M = " + latex(want.terms[0].G)
    walk.stages.setCurrentRow(3)
    assert len(walk.rows.rows) == 24 and "one summand" in walk.about.text()


def test_weight_names_keep_their_ends_so_w_q_w_k_and_w_v_differ(qtbot, tmp_path):
    session, run = model_session(tmp_path)
    _, pane = make(qtbot, session)
    pane.source.kind.setCurrentIndex(1)
    qtbot.waitUntil(lambda: pane.derived is not None and "blocks.0.W_Q" in pane.counts, timeout=20000)
    tree = pane.terms.weights
    fm = tree.fontMetrics()
    assert tree.textElideMode() == Qt.TextElideMode.ElideMiddle
    assert tree.minimumWidth() >= fm.horizontalAdvance("blocks.0.W_Q") + fm.horizontalAdvance("Terms")
    for name in ("blocks.0.W_Q", "blocks.0.W_K", "blocks.0.W_V"):
        item = tree.findItems(name, Qt.MatchFlag.MatchExactly, 0)[0]
        assert item.toolTip(0) == name
        shown = fm.elidedText(name, Qt.TextElideMode.ElideMiddle, max(40, tree.columnWidth(0) - 10))
        assert shown.endswith(name[-3:])


def test_deriving_listing_formulas_stages_and_console_lines_run_in_the_forms_process(qtbot, monkeypatch):
    """Nothing of the forms engine runs in the app's interpreter: with deriving, listing, the printers and the
    console made to fail here, the pane still shows all of them, answered by a process that is not this one."""
    import importlib
    import os

    from engine.forms.console import interpreter
    from engine.forms.source import Source as EngineSource
    from gui import symbolic_process

    def not_here(*_args, **_kwargs):
        raise AssertionError("forms work ran in the app's process")

    forms_derive = importlib.import_module("engine.forms.derive")  # the module: engine.forms.derive is a function
    for owner, name in ((EngineSource, "derive"), (forms_derive.Forms, "iter_terms"),
                        (forms_derive.Forms, "term_word"), (forms_derive.Forms, "stages"),
                        (interpreter.Console, "run")):
        monkeypatch.setattr(owner, name, not_here)
    _, pane = make(qtbot)
    pane.source.depth.setValue(3)
    qtbot.waitUntil(lambda: pane.derived is not None and pane.derived.depth == 3, timeout=20000)
    choose_weight(qtbot, pane, "K_0")
    pane.terms.list.setCurrentIndex(pane.terms.table.index(0, 1))
    qtbot.waitUntil(lambda: pane.terms.detail.G.tex.startswith("G = "), timeout=20000)
    pane.walkthrough.scope.setCurrentIndex(1)
    qtbot.waitUntil(lambda: pane.walkthrough.shown_term is not None, timeout=20000)
    with qtbot.waitSignal(pane.console.sig_ran, timeout=30000) as got:
        pane.console.run_line("log(count(net))")
    assert got.args[1][0].content == str(sum(pane.counts.values()))
    assert symbolic_process.service().pid not in (None, os.getpid())


def test_the_export_menu_offers_only_the_sheets_that_can_be_written(qtbot, monkeypatch):
    """Issue 40: "The whole form (paged)…" was offered, then refused past 2,500 terms. A sheet over the limit is
    shown disabled with its count; one within it stays offered."""
    from gui.panes.forms import pane as forms_pane

    monkeypatch.setattr(forms_pane, "SHEET_LIMIT", 20)  # the depth-2 chain's 24 terms are then too many
    _, pane = make(qtbot)
    choose_weight(qtbot, pane, "K_0")  # 3 terms
    menu = pane.export_button.menu()
    menu.aboutToShow.emit()
    actions = pane.export_actions
    assert not actions["form"].isEnabled() and "24 terms: more than 20" in actions["form"].text()
    assert actions["weight"].isEnabled() and actions["weight"].text() == "This weight's coefficient…"
    monkeypatch.setattr(forms_pane, "SHEET_LIMIT", 2)  # now K_0's 3 are too many as well
    menu.aboutToShow.emit()
    assert not actions["weight"].isEnabled() and "3 terms" in actions["weight"].text()
    monkeypatch.setattr(forms_pane, "SHEET_LIMIT", 2500)
    menu.aboutToShow.emit()
    assert actions["form"].isEnabled() and actions["form"].text() == "The whole form (paged)…"
