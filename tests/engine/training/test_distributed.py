"""Training one run across processes (engine/training/distributed.py, `gpt-explorer train --nproc N`).

Two processes meet over gloo on 127.0.0.1 and train with DistributedDataParallel on the CPU; the claim checked
is the module's contract: the two processes take the same steps as one process on the whole (concatenated)
batch, write one run, and a run resumes with another number of processes. A training process costs ~3.5 s of
CPU (torch's import, and torch's compiler, which DistributedDataParallel imports), so one launch of two training
processes, by torchrun, serves those claims; `--nproc N`'s own part, spawning the processes on a free port and
passing on their exit status, is checked with processes that meet and exchange values without training (the
processes train with the same code however they were launched). A run two processes start is not launched
here: one process starts it and two resume it.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import torch

from engine.cli import main
from engine.training.distributed import Group, spawn
from engine.errors import UserError
from engine.rundir.runs import Run

from tests import fresh_imports

from .meeting import meet

# dropout 0: with dropout each process draws its own masks, and equality holds only for the same N; float32: the
# tolerance below is float32's (bf16 autocast, which `auto` takes on some CPUs, rounds a batch and its halves apart
# more coarsely)
CONFIG = """name = "small"
[model]
n_layer = 1
n_head = 2
d_model = 32
d_ff = 64
n_ctx = 16
[train]
steps = 6
batch_size = 8
warmup_steps = 2
eval_every = 3
eval_batches = 2
snapshot_every = 3
checkpoint_every = 3
sample_tokens = 10
torch_threads = 1
precision = "float32"
"""


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    path = tmp_path_factory.mktemp("cfg") / "small.toml"
    path.write_text(CONFIG)
    return path


@pytest.fixture(scope="module")
def solo(config, tmp_path_factory):
    """The reference: one process, six steps."""
    run_dir = tmp_path_factory.mktemp("solo") / "run"
    assert main(["train", "--config", str(config), "--run", str(run_dir)]) == 0
    return Run(run_dir)


def losses(run: Run) -> list[tuple[int, float, float | None]]:
    return [(r["step"], r["train_loss"], r["val_loss"]) for r in run.metrics()]


def assert_same_training(run: Run, reference: Run) -> None:
    got, want = losses(run), losses(reference)
    assert [s for s, _, _ in got] == [s for s, _, _ in want] == list(range(1, 7))
    for (_, loss, val), (_, loss_ref, val_ref) in zip(got, want):
        assert loss == pytest.approx(loss_ref, rel=1e-5, abs=1e-6)
        assert (val is None) == (val_ref is None) and (val is None or val == pytest.approx(val_ref, rel=1e-5))
    weights, reference_weights = run.load_weights(6), reference.load_weights(6)
    assert weights.keys() == reference_weights.keys()
    for name in weights:
        torch.testing.assert_close(weights[name], reference_weights[name], rtol=1e-4, atol=1e-6)


def test_shares_of_a_batch_concatenate_to_the_batch():
    x, y = torch.arange(24).view(8, 3), torch.arange(24).view(8, 3) + 100
    parts = [Group(rank, 4).shard(x, y) for rank in range(4)]
    assert torch.equal(torch.cat([p[0] for p in parts]), x) and torch.equal(torch.cat([p[1] for p in parts]), y)
    assert Group(1, 4).share_of(8) == 2
    with pytest.raises(UserError, match="does not split evenly over 3 processes"):
        Group(0, 3).share_of(8)


def test_a_batch_that_does_not_split_is_refused_before_any_process_starts(config, tmp_path, capsys):
    run_dir = tmp_path / "run"
    rc = main(["train", "--config", str(config), "--run", str(run_dir), "--nproc", "3"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert re.search(r"batch_size 8 does not split evenly over 3 processes", err)
    assert not run_dir.exists()


def test_nproc_is_refused_when_it_disagrees_with_torchrun(config, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "1")
    rc = main(["train", "--config", str(config), "--run", str(tmp_path / "run"), "--nproc", "4"])
    err = capsys.readouterr().err
    assert rc == 2 and "disagrees with torchrun's 2 processes" in err and len(err.strip().splitlines()) == 1


def test_one_process_asked_for_is_the_ordinary_path(config, solo, tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert main(["train", "--config", str(config), "--run", str(run_dir), "--nproc", "1"]) == 0
    assert "processes" not in capsys.readouterr().out
    assert json.loads(json.dumps(losses(Run(run_dir)))) == json.loads(json.dumps(losses(solo)))


def test_the_same_command_under_torchrun_resumes_a_run_and_writes_it_as_one_process_trains_on_the_whole_batch(
        config, solo, tmp_path, capsys):
    """torchrun (its standalone rendezvous on this machine) starts two `gpt-explorer train` processes; they take
    over a run one process began, and write one run with the steps one process takes. `--` keeps torchrun's own
    parser off `--run`, which it would take for an abbreviation of `--run-path`. (One launch for what were two
    tests, a spawned pair resuming and a torchrun pair starting a run: each launch cost ~9 s of CPU.)"""
    run_dir = tmp_path / "run"
    assert main(["train", "--config", str(config), "--run", str(run_dir), "--steps", "3"]) == 0
    assert capsys.readouterr().out.count("new run:") == 1
    # what the `torchrun` script runs, forked from a Python that has imported torch already (tests/fresh_imports.py)
    done = fresh_imports.run("import sys; from torch.distributed.run import main; sys.exit(main())",
                             "--standalone", "--nproc-per-node", "2", "-m", "gui.cli", "--", "train",
                             "--run", run_dir, "--steps", "6", cwd=tmp_path)
    out, err = done.stdout, done.stderr
    assert done.returncode == 0, err[-2000:]
    assert "resuming at step 3" in out and "2 processes" in out and "step 6/6" in out and "Traceback" not in err
    assert out.count("resuming at step 3") == 1 and "new run:" not in out  # rank 0 alone prints
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # rank 1 wrote nothing of its own
    resumed = Run(run_dir)
    assert resumed.config.train.steps == 6
    assert resumed.checkpoint_steps() == [3, 6] and resumed.snapshot_steps() == [0, 3, 6] and not resumed.warnings
    assert len(resumed.samples()) == 2  # step 3's by the one process, step 6's by rank 0 alone
    assert_same_training(resumed, solo)


def test_nproc_spawns_processes_that_meet_on_a_free_port_and_its_status_is_theirs(tmp_path):
    """`--nproc N`'s launcher: N fresh processes with torchrun's variables, one group on 127.0.0.1; a process
    that fails (here rank 1, with status 3) makes the launch fail with its status."""
    assert spawn(2, meet, (str(tmp_path), 3)) == 3
    reports = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    for rank, report in enumerate(reports):
        assert report == {"rank": rank, "world": 2, "mean": 1.5, "said": "from rank 0",
                          "env": {"RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank),
                                  "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1"}}
