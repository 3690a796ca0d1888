"""`gpt-explorer sample`: text from a run directory alone, and one clear line for every bad input."""

from __future__ import annotations

import pytest

from engine.cli import main
from engine.text.corpus import shakespeare_text
from engine.training.trainer import Trainer
from tests.engine.cli.test_cli_train import one_error_line, run_cli
from tests.engine.training.test_trainer import small_config


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("sample") / "run"
    list(Trainer(small_config(steps=10, checkpoint_every=5), path, text=shakespeare_text()[:20_000]).steps())
    return path


def test_sample_continues_the_prompt_repeatably_with_a_seed(run_dir, capsys):
    argv = ["sample", "--run", str(run_dir), "--prompt", "KING:", "--tokens", "40", "--seed", "3"]
    rc, first, _ = run_cli(capsys, *argv)
    rc2, second, _ = run_cli(capsys, *argv)
    assert rc == rc2 == 0 and first == second and first.startswith("KING:")


def test_sample_defaults_to_the_run_prompt_and_reads_snapshots(run_dir, capsys):
    rc, out, _ = run_cli(capsys, "sample", "--run", run_dir, "--tokens", 5, "--step", 0, "--top-k", 3)
    assert rc == 0 and len(out) > 5


def test_temperature_zero_is_greedy_and_ignores_the_seed(run_dir, capsys):
    outs = {run_cli(capsys, "sample", "--run", run_dir, "--prompt", "A", "--tokens", 20,
                    "--temperature", 0, "--seed", s)[1] for s in (1, 2)}
    assert len(outs) == 1


@pytest.mark.parametrize("argv, expected", [
    (["--tokens", "0"], "--tokens must be at least 1"),
    (["--temperature", "-1"], "--temperature must be 0 or more"),
    (["--top-k", "0"], "--top-k must be at least 1"),
    (["--prompt", "日本"], "cannot be encoded"),
    (["--step", "7"], "no weights saved at step 7"),
])
def test_bad_sample_options_are_one_line(run_dir, capsys, argv, expected):
    rc, _, err = run_cli(capsys, "sample", "--run", run_dir, *argv)
    assert expected in one_error_line(rc, err)


def test_sampling_a_directory_that_is_not_a_run_is_one_line(tmp_path, capsys):
    rc, _, err = run_cli(capsys, "sample", "--run", tmp_path)
    assert "is not a run directory" in one_error_line(rc, err)


def test_sampling_a_run_with_a_garbage_checkpoint_is_one_line(tmp_path, capsys):
    path = tmp_path / "run"
    list(Trainer(small_config(steps=5, checkpoint_every=5), path, text=shakespeare_text()[:20_000]).steps())
    (path / "checkpoints" / "step-000005" / "model.safetensors").write_bytes(b"\x00" * 64)
    rc, _, err = run_cli(capsys, "sample", "--run", path)
    assert "corrupt or truncated" in one_error_line(rc, err)
    assert main(["sample", "--run", str(path), "--step", "0", "--tokens", "3"]) == 0  # snapshots still load
