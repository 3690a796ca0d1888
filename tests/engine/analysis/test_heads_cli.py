"""`gpt-explorer heads` and `export --what heads` print and write exactly what the engine computes."""

from __future__ import annotations

import csv

import pytest

from engine.analysis.head_export import format_csv, format_text, head_rows
from engine.analysis.head_timeline import head_timeline
from engine.analysis.heads import SCORES
from engine.cli import main
from tests.engine.cli.test_export_cli import tiny_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return tiny_run(tmp_path_factory.mktemp("heads-cli") / "run")


def cli(capsys, *argv) -> tuple[int, str, str]:
    rc = main([*map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_heads_prints_the_functions_scores_as_csv_and_as_text(run, capsys):
    rc, out, _ = cli(capsys, "heads", "--run", run.path, "--format", "csv")
    tl = head_timeline(run.path)
    assert rc == 0 and out == format_csv(head_rows(tl))
    rows = list(csv.DictReader(out.splitlines()))
    assert len(rows) == 4 and float(rows[3]["induction"]) == tl.values["induction"][-1, 1, 1]
    rc, out, _ = cli(capsys, "heads", "--run", run.path, "--step", 2)
    assert rc == 0 and out == format_text(head_rows(tl.upto(2)), tl.upto(2))
    assert out.startswith("head scores at step 2") and "thresholds: previous-token ≥ 0.4" in out


def test_heads_at_a_step_that_was_not_saved_is_one_line_and_exit_2(run, capsys):
    rc, out, err = cli(capsys, "heads", "--run", run.path, "--step", 3)
    assert rc == 2 and out == "" and err.count("\n") == 1 and "no weights saved at step 3" in err


def test_export_heads_writes_the_timeline_as_csv_and_as_a_figure(run, tmp_path, capsys):
    rc, _, _ = cli(capsys, "export", "--run", run.path, "--what", "heads", "--out", tmp_path / "h.csv")
    rows = list(csv.DictReader((tmp_path / "h.csv").read_text().splitlines()))
    tl = head_timeline(run.path)
    assert rc == 0 and len(rows) == 3 * 2 * 2 and set(rows[0]) == {"step", "layer", "head", *SCORES, "probe_loss",
                                                                      "ablation_note"}
    assert rows[0]["ablation_note"] == "Ablation: exact, each head's output replaced by its mean over the probe in turn"
    assert float(rows[-1]["dla"]) == tl.values["dla"][-1, 1, 1] and rows[-1]["step"] == "4"
    for suffix in ("png", "svg"):
        rc, _, _ = cli(capsys, "export", "--run", run.path, "--what", "heads", "--out", tmp_path / f"h.{suffix}")
        assert rc == 0 and (tmp_path / f"h.{suffix}").stat().st_size > 1000
    rc, _, err = cli(capsys, "export", "--run", run.path, "--what", "heads", "--score", "nope", "--out",
                     tmp_path / "x.png")
    assert rc == 2 and "unknown head score 'nope'" in err and err.count("\n") == 1
