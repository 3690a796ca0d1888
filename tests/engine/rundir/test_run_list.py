"""The run browser's engine side: summaries read from small files, the folders to watch, rename, and delete of
runs only."""

from __future__ import annotations

import json
import shutil

import pytest

from engine.errors import UserError
from engine.rundir.listing import delete_run, last_metrics_row, list_folders, list_runs, rename_run
from engine.rundir.runs import Run
from engine.training.trainer import Trainer
from tests.engine.training.test_trainer import small_config


@pytest.fixture(scope="module")
def runs_folder(tmp_path_factory):
    """Two finished runs (12 and 20 steps) and a folder that is not a run."""
    from engine.text.corpus import shakespeare_text

    root = tmp_path_factory.mktemp("runs")
    text = shakespeare_text()[:40_000]
    for name, steps in (("short", 12), ("long", 20)):
        list(Trainer(small_config(steps=steps, eval_every=5, checkpoint_every=10), root / name, text=text).steps())
    (root / "notes").mkdir()
    (root / "notes" / "readme.txt").write_text("not a run")
    return root


def test_summaries_agree_with_the_runs_read_whole(runs_folder):
    rows = {s.name: s for s in list_runs(runs_folder)}
    assert set(rows) == {"short", "long"}
    for name, s in rows.items():
        run = Run(runs_folder / name)
        vals = [r["val_loss"] for r in run.metrics() if r.get("val_loss") is not None]
        assert s.steps_done == run.metrics()[-1]["step"] == s.steps_total
        assert s.best_val == pytest.approx(min(vals))
        assert s.preset == run.config.name and s.optimizer == "adamw"
        assert s.size_bytes == sum(p.stat().st_size for p in run.path.rglob("*") if p.is_file())


def test_the_tail_skips_a_line_cut_by_a_crash(tmp_path):
    rows = [json.dumps({"step": i, "train_loss": 1.0, "pad": "x" * 300}) for i in range(40)]
    (tmp_path / "m.jsonl").write_text("\n".join(rows) + '\n{"step": 40, "train_lo')
    assert last_metrics_row(tmp_path / "m.jsonl")["step"] == 39


def test_rename_and_delete_act_on_runs_only(runs_folder, tmp_path):
    copy = shutil.copytree(runs_folder / "short", tmp_path / "runs" / "a")
    moved = rename_run(copy, "b")
    assert moved.name == "b" and [s.name for s in list_runs(tmp_path / "runs")] == ["b"]
    with pytest.raises(UserError):
        rename_run(moved, "../escape")
    with pytest.raises(UserError, match="not a run directory"):
        delete_run(runs_folder / "notes")
    assert (runs_folder / "notes" / "readme.txt").exists()
    delete_run(moved)
    assert list_runs(tmp_path / "runs") == []


def test_a_folder_that_is_itself_a_run_lists_itself(runs_folder):
    assert [s.name for s in list_runs([runs_folder / "long", runs_folder])].count("long") == 1


def test_the_listing_names_the_folders_to_watch_never_a_run(runs_folder, tmp_path):
    got = list_folders([runs_folder / "long", runs_folder, tmp_path / "gone"])
    assert sorted(s.name for s in got.runs) == ["long", "short"]
    assert sorted(got.watch) == [runs_folder, runs_folder / "notes"]  # not a run yet; a missing folder is skipped
