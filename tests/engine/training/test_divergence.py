"""Weights that cannot give finite probabilities (issue 27, class 8): a run that diverged keeps finite but
exploded weights, whose forward pass overflows. Loading them is refused with the step and the largest
weight named, so sampling, export and every view fall back to, or ask for, an earlier step; training that
diverges says which weight grew how far."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from engine.cli import main
from engine.rundir.integrity import Diverged, write_checksums
from engine.rundir.runs import MODEL_FILE, STATE_FILE, Run, RunError, save_weights
from engine.training.trainer import Trainer, generate_text
from tests.engine.rundir.test_hostile_runs import corpus, finished  # noqa: F401 (a fixture)
from tests.engine.training.test_trainer import small_config

SCALE = 1e19  # weights stay finite (|w| ~ 1e17); the attention scores overflow float32


def explode(run_dir: Path, step: int) -> None:
    """The checkpoint and snapshot at `step` rewritten, checksums and all, with every weight scaled."""
    ckpt = run_dir / "checkpoints" / f"step-{step:06d}"
    for path in (ckpt / MODEL_FILE, run_dir / "snapshots" / f"step-{step:06d}.safetensors"):
        if not path.exists():
            continue
        from safetensors.torch import load_file

        weights = {k: v * SCALE for k, v in load_file(str(path)).items()}
        save_weights(weights, path, step)
        side = path.with_name(path.name + ".sha256")
        if side.exists():
            side.unlink()  # the header's digest stands for it
    write_checksums(ckpt, [MODEL_FILE, STATE_FILE])


@pytest.fixture
def run_dir(tmp_path, corpus) -> Path:  # noqa: F811
    return finished(tmp_path, corpus)


def test_exploded_weights_are_refused_by_name_when_loaded(run_dir):
    explode(run_dir, 10)
    run = Run(run_dir)
    for load in (lambda: run.load_weights(10), lambda: run.load_checkpoint(10), lambda: run.build_model(10)):
        with pytest.raises(RunError, match=r"step-000010.*cannot give finite probabilities.*max \|w\| = "):
            load()
    assert torch.isfinite(run.load_weights(5)["W_E"]).all()


def test_sampling_and_export_fall_back_past_exploded_weights(run_dir, tmp_path, capsys):
    explode(run_dir, 10)
    assert main(["sample", "--run", str(run_dir), "--tokens", "10", "--seed", "1"]) == 0
    assert "cannot give finite probabilities" in capsys.readouterr().err
    assert main(["export", "--run", str(run_dir), "--what", "attention", "--out", str(tmp_path / "a.csv")]) == 0
    assert "using step 5" in capsys.readouterr().err
    assert main(["train", "--run", str(run_dir), "--steps", "12"]) == 0
    assert "resuming at step 5" in capsys.readouterr().out


def test_a_run_with_only_exploded_weights_is_one_line(run_dir, capsys):
    for step in (5, 10):
        explode(run_dir, step)
    assert main(["sample", "--run", str(run_dir), "--tokens", "10", "--step", "10"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "diverged" in err[0] and "max |w|" in err[0]
    assert main(["sample", "--run", str(run_dir), "--tokens", "10"]) == 2
    assert "no intact checkpoint" in capsys.readouterr().err


def test_sampling_a_model_that_overflows_is_refused_not_a_torch_error(run_dir):
    run = Run(run_dir)
    model = run.build_model(10)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(SCALE)
    for temperature in (1.0, 0.0):
        with pytest.raises(Diverged, match=r"max \|w\|"):
            generate_text(model, run.tokenizer, "To be", 10, temperature, seed=1)


def test_training_that_diverges_says_which_weight_grew(tmp_path):
    from engine.text.corpus import shakespeare_text

    cfg = small_config(steps=200, optimizer="sgd", lr=10.0, min_lr=0.0, grad_clip=0.0, warmup_steps=0,
                       eval_every=1000, checkpoint_every=1000, snapshot_every=1000)
    reports = list(Trainer(cfg, tmp_path / "run", text=shakespeare_text()[:40_000]).steps())
    last = reports[-1]
    assert last.event == "nan", "SGD at lr 10 without clipping was expected to diverge"
    assert "largest weight is" in last.message and "max |w| = " in last.message
    assert Run(tmp_path / "run").checkpoint_steps() == []  # nothing exploded was kept
