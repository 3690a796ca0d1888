"""A weight wider than the screen (a 5,000-token vocabulary, as GPT-2's W_E has 50,257 rows) is drawn through
a row window, and a large model's G shows before its split, which then replaces it."""

from __future__ import annotations


import numpy as np
import pytest

from engine.rundir.runs import Run
from gui.panes.weight import WeightPane
from gui.session import Session

from ....engine.coefficients.wide import wide_run
from ...conftest import QT_NOISE

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]
WAIT = 120_000


@pytest.fixture(scope="module")
def run_path(tmp_path_factory):
    return wide_run(tmp_path_factory.mktemp("wide") / "run").path


def opened(qtbot, run_path, weight: str):
    """The pane with the run open as the app opens a run of a large tokenizer (gui/controller.py): checked in
    another process, its tokenizer not read in this one."""
    from engine.workspace.open_run import OpenRun

    session = Session()
    pane = WeightPane(session)
    qtbot.addWidget(pane)
    pane.resize(1400, 900)
    pane.show()
    qtbot.waitExposed(pane)
    run = Run(run_path, checked=True)
    session.replace_run(OpenRun(run.config, run.tokenizer_if_read, run), config=run.config)
    assert session.tokenizer is None
    qtbot.waitUntil(lambda: pane.view.table is not None, timeout=WAIT)
    session.select_weight(weight)
    qtbot.waitUntil(lambda: pane.record() is not None, timeout=WAIT)
    return session, pane


def test_w_e_is_drawn_pooled_then_as_the_rows_of_a_texts_tokens(qtbot, run_path):
    session, pane = opened(qtbot, run_path, "W_E")
    assert pane.rows_row.isVisible() and pane.rows_box.currentIndex() == 0
    assert pane.G_map.matrix().shape == (1024, 64) and pane.W_map.matrix().shape == (1024, 64)
    assert pane.G_map.labels()[0][:2] == ["0–4", "5–9"] and "5,000 rows in 1024 bands" in pane.rows_note.text()
    tok = Run(run_path).tokenizer
    ids = list(dict.fromkeys(tok.encode(" the king")))
    pane.rows_box.setCurrentIndex(1)
    pane.rows_text.setText(" the king")
    pane.rows_text.editingFinished.emit()
    qtbot.waitUntil(lambda: pane.record() is not None, timeout=WAIT)  # the text's rows, found where the tokenizer is
    assert pane.G_map.matrix().shape == (len(ids), 64)  # they were every row pooled: no tokenizer here
    assert pane.G_map.labels()[0] == [f"{i} {tok.token_strings([i])[0]}" for i in ids]
    assert pane.rows_note.text() == f"{len(ids)} chosen rows of 5,000, 64 columns"
    assert not pane.G_map.plot_item.vb.state["aspectLocked"]  # a few rows fill the map, not a thin strip
    pane.rows_box.setCurrentIndex(2)
    pane.rows_start.setValue(4500)
    qtbot.waitUntil(lambda: pane.record() is not None and pane.G_map.matrix().shape == (500, 64), timeout=WAIT)
    assert pane.G_map.labels()[0][0] == "4500 " + tok.token_strings([4500])[0]
    session.select_weight("blocks.0.W_Q")  # 64 × 64: drawn whole, no row window
    # drawn, not only held: the run opened on this weight, so its record is held already and is drawn at the
    # pane's next frame (the map still showed W_E's rows when the test looked at once)
    qtbot.waitUntil(lambda: pane.record() is not None and pane.record().weight == "blocks.0.W_Q"
                    and pane.page.drawn is pane.record(), timeout=WAIT)
    assert not pane.rows_row.isVisible() and pane.G_map.matrix().shape == (64, 64)
    assert pane.G_map.plot_item.vb.state["aspectLocked"]  # square cells again


def test_a_large_models_g_shows_first_and_its_split_follows(qtbot, run_path, monkeypatch):
    """With the analysis answered on a thread of this process (so the model counts as large here), the pane
    shows autograd's G with a badge saying the split is coming, then the split with its agreement."""
    import engine.coefficients as co
    from engine.analysis import door
    from gui import analysis

    monkeypatch.setattr(co, "PROGRESSIVE_FLOPS", 0.0)
    here = analysis.in_this_process()
    monkeypatch.setattr(analysis, "process", lambda: here)
    door.reset()
    seen = []
    try:
        session = Session()
        pane = WeightPane(session)
        qtbot.addWidget(pane)
        pane.resize(1400, 900)
        pane.show()

        def note(field: str) -> None:  # each record of blocks.1.W_Q at the step shown: pending, then split
            rec = pane.record()
            if field == "answered" and rec is not None and rec.weight == "blocks.1.W_Q" \
                    and (not seen or seen[-1] != rec.pending):
                seen.append(rec.pending)

        pane.view.changed.connect(note)
        session.set_run(Run(run_path))
        qtbot.waitUntil(lambda: pane.view.table is not None, timeout=WAIT)
        session.select_weight("blocks.1.W_Q")
        qtbot.waitUntil(lambda: pane.record() is not None and not pane.record().pending, timeout=WAIT)
        assert seen[:2] == [True, False]
        assert "Σ classes vs autograd" in pane.badge.text() and pane.parts.groups["class"].childCount() > 1
    finally:
        here.close()
        door.reset()
