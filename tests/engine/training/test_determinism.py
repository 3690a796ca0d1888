"""Bit-reproducible training at the default thread count (every usable core): the same config and seed
give the same weights, metrics and samples, and so do a resumed run and a fork that changes nothing the
training reads. With one thread this held already; several threads summed the token embedding's
gradient rows in a varying order (see GPT.forward)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from engine.configs.config import DataConfig, ExperimentConfig, ModelConfig, TrainConfig, parse_setting
from engine.rundir.fork import fork_run
from engine.rundir.runs import Run
from engine.training.trainer import Trainer

TIMING = ("tokens_per_s", "wall_s")  # clock readings, the only fields allowed to differ
STEPS = 8


def config(optimizer: str = "adamw", **train) -> ExperimentConfig:
    """Wide enough that the embedding's backward is split across threads (d_model 64, 1024 tokens a batch); 8 steps
    cross a checkpoint and an evaluation on the way to the end (12 did too, at half again the CPU)."""
    t = dict(steps=STEPS, batch_size=16, lr=3e-3, min_lr=3e-4, warmup_steps=2, eval_every=4, eval_batches=2,
             report_every=1, checkpoint_every=4, snapshot_every=2, sample_tokens=16, torch_threads=0,
             optimizer=optimizer)
    t.update(train)
    return ExperimentConfig(name="det", model=ModelConfig(n_layer=1, n_head=4, d_model=64, d_ff=128, n_ctx=64,
                                                          dropout=0.1),
                            train=TrainConfig(**t), data=DataConfig(corpus="test text"))


@pytest.fixture(scope="module")
def text() -> str:
    from engine.text.corpus import shakespeare_text

    return shakespeare_text()[:60_000]


def logged(run_dir: Path) -> tuple[list[dict], list[dict]]:
    run = Run(run_dir)
    strip = [{k: v for k, v in r.items() if k not in TIMING} for r in run.metrics()]
    return strip, run.samples()


def assert_same_run(a: Path, b: Path, step: int) -> None:
    wa, wb = Run(a).load_weights(step), Run(b).load_weights(step)
    differ = [k for k in wa if not torch.equal(wa[k], wb[k])]
    assert not differ, f"weights differ: {differ}"
    assert logged(a) == logged(b)


@pytest.fixture(scope="module")
def straight(text, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("straight") / "run"
    list(Trainer(config(), path, text=text).steps())
    return path


def test_the_default_thread_count_is_every_core_and_more_than_one_here():
    from engine.training.device import set_threads
    from engine.training.thread_policy import usable_cores

    assert set_threads(config().train.torch_threads) == usable_cores()


@pytest.mark.parametrize("optimizer", ["adamw", "muon"])
def test_two_runs_of_one_config_are_equal_to_the_bit(optimizer, straight, text, tmp_path):
    first = straight if optimizer == "adamw" else tmp_path / "first"
    if optimizer != "adamw":
        list(Trainer(config(optimizer), first, text=text).steps())
    list(Trainer(config(optimizer), tmp_path / "second", text=text).steps())
    assert_same_run(first, tmp_path / "second", STEPS)


def test_a_run_stopped_and_resumed_equals_the_straight_run(straight, text, tmp_path):
    gen = Trainer(config(), tmp_path / "run", text=text).steps()
    for report in gen:
        if report.step == 3:
            break
    gen.close()  # as Stop does: a checkpoint at step 3, between the step-4 one and the start
    list(Trainer.resume(tmp_path / "run", text=text).steps())
    assert_same_run(straight, tmp_path / "run", STEPS)


@pytest.mark.parametrize("step", [0, 4])
def test_a_fork_that_changes_nothing_training_reads_equals_the_straight_run(straight, text, tmp_path, step):
    cfg = parse_setting("train.sample_tokens=16", Run(straight).config)
    cfg = cfg.replace(train=dataclasses.replace(cfg.train, keep_checkpoints=5))
    list(fork_run(straight, tmp_path / "fork", cfg, step, text=text).steps())
    wa, wb = Run(straight).load_weights(STEPS), Run(tmp_path / "fork").load_weights(STEPS)
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    assert logged(straight) == logged(tmp_path / "fork")


# ---- the record: whether a run repeats, said where runs are compared ------------------------------

def test_a_cpu_run_records_that_it_repeats_and_comparisons_say_nothing(straight):
    from engine.training.determinism import comparison_note, sessions
    from engine.figures.run_curves import load_curves

    assert sessions(straight) == [{"step": 0, "device": "cpu", "deterministic": True}]
    assert comparison_note([straight, straight]) is None and load_curves(straight).noise is None


def test_cuda_sessions_are_recorded_with_whether_they_were_deterministic(straight, tmp_path, monkeypatch):
    import shutil
    from types import SimpleNamespace

    from engine.training.determinism import comparison_note, is_deterministic, record_session, sessions
    from engine.figures.run_curves import load_curves

    run = tmp_path / "run"
    shutil.copytree(straight, run)
    cuda = SimpleNamespace(type="cuda")
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    assert not is_deterministic(cuda) and not is_deterministic(SimpleNamespace(type="mps"))
    record_session(run, 6, cuda)
    record_session(run, 9, cuda)  # the same kind of session again: nothing new to say
    assert [s["step"] for s in sessions(run)] == [0, 6]
    note = comparison_note([straight, run])
    assert note == ("run trained on cuda without deterministic kernels from step 6: a difference between these "
                    "runs includes run-to-run noise")
    assert load_curves(run).noise.startswith("run trained on cuda")
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    # what torch.use_deterministic_algorithms(True) switches on; calling it imports torch._inductor (~1.3 s of CPU)
    monkeypatch.setattr(torch, "are_deterministic_algorithms_enabled", lambda: True)
    assert is_deterministic(cuda)
    record_session(run, 3, cuda)  # resumed from an earlier checkpoint: what came after is rewritten
    assert sessions(run) == [{"step": 0, "device": "cpu", "deterministic": True},
                             {"step": 3, "device": "cuda", "deterministic": True}]
    assert comparison_note([run]) is None
    (run / "determinism.json").write_text("[" * 100_000, encoding="utf-8")
    assert sessions(run) == [] and comparison_note([run]) is None  # unreadable: nothing claimed
