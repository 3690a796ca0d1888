"""Issue 37: while a long question holds the analysis process (a GPT-2-sized head timeline scored for
minutes), the Runs pane still lists its folder: the listing is a light question, answered in its own lane.
Issue 40: an empty browser says where runs come from."""

from __future__ import annotations

import shutil
from pathlib import Path

from engine.training.trainer import Trainer
from gui import settings

from ...analysis_state import Held
from ...conftest import tiny_config
from .test_runs_pane import WAIT, listed

RUNS = 200


def test_an_empty_browser_says_where_runs_come_from_then_200_runs_are_listed_while_a_long_question_is_held(
        qtbot, make_window, corpus_file, small_text, tmp_path):
    """Two tests that each built a window over a runs folder of their own, as one (issue 42): the empty browser
    (issue 40: it was an empty table, saying nothing of how to get a run) until its first run is listed, then
    that run copied to 200, listed beside a long question."""
    w = make_window()
    runs = w.panes["pane_runs"]
    w.docks["pane_runs"].raise_()
    listed(qtbot, runs)
    assert runs.empty_label.isVisible()
    text = runs.empty_label.text()
    assert text.startswith(f"No runs yet in {settings.runs_root()}")
    assert all(way in text for way in ("Training", "Help → Welcome", "File → Import nanoGPT checkpoint…"))
    root = settings.runs_root()
    list(Trainer(tiny_config(corpus_file, steps=3, eval_every=3), root / "run-000", text=small_text).steps())
    runs.refresh()  # until the listing comes, the last one's "No runs yet" is not said beside a run on disk
    assert runs.listing and runs.empty_label.text() == f"Listing the runs in {settings.runs_root()}…"
    listed(qtbot, runs)
    assert runs.tree.topLevelItemCount() == 1 and not runs.empty_label.isVisible()

    # 200 runs are listed while a long question holds the analysis process
    small = [p for p in (root / "run-000").iterdir() if p.is_file()]  # the files a listing reads
    for k in range(1, RUNS):
        folder = root / f"run-{k:03d}"
        folder.mkdir()
        for f in small:
            shutil.copy(f, folder / f.name)
    gate = str(tmp_path / "gate")
    w.session.asker.ask(Held(gate), lambda _answer: None)  # a long question, held in the process
    qtbot.waitUntil(lambda: Path(gate + ".started").exists(), timeout=WAIT)
    listed(qtbot, runs)
    assert runs.tree.topLevelItemCount() == RUNS
    assert Held(gate) in w.session.asker.out() and not Path(gate + ".finished").exists()  # still held
    Path(gate).touch()
    qtbot.waitUntil(lambda: w.session.asker.idle, timeout=WAIT)
