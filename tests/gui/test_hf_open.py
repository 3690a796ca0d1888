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

from .conftest import QT_NOISE

pytest.importorskip("transformers")
pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]
WAIT = 60_000  # ms: a shared machine


def test_opening_a_gpt2_folder_opens_a_run_that_train_fine_tunes_in_bits_per_character(
        qtbot, make_window, pretrained, monkeypatch, tmp_path, corpus_file):  # noqa: F811
    w = make_window()
    monkeypatch.setattr(dialogs, "ask_path", lambda *a, **k: pretrained)
    w.actions["import_hf"].trigger()
    run_dir = w.controller.run_dir
    assert run_dir is not None and run_dir.parent == settings.runs_root()
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
    (tmp_path / "empty").mkdir()
    assert run_menu.import_hf(w, tmp_path / "empty") is None and "no config.json" in w.banner.text
