"""Opening a run whose tokenizer file is large (a BPE's) checks it in a child process first and shows it when
that answers: the app's interpreter never parses the tokenizer (GPT-2's took ~3 s of it), the panes still show
the run's attention (read in the analysis process), and a run that cannot be used is refused in one line."""

from __future__ import annotations

import dataclasses
import os

import pytest
from PySide6.QtCore import Qt

from engine.rundir.runs import TOKENIZER
from engine.training.trainer import Trainer
from gui import controller as controller_module

from .conftest import QT_NOISE, tiny_config
from .test_open_run_sequence import see

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]
WAIT = 60_000


@pytest.fixture
def bpe_run(tmp_path, corpus_file):
    cfg = tiny_config(corpus_file, steps=4, checkpoint_every=4, snapshot_every=2)
    cfg = cfg.replace(data=dataclasses.replace(cfg.data, tokenizer="bpe", max_vocab=300))
    list(Trainer(cfg, tmp_path / "bpe").steps())
    return tmp_path / "bpe"


@pytest.fixture
def apart(monkeypatch):
    """Every tokenizer file counts as large; parsing one in this process fails the test."""
    from engine.text import tokenizer

    def not_here(*_args, **_kwargs):
        raise AssertionError("a tokenizer was parsed in the app's process")

    monkeypatch.setattr(controller_module, "CHECK_APART_BYTES", 0)
    monkeypatch.setattr(tokenizer, "tokenizer_from_dict", not_here)


def test_a_large_tokenizers_run_is_checked_in_a_child_and_then_shown(qtbot, make_window, bpe_run, apart):
    w = make_window()
    with qtbot.waitSignal(w.controller.sig_run_shown, timeout=WAIT):
        assert w.open_run(bpe_run)
        opening = w.controller._opening
        assert opening is not None and opening.job.pid != os.getpid()
    assert w.session.run.path == bpe_run and w.session.training_state == "finished"
    see(qtbot, w, "pane_heatmaps")
    heatmaps = w.panes["pane_heatmaps"]
    qtbot.waitUntil(lambda: heatmaps.view.shown(w.session.workspace) is not None, timeout=WAIT)
    assert heatmaps.view.shown(w.session.workspace)[1].maps.weights.shape[:2] == (1, 2)
    # Generate's text and its next-token bars: the tokens are counted in the analysis process, and a click in the
    # text finds its token in the answer's tokens (the app holds no tokenizer of this run)
    from tests.gui.panes.training.test_training import generate_tab

    p = generate_tab(w)
    qtbot.waitUntil(p.generate.isEnabled, timeout=WAIT)
    p.prompt.setText("the ")
    p.length.setValue(6)
    qtbot.mouseClick(p.generate, Qt.MouseButton.LeftButton)
    view = p.next_tokens.view
    qtbot.waitUntil(lambda: view.result is not None and view.text == p.output.toPlainText(), timeout=WAIT)
    assert view.result.position == len(view.result.tokens) - 1 and w.session.tokenizer is None
    first = view.result.tokens[0]
    cursor = p.output.textCursor()
    cursor.setPosition(len(first))  # right after the first token: the bars follow it
    p.output.setTextCursor(cursor)
    qtbot.waitUntil(lambda: view.result.position == 0, timeout=WAIT)


def test_a_run_that_cannot_be_used_is_refused_in_one_line(qtbot, make_window, bpe_run, apart):
    (bpe_run / TOKENIZER).write_text("{not json", encoding="utf-8")
    w = make_window()
    w.open_run(bpe_run)
    qtbot.waitUntil(lambda: w.controller._opening is None, timeout=WAIT)
    assert w.session.run is None and "Cannot open the run bpe" in w.banner.text
    assert "tokenizer.json is missing or corrupt" in w.banner.text and "Traceback" not in w.banner.text


def test_a_new_bpe_runs_folder_is_attached_without_reading_its_tokenizer_on_the_gui_thread(qtbot, make_window,
                                                                                           corpus_file, monkeypatch,
                                                                                           children_in_thread):
    """The trainer makes the folder with the tokenizer it hands to the window, which reads no file of it again.
    The builder's corpus inspection and Train's corpus preparation run on threads (children_in_thread): their
    processes are test_training's point, not this test's (~1.8 s of CPU each)."""
    import threading

    from engine.rundir import runs

    from .panes.training.test_training import click, wait_state

    real = runs.read_tokenizer

    def off_the_gui_thread(*args, **kwargs):
        assert threading.current_thread() is not threading.main_thread(), "a tokenizer file read on the GUI thread"
        return real(*args, **kwargs)

    monkeypatch.setattr(runs, "read_tokenizer", off_the_gui_thread)
    cfg = tiny_config(corpus_file, steps=4, checkpoint_every=4, snapshot_every=2)
    w = make_window(cfg.replace(data=dataclasses.replace(cfg.data, tokenizer="bpe", max_vocab=300)))
    click(qtbot, w, "train")
    wait_state(qtbot, w, "finished")
    assert w.session.run.path is not None and w.session.tokenizer is not None


def test_the_check_under_way_is_said_in_the_status_bar_and_a_later_choice_wins(qtbot, make_window, bpe_run,
                                                                               tmp_path, monkeypatch):
    """While a large tokenizer's run is checked, the status bar says so and the banner's row stays hidden (its
    showing and fading resized every pane: 35-40 ms of the GUI thread each, twice per open or fork of a GPT-2
    run). A run opened before that check answers is the one shown: the check is ended, and its run never shown."""
    from tests.engine.cli.test_export_cli import tiny_run

    other = tiny_run(tmp_path / "other").path
    w = make_window()
    w.show()
    monkeypatch.setattr(controller_module, "CHECK_APART_BYTES", 0)
    assert w.open_run(bpe_run)
    first = w.controller._opening
    assert first is not None and "reading its tokenizer" in w.statusBar().currentMessage()
    assert not w.message_row.isVisible()
    monkeypatch.setattr(controller_module, "CHECK_APART_BYTES", 1 << 40)  # the next run opens at once
    assert w.open_run(other)
    assert first.job.finished and not first._timer.isActive()  # ended: it reports nothing more
    assert w.controller._opening is None and w.statusBar().currentMessage() == ""
    assert w.session.run.path == other
