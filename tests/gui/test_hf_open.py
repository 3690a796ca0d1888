"""File → Open Hugging Face model…: a GPT-2 folder becomes the open run, which Train fine-tunes (on the
builder's corpus), and the Training pane shows its losses in bits per character."""

from __future__ import annotations

import dataclasses

import pytest
from PySide6.QtCore import Qt

from engine.rundir.runs import Run
from gui import run_menu, settings
from gui.widgets import dialogs
from tests.engine.importers.test_hugging_face import hf_model, pretrained, tokenizer  # noqa: F401  (fixtures)

from .conftest import QT_NOISE, imported

pytest.importorskip("transformers")
pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]
WAIT = 60_000  # ms: a shared machine


@pytest.fixture(scope="module")
def imported_once(pretrained, tmp_path_factory, small_text):  # noqa: F811
    """The run the import's process writes from `pretrained`, written once here by the same importer: the tests
    whose point is what follows an import open a copy of it, as the import's end does (ImportJob: open_run), and
    a process started for each import was most of their time (4 s each against 0.4 s here, at load 8). Its
    config names a short corpus file where the import names the bundled Shakespeare, as a user's choice in the
    builder would: a window that opens the run reads its corpus into the run's BPE, and all 38 plays were ~3 s of
    CPU in the first test to open it (the session's token cache answered the others), spent before that test
    chose its own corpus."""
    from engine.importers.hugging_face import import_hf

    top = tmp_path_factory.mktemp("hf-imported")
    run_dir, corpus = top / "hf-pretrained", top / "corpus.txt"
    import_hf(pretrained, run_dir)
    corpus.write_text(small_text[:5_000], encoding="utf-8")
    cfg = Run(run_dir).config
    assert cfg.data.corpus == "shakespeare"
    (run_dir / "config.toml").write_text(
        cfg.replace(data=dataclasses.replace(cfg.data, corpus=str(corpus))).to_toml(), encoding="utf-8")
    assert Run(run_dir).config.data.corpus == str(corpus)
    return run_dir


def open_imported(w, imported_once):
    """A copy of the imported run in the runs folder, opened in window `w` as an import's end opens it."""
    import shutil

    run_dir = settings.runs_root() / imported_once.name
    shutil.copytree(imported_once, run_dir)
    assert w.open_run(run_dir) and w.controller.run_dir == run_dir
    return run_dir


def test_an_imported_gpt2_run_fine_tunes_on_the_builders_corpus_in_bits_per_character(
        qtbot, make_window, imported_once, corpus_file, children_in_thread):
    """What an import opens (here a copy of imported_once's run; the File menu's import itself is the next
    test's) is a run that Train fine-tunes on the corpus the user picks, shown in bits per character. The
    corpus is inspected and made ready on threads (children_in_thread): the processes are not this test's point."""
    w = make_window()
    run_dir = open_imported(w, imported_once)
    assert Run(run_dir).config.model.attn_bias and Run(run_dir).checkpoint_steps() == [0]
    training = w.panes["pane_training"]
    assert training.stats["val_bpc"].text() == "—"
    cfg = w.session.config  # the user picks another corpus in the builder: the import fine-tunes on it
    w.session.set_config(cfg.replace(data=dataclasses.replace(cfg.data, corpus=str(corpus_file))))
    button = training.buttons["train"]
    assert button.isEnabled()
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: training.stats["val_bpc"].text() != "—", timeout=WAIT)
    assert float(training.stats["train_bpc"].text()) > 0
    assert w.controller.run_dir == run_dir  # fine-tuned in place, from the pretrained weights
    assert Run(run_dir).config.data.corpus == str(corpus_file)


def test_the_import_runs_off_the_gui_thread_with_its_stages_shown_and_cancel_leaves_nothing(
        qtbot, make_window, pretrained, monkeypatch, tmp_path):  # noqa: F811
    """File → Open Hugging Face model… on a GPT-2 folder opens the run it writes, an empty folder is refused in
    the banner. GPT-2 small's import froze the window for ~35 s: it runs in a child process while its dialog
    names the stage and the window keeps answering; Cancel ends it with nothing left in the runs folder. Issue
    40: after an import its child stayed a zombie for the app's lifetime, and the progress dialog's title was
    elided and its width jumped from stage to stage."""
    import os

    from engine.importers.hugging_face import STAGES
    from gui.run_menu import ImportJob

    w = make_window()
    monkeypatch.setattr(dialogs, "ask_path", lambda *a, **k: pretrained)
    w.actions["import_hf"].trigger()
    job = w.findChildren(ImportJob)[-1]
    dialog = job.dialog
    width = dialog.width()
    assert dialog.fontMetrics().horizontalAdvance(dialog.windowTitle()) + 100 < width
    pid = job.process._process.pid
    finished = []
    job.sig_finished.connect(finished.append)
    assert job.dialog.isVisible() and not job.process.finished and w.controller.run_dir is None
    seen_widths = set()
    qtbot.waitUntil(lambda: seen_widths.add(dialog.width()) or job.dialog.maximum() == len(STAGES),
                    timeout=WAIT)  # a stage came: polled
    assert any(f"Importing pretrained: {stage} (" in job.dialog.labelText() for stage in STAGES)
    qtbot.waitUntil(lambda: seen_widths.add(dialog.width()) or job.process.finished, timeout=WAIT)
    assert seen_widths == {width} and len(finished) == 1
    run_dir = finished[0]
    assert run_dir == w.controller.run_dir and not job.dialog.isVisible() and "Opened pretrained" in w.banner.text
    assert run_dir.parent == settings.runs_root() and Run(run_dir).checkpoint_steps() == [0]

    def state() -> str | None:  # the child's process state: None once the system has forgotten it
        try:
            with open(f"/proc/{pid}/status", encoding="utf-8") as f:
                return next(line.split()[1] for line in f if line.startswith("State:"))
        except FileNotFoundError:
            return None

    if os.path.isdir("/proc"):
        qtbot.waitUntil(lambda: state() is None, timeout=WAIT)  # reaped, not a zombie ("Z")
    again = run_menu.import_hf(w, pretrained)
    from PySide6.QtWidgets import QPushButton

    with qtbot.waitSignal(again.sig_finished, timeout=WAIT) as done:  # at once, while its process starts
        qtbot.mouseClick(again.dialog.findChild(QPushButton), Qt.MouseButton.LeftButton)
    assert done.args[0] is None and again.process.finished and not again.dialog.isVisible()
    assert "Import of pretrained cancelled; nothing was written." in w.banner.text
    assert sorted(settings.runs_root().iterdir()) == [run_dir]  # the first run alone: no .tmp- leftover
    (tmp_path / "empty").mkdir()
    assert imported(qtbot, run_menu.import_hf(w, tmp_path / "empty")) is None and "no config.json" in w.banner.text


def test_an_edited_import_fine_tunes_from_its_weights_and_a_new_shape_asks_first(
        qtbot, make_window, imported_once, monkeypatch, corpus_file, children_in_thread):
    """Issue 38: Steps 20 -> 23 on an imported GPT-2 fine-tunes it in place (it used to start a new run from random
    weights without a word); a new shape asks first, naming what the new run will not keep."""
    w = make_window()
    run_dir = open_imported(w, imported_once)
    cfg = w.session.config
    asked = []
    monkeypatch.setattr(dialogs, "ask_new_run", lambda _parent, reason, lost: asked.append((reason, lost)) or False)
    w.session.set_config(cfg.replace(model=dataclasses.replace(cfg.model, n_layer=3)))
    w.actions["train"].trigger()
    assert len(asked) == 1 and "shapes of the weights" in asked[0][0] and "the imported weights" in asked[0][1][0]
    assert not w.controller.alive and w.controller.run_dir == run_dir  # cancelled: nothing started
    w.session.set_config(cfg.replace(train=dataclasses.replace(cfg.train, steps=23),
                                     data=dataclasses.replace(cfg.data, corpus=str(corpus_file))))
    w.actions["train"].trigger()
    qtbot.waitUntil(lambda: w.session.training_state == "finished", timeout=WAIT)
    assert len(asked) == 1 and w.controller.run_dir == run_dir  # continued in place, not asked
    run = Run(run_dir)
    assert run.checkpoint_steps()[-1] == 23 and run.changes()[0]["step"] == 0
    assert run.changes()[0]["changed"]["train.steps"] == [20, 23]


@pytest.mark.parametrize("button,expected", [("Start a new run", True), ("Cancel", False)])
def test_the_new_run_question_names_what_would_not_be_kept(qtbot, monkeypatch, button, expected):
    from PySide6.QtWidgets import QMessageBox, QPushButton

    seen = []

    def answer(box):
        seen.append(box.text())
        next(b for b in box.findChildren(QPushButton) if b.text().replace("&", "") == button).click()
        return 0
    monkeypatch.setattr(QMessageBox, "exec", answer)
    assert dialogs.ask_new_run(None, "W_E changes shape", ("the imported weights (from x)",)) is expected
    assert "W_E changes shape" in seen[0] and "will not keep the imported weights (from x)" in seen[0]


def test_the_builder_shows_an_imported_run_s_own_vocabulary_and_parameter_count(
        qtbot, make_window, imported_once, tmp_path, children_in_thread):
    """Issue 38: the builder showed what a BPE fitted on its corpus would give, not the import's own tokens."""
    from engine.configs.sizes import parameter_count

    w = make_window()
    run_dir = open_imported(w, imported_once)
    small = tmp_path / "small.txt"  # a fit on it could not reach the import's 320 tokens
    small.write_text("to be, or not to be: that is the question.\n" * 60, encoding="utf-8")
    cfg = w.session.config
    w.session.set_config(cfg.replace(data=dataclasses.replace(cfg.data, corpus=str(small))))
    builder = w.panes["pane_architecture"]
    qtbot.waitUntil(lambda: builder.inspection is not None and builder.inspection.model.vocab_size == 320
                    and "reading the corpus" not in builder.params.text(), timeout=WAIT)
    model = Run(run_dir).config.model
    assert f"{parameter_count(model):,} by the formula" in builder.params.text()
    assert "vocabulary 320" in builder.params.text() and w.session.config.model.vocab_size == 320
