"""`gpt-explorer bench --quick`: runs both loops and prints their tokens/s and ratio (never timed here)."""

from __future__ import annotations

import re
import tempfile

from engine.text.corpus import shakespeare_text
from tests.engine.cli.test_cli_train import run_cli


def test_bench_quick_prints_both_throughputs_and_the_ratio(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the bench writes its temporary run
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(shakespeare_text()[:20_000], encoding="utf-8")
    rc, out, err = run_cli(capsys, "bench", "--quick", "--threads", 1, "--corpus", corpus)
    assert rc == 0, err
    assert len(re.findall(r"round \d/2: trainer [\d,]+ tok/s, bare loop [\d,]+ tok/s", out)) == 2
    assert re.search(r"trainer +[\d,]+ tokens/s", out) and re.search(r"bare loop +[\d,]+ tokens/s", out)
    assert re.search(r"ratio +\d+\.\d{3} .*smoke test, not a measurement; 1 torch thread", out)
    assert not list(tmp_path.glob("gpt-explorer-bench-*"))  # the temporary run is cleaned up


def test_zero_rounds_or_steps_are_refused_not_taken_for_the_default(capsys):
    """`--rounds 0` ran the default four rounds of 250 steps (minutes) where the check said at least 1."""
    from tests.engine.cli.test_cli_train import one_error_line

    for argv in (["--rounds", 0], ["--steps", 0, "--quick"], ["--rounds", -1]):
        line = one_error_line(*run_cli(capsys, "bench", *argv)[::2])
        assert "--rounds and --steps must be at least 1" in line
