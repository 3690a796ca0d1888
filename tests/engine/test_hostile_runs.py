"""Unlucky and hostile runs (issue 18, classes 2, 4, 5, 6, 8, 10): sizes refused before allocating, no
non-finite number on disk, half-made runs and stale temporaries repaired, one writer per run, checksums
with a fallback to the newest intact checkpoint, and kills at the wrong moment."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from engine import limits
from engine.cli import main
from engine.config import ConfigError, DataConfig, ExperimentConfig
from engine.run_integrity import NonFiniteWeights
from engine.run_lock import RunLock, RunLockedError
from engine.runs import Run, RunError, RunWriter, write_checkpoint
from engine.trainer import Trainer
from tests.engine.test_trainer import small_config

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    from engine.corpus import shakespeare_text

    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text(shakespeare_text()[:20_000], encoding="utf-8")
    return path


def config_file(tmp_path: Path, corpus: Path, **train) -> Path:
    cfg = small_config(**train).replace(data=DataConfig(corpus=str(corpus)))
    path = tmp_path / "small.toml"
    path.write_text(cfg.to_toml(), encoding="utf-8")
    return path


def finished(tmp_path: Path, corpus: Path, **train) -> Path:
    run_dir = tmp_path / "run"
    train = {"steps": 10, "checkpoint_every": 5, "eval_every": 5, "snapshot_every": 5} | train
    assert main(["train", "--config", str(config_file(tmp_path, corpus, **train)), "--run", str(run_dir)]) == 0
    return run_dir


def one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gpt-explorer: error: "), err
    return err[0]


# ---- 2: sizes, memory, threads and seeds refused before anything is allocated ----------------

ABSURD = {"n_layer": ("model", 10_000), "d_model": ("model", 10 ** 6), "d_ff": ("model", 10 ** 9),
          "n_ctx": ("model", 10 ** 8), "batch_size": ("train", 10 ** 7), "torch_threads": ("train", 10 ** 6),
          "seed": ("train", 2 ** 70), "sample_tokens": ("train", 10 ** 7)}


@pytest.mark.parametrize("name", ABSURD)
def test_absurd_sizes_are_refused_everywhere_a_config_enters(name, tmp_path, corpus, capsys):
    section, value = ABSURD[name]
    cfg = small_config()
    cfg = cfg.replace(**{section: dataclasses.replace(getattr(cfg, section), **{name: value})})
    assert any(p.field == f"{section}.{name}" for p in cfg.validate())
    path = tmp_path / "absurd.toml"
    path.write_text(cfg.replace(data=DataConfig(corpus=str(corpus))).to_toml(), encoding="utf-8")
    assert main(["train", "--config", str(path), "--run", str(tmp_path / "run")]) == 2
    assert name in one_line(capsys) and not (tmp_path / "run").exists()
    assert main(["forms", "--config", str(path), "--count"]) == 2
    assert name in one_line(capsys)


def test_an_absurd_config_inside_a_run_is_refused_by_sample_export_and_resume(tmp_path, corpus, capsys):
    run_dir = finished(tmp_path, corpus)
    capsys.readouterr()
    text = (run_dir / "config.toml").read_text()
    (run_dir / "config.toml").write_text(text.replace("n_ctx = 16", "n_ctx = 100000000"))
    for argv in (["sample", "--run", str(run_dir)], ["train", "--run", str(run_dir), "--steps", "20"],
                 ["export", "--run", str(run_dir), "--what", "posenc", "--out", str(tmp_path / "p.npy")]):
        assert main(argv) == 2
        assert "n_ctx" in one_line(capsys)


def test_a_model_or_training_larger_than_the_machine_is_refused_with_both_sizes(monkeypatch):
    cfg = small_config()
    monkeypatch.setattr(limits, "machine_memory", lambda: 1 << 20)  # a 1 MiB machine
    big = cfg.replace(model=dataclasses.replace(cfg.model, d_model=512, d_ff=2048))
    problem = " ".join(map(str, big.validate()))
    assert "the model alone needs" in problem and "1.0 MiB" in problem
    assert cfg.validate() == []
    problem = " ".join(map(str, limits.training_problems(cfg, device_memory=1000)))
    assert "training memory ≈" in problem and "more than this machine's" in problem
    with pytest.raises(ConfigError, match="training memory"):
        Trainer(cfg.replace(train=dataclasses.replace(cfg.train, batch_size=60_000)), text="abc" * 10)


def test_threads_beyond_the_cores_and_seeds_beyond_64_bits(capsys, tmp_path, corpus):
    from engine.device import usable_cores

    cfg = small_config(torch_threads=limits.THREADS_PER_CORE * usable_cores() + 1)
    assert cfg.validate() == [] and "torch_threads" in str(limits.training_problems(cfg)[0])
    for seed in (-1, 2 ** 63, 2 ** 80):
        assert small_config(seed=seed).validate()[0].field == "train.seed"
    path = config_file(tmp_path, corpus)
    assert main(["train", "--config", str(path), "--seed", str(2 ** 70), "--run", str(tmp_path / "r")]) == 2
    assert "train.seed" in one_line(capsys)


def test_sample_tokens_and_seed_are_bounded(tmp_path, corpus, capsys):
    run_dir = finished(tmp_path, corpus)
    capsys.readouterr()
    for argv, expected in ((["--tokens", str(10 ** 7)], "at most"), (["--seed", str(2 ** 64)], "--seed"),
                           (["--temperature", "inf"], "--temperature")):
        assert main(["sample", "--run", str(run_dir), *argv]) == 2
        assert expected in one_line(capsys)


# ---- 4: no non-finite number ever reaches the disk -------------------------------------------

NON_FINITE = {"lr inf": dict(lr=float("inf")), "lr absurd": dict(lr=1e30), "weight decay nan":
              dict(weight_decay=float("nan")), "grad clip nan": dict(grad_clip=float("nan")),
              "grad clip inf": dict(grad_clip=float("inf")), "budget inf": dict(snapshot_budget_mb=float("inf"))}


@pytest.mark.parametrize("case", NON_FINITE, ids=list(NON_FINITE))
def test_non_finite_or_absurd_hyperparameters_are_refused_up_front(case, tmp_path, corpus, capsys):
    train = NON_FINITE[case]
    assert [p.field for p in small_config(**train).validate()] == [f"train.{next(iter(train))}"]
    assert main(["train", "--config", str(config_file(tmp_path, corpus, **train)),
                 "--run", str(tmp_path / "run")]) == 2
    assert next(iter(train)) in one_line(capsys) and not (tmp_path / "run").exists()


def test_weights_that_became_non_finite_are_never_written(tmp_path):
    from engine.corpus import shakespeare_text

    trainer = Trainer(small_config(steps=6, checkpoint_every=1, snapshot_every=1), tmp_path / "run",
                      text=shakespeare_text()[:20_000])
    real_step = trainer.optimizer.step

    def breaking_step(*a, **k):  # the loss is finite, the weights after the update are not
        real_step(*a, **k)
        if trainer.step == 1:  # the update that makes step 2
            with torch.no_grad():
                trainer.model.W_E[0, 0] = float("inf")
    trainer.optimizer.step = breaking_step
    reports = list(trainer.steps())
    assert reports[-1].event == "nan" and "Inf or NaN" in reports[-1].message and "step 2" in reports[-1].message
    run = Run(tmp_path / "run")
    assert run.checkpoint_steps() == [1] and run.snapshot_steps() == [0, 1]
    for s in run.snapshot_steps():
        assert all(torch.isfinite(v).all() for v in run.load_weights(s).values())
    weights = {"W": torch.tensor([1.0, float("nan")])}
    with pytest.raises(NonFiniteWeights):
        write_checkpoint(tmp_path / "run" / "checkpoints", 9, weights, {"step": 9})
    with pytest.raises(NonFiniteWeights):
        RunWriter(tmp_path / "run", run.config).save_snapshot(9, weights)
    assert 9 not in Run(tmp_path / "run").checkpoint_steps() + Run(tmp_path / "run").snapshot_steps()
