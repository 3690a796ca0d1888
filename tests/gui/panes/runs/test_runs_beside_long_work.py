"""Issue 37: while a long question holds the analysis process (a GPT-2-sized head timeline scored for
minutes), the Runs pane still lists its folder: the listing is a light question, answered in its own lane."""

from __future__ import annotations

import shutil
from pathlib import Path

from engine.training.trainer import Trainer
from gui import settings

from ...analysis_state import Held
from ...conftest import tiny_config
from .test_runs_pane import WAIT, listed

RUNS = 200


def test_the_runs_pane_lists_200_runs_while_a_long_question_is_held(qtbot, make_window, corpus_file, small_text,
                                                                      tmp_path):
    root = settings.runs_root()
    list(Trainer(tiny_config(corpus_file, steps=3, eval_every=3), root / "run-000", text=small_text).steps())
    small = [p for p in (root / "run-000").iterdir() if p.is_file()]  # the files a listing reads
    for k in range(1, RUNS):
        folder = root / f"run-{k:03d}"
        folder.mkdir()
        for f in small:
            shutil.copy(f, folder / f.name)
    w = make_window()
    runs = w.panes["pane_runs"]
    w.docks["pane_runs"].raise_()
    gate = str(tmp_path / "gate")
    w.session.asker.ask(Held(gate), lambda _answer: None)  # a long question, held in the process
    qtbot.waitUntil(lambda: Path(gate + ".started").exists(), timeout=WAIT)
    listed(qtbot, runs)
    assert runs.tree.topLevelItemCount() == RUNS
    assert Held(gate) in w.session.asker.out() and not Path(gate + ".finished").exists()  # still held
    Path(gate).touch()
    qtbot.waitUntil(lambda: w.session.asker.idle, timeout=WAIT)
