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

from engine.configs import limits
from engine.cli import main
from engine.configs.config import ConfigError, DataConfig, ExperimentConfig
from engine.rundir.integrity import NonFiniteWeights
from engine.rundir.lock import RunLock, RunLockedError
from engine.rundir.runs import Run, RunError, RunWriter, write_checkpoint
from engine.training.trainer import Trainer
from tests.engine.training.test_trainer import small_config

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    from engine.text.corpus import shakespeare_text

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
    from engine.training.thread_policy import usable_cores

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
    from engine.text.corpus import shakespeare_text

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


# ---- 5: a run killed while it is being created; temporaries left by killed writers -----------

HALF_MADE = {"nothing but folders": ("checkpoints", "snapshots"),
             "tokenizer written": ("checkpoints", "snapshots", "tokenizer.json"),
             "everything but the config": ("checkpoints", "snapshots", "tokenizer.json", "probe.json",
                                           "metrics.jsonl", "samples.jsonl", ".lock", ".probe.json.tmp77")}


@pytest.mark.parametrize("case", HALF_MADE, ids=list(HALF_MADE))
def test_a_run_killed_while_being_created_is_started_again(case, tmp_path, corpus, capsys):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for name in HALF_MADE[case]:
        (run_dir / name).mkdir() if "." not in name else (run_dir / name).write_text("{half")
    path = config_file(tmp_path, corpus, steps=5, checkpoint_every=5)
    assert main(["train", "--config", str(path), "--run", str(run_dir)]) == 0
    assert Run(run_dir).checkpoint_steps() == [5]
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "tokenizer.json").write_text("{}")
    (tmp_path / "mine" / "notes.txt").write_text("mine")  # anything else: not ours to clear
    assert main(["train", "--config", str(path), "--run", str(tmp_path / "mine")]) == 2
    assert "not a run directory" in one_line(capsys)
    assert (tmp_path / "mine" / "notes.txt").read_text() == "mine"


def test_temporaries_left_by_killed_writers_are_swept(tmp_path, corpus):
    run_dir = finished(tmp_path, corpus)
    litter = [run_dir / "checkpoints" / ".tmp-step-000010-4242", run_dir / "checkpoints" / ".old-step-000005-4242",
              run_dir / "snapshots" / ".step-000010.safetensors.tmp4242", run_dir / ".config.toml.tmp4242",
              run_dir / "snapshots" / ".step-000010.safetensors.sha256.tmp4242"]
    for p in litter:
        p.mkdir() if p.name.startswith((".tmp-", ".old-")) else p.write_bytes(b"x" * 100)
    assert main(["train", "--run", str(run_dir), "--steps", "12"]) == 0
    assert not any(p.exists() for p in litter)
    assert Run(run_dir).checkpoint_steps()[-1] == 12


# ---- 6: one writer per run --------------------------------------------------------------------

def test_a_second_writer_is_refused_naming_the_holder(tmp_path, corpus, capsys):
    run_dir = finished(tmp_path, corpus)
    capsys.readouterr()
    with RunLock(run_dir):
        assert main(["train", "--run", str(run_dir), "--steps", "12"]) == 2
        assert f"being trained by process {os.getpid()}" in one_line(capsys)
        with pytest.raises(RunLockedError, match=str(os.getpid())):
            RunLock(run_dir).acquire()
    first = Trainer.resume(run_dir, steps=12)  # holds the lock from here on, as the app's training does
    with pytest.raises(RunLockedError, match=str(os.getpid())):
        Trainer.resume(run_dir, steps=14)
    list(first.steps())  # the lock is let go when its training ends
    assert Trainer.resume(run_dir, steps=14).step == 12


def test_the_lock_of_another_process_and_a_stale_lock(tmp_path, corpus, capsys):
    run_dir = finished(tmp_path, corpus)
    capsys.readouterr()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from engine.rundir.lock import RunLock; l = RunLock(sys.argv[1]).acquire();"
         " print('held', flush=True); sys.stdin.read()", str(run_dir)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout.readline().strip() == "held"
        assert main(["train", "--run", str(run_dir), "--steps", "12"]) == 2
        assert f"being trained by process {holder.pid}" in one_line(capsys)
    finally:
        holder.stdin.close()
        holder.wait()
    # the holder is gone; its .lock file (naming a dead pid) is simply taken over
    assert (run_dir / ".lock").exists()
    assert main(["train", "--run", str(run_dir), "--steps", "12"]) == 0


# ---- 8: checksums, and the newest intact checkpoint -------------------------------------------

def flip_last_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x5A  # inside the tensor data: the file stays well-formed
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("what", ["model.safetensors", "state.pt"])
def test_garbled_bytes_in_a_checkpoint_are_noticed_and_the_older_one_used(what, tmp_path, corpus, capsys):
    run_dir = finished(tmp_path, corpus)
    flip_last_byte(run_dir / "checkpoints" / "step-000010" / what)
    with pytest.raises(RunError, match="step-000010"):
        Run(run_dir).load_checkpoint(10)
    capsys.readouterr()
    assert main(["sample", "--run", str(run_dir), "--tokens", "10", "--seed", "1"]) == 0
    assert "skipped checkpoints/step-000010" in capsys.readouterr().err
    assert main(["train", "--run", str(run_dir), "--steps", "12"]) == 0
    out, err = capsys.readouterr()
    assert "resuming at step 5" in out and "skipped checkpoints/step-000010" in err


def test_garbled_snapshot_bytes_are_noticed(tmp_path, corpus):
    run_dir = finished(tmp_path, corpus)
    flip_last_byte(run_dir / "snapshots" / "step-000000.safetensors")
    with pytest.raises(RunError, match="step-000000.safetensors does not match its checksum"):
        Run(run_dir).load_weights(0)
    flip_last_byte(run_dir / "snapshots" / "step-000005.safetensors")
    run = Run(run_dir)
    assert torch.equal(run.load_weights(5)["W_E"], run.load_checkpoint(5)[0]["W_E"])
    assert any("step-000005.safetensors" in w and "checkpoint" in w for w in run.warnings)


# ---- 10: killed at the wrong moment ------------------------------------------------------------

class Killed(BaseException):
    """Stands in for kill -9: nothing after it runs, no handler catches it."""


def test_a_kill_right_after_a_checkpoint_keeps_its_metrics_row(tmp_path, monkeypatch):
    from engine.text.corpus import shakespeare_text

    real = RunWriter.save_checkpoint

    def then_killed(self, step, *a, **k):
        path = real(self, step, *a, **k)
        if step == 4:
            raise Killed
        return path
    monkeypatch.setattr(RunWriter, "save_checkpoint", then_killed)
    text = shakespeare_text()[:20_000]
    trainer = Trainer(small_config(steps=8, checkpoint_every=2, report_every=3), tmp_path / "run", text=text)
    with pytest.raises(Killed):
        list(trainer.steps())
    del trainer
    monkeypatch.setattr(RunWriter, "save_checkpoint", real)
    assert [r["step"] for r in Run(tmp_path / "run").metrics()] == [2, 3, 4]
    resumed = Trainer.resume(tmp_path / "run", text=text)
    assert resumed.step == 4 and [r["step"] for r in Run(tmp_path / "run").metrics()] == [2, 3, 4]


def test_sigterm_stops_training_like_ctrl_c():
    from engine.cli._train_loop import _StopFlag

    before = signal.getsignal(signal.SIGTERM)
    with _StopFlag() as stop:
        os.kill(os.getpid(), signal.SIGTERM)  # would end the process without a checkpoint before
        assert stop.requested
    assert signal.getsignal(signal.SIGTERM) == before


def test_a_run_killed_before_its_first_checkpoint_starts_afresh(tmp_path, corpus, capsys):
    cfg = ExperimentConfig.load(config_file(tmp_path, corpus, steps=6, checkpoint_every=3))
    trainer = Trainer(cfg, tmp_path / "run")  # config and snapshot 0 written, then "killed"
    trainer.writer.close()
    del trainer
    (tmp_path / "run" / "checkpoints" / ".tmp-step-000003-4242").mkdir()
    assert main(["train", "--run", str(tmp_path / "run")]) == 0
    assert "stopped before its first checkpoint; starting it afresh" in capsys.readouterr().err
    assert Run(tmp_path / "run").checkpoint_steps() == [3, 6]
