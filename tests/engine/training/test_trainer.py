"""The Trainer: schedule, learning, exact resume, the NaN guard, step reports (all on the CPU, seconds)."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import math
from pathlib import Path

import pytest
import torch

from engine.configs.config import DataConfig, ExperimentConfig, ModelConfig, TrainConfig
from engine.text.corpus import shakespeare_text
from engine.training.device import pick_device
from engine.errors import UserError
from engine.rundir.runs import Run
from engine.training.trainer import StepReport, Trainer, lr_at


def small_config(**train) -> ExperimentConfig:
    """A model that trains a few hundred steps in about a second on one core."""
    t = dict(steps=40, batch_size=8, lr=3e-3, min_lr=3e-4, warmup_steps=5, eval_every=20, eval_batches=4,
             report_every=1, checkpoint_every=20, snapshot_every=10, sample_tokens=20, torch_threads=1,
             precision="float32")  # the same arithmetic on every CPU (`auto` takes bf16 where it multiplies it)
    t.update(train)
    return ExperimentConfig(name="small", model=ModelConfig(n_layer=1, n_head=2, d_model=32, d_ff=64, n_ctx=16),
                            train=TrainConfig(**t), data=DataConfig(corpus="test text"))


@pytest.fixture(scope="module")
def text() -> str:
    return shakespeare_text()[:40_000]


def tree_digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


# ---- learning-rate schedule ------------------------------------------------------------------

def test_lr_warms_up_linearly_then_decays_by_cosine_to_the_floor():
    t = TrainConfig(steps=1000, lr=1e-3, min_lr=1e-4, warmup_steps=100)
    warm = [lr_at(s, t) for s in range(100)]
    assert warm[0] == pytest.approx(1e-3 / 101)
    assert all(b - a == pytest.approx(1e-3 / 101) for a, b in zip(warm, warm[1:]))
    assert lr_at(100, t) == pytest.approx(1e-3)
    decay = [lr_at(s, t) for s in range(100, 1001)]
    assert all(b < a for a, b in zip(decay, decay[1:]))
    assert lr_at(550, t) == pytest.approx(5.5e-4)  # half-way down the cosine: the mean of lr and min_lr
    assert lr_at(1000, t) == pytest.approx(1e-4) and lr_at(5000, t) == pytest.approx(1e-4)


def test_lr_without_warmup_starts_at_the_peak():
    t = TrainConfig(steps=10, lr=2e-3, min_lr=0.0, warmup_steps=0)
    assert lr_at(0, t) == pytest.approx(2e-3)
    assert lr_at(10, t) == pytest.approx(0.0, abs=1e-12)


# ---- training --------------------------------------------------------------------------------

def test_a_few_hundred_steps_lower_the_validation_loss(text):
    trainer = Trainer(small_config(steps=300, eval_every=100, sample_tokens=0), text=text)
    before = trainer.evaluate()
    vals = [r.val_loss for r in trainer.steps() if r.val_loss is not None]
    assert before == pytest.approx(math.log(trainer.cfg.model.vocab_size), abs=0.3)
    assert len(vals) == 3 and vals[-1] < before - 0.8


def test_trainer_resolves_the_vocabulary_and_writes_nothing_without_a_run_dir(text, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    trainer = Trainer(small_config(steps=5), text=text)
    list(trainer.steps())
    assert trainer.cfg.model.vocab_size == trainer.tokenizer.vocab_size == len(set(text))
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(UserError, match="no run directory"):
        trainer.save_checkpoint()


def test_step_reports_are_small_owned_values_on_the_schedule(text, tmp_path):
    trainer = Trainer(small_config(steps=40, report_every=7), tmp_path / "run", text=text)
    reports = list(trainer.steps())
    assert [r.step for r in reports] == [7, 10, 14, 20, 21, 28, 30, 35, 40]  # every 7, snapshots, evals
    for r in reports:
        assert all(isinstance(getattr(r, f.name), (int, float, str, bool, type(None)))
                   for f in dataclasses.fields(StepReport) if f.name != "update_ratios")
        assert all(type(n) is str and type(v) is float for n, v in r.update_ratios)
        assert bool(r.update_ratios) == (r.step % 7 == 0)  # measured at the steps reported on the schedule
    with pytest.raises(dataclasses.FrozenInstanceError):
        reports[0].step = 3
    evals = [r for r in reports if r.val_loss is not None]
    assert [r.step for r in evals] == [20, 40] and all(r.sample for r in evals)
    assert [r.step for r in reports if r.checkpoint] == [20, 40]
    assert reports[-1].event == "done" and reports[-1].eta_s == 0 and reports[-1].message
    walls = [r.wall_s for r in reports]
    assert walls == sorted(walls) and walls[0] > 0
    assert all(r.tokens_per_s > 0 and r.lr > 0 for r in reports)


def test_steps_n_trains_n_more_steps_and_pausing_is_not_calling_next(text):
    trainer = Trainer(small_config(steps=40), text=text)
    assert [r.step for r in trainer.steps(1)] == [1]
    gen = trainer.steps(10)
    assert next(gen).step == 2
    assert trainer.step == 2  # paused: nothing trains until next() is called again
    assert [r.step for r in gen][-1] == 11


def test_weights_copy_is_a_cpu_copy_not_a_view(text):
    trainer = Trainer(small_config(steps=3), text=text)
    copy = trainer.weights_copy()
    before = copy["W_E"].clone()
    list(trainer.steps())
    assert torch.equal(copy["W_E"], before)
    assert not torch.equal(trainer.model.W_E.detach(), before)
    assert set(copy) == set(trainer.model.state_dict())


# ---- exact resume ----------------------------------------------------------------------------

def test_n_steps_stop_resume_n_steps_equals_2n_steps_bit_for_bit(text, tmp_path):
    cfg = small_config(steps=24, checkpoint_every=100, eval_every=10)
    cfg = cfg.replace(model=dataclasses.replace(cfg.model, dropout=0.1))  # dropout draws from torch's RNG
    whole = Trainer(cfg, tmp_path / "whole", text=text)
    whole_reports = list(whole.steps())

    first = Trainer(cfg, tmp_path / "split", text=text)
    gen = first.steps()
    head = list(itertools.islice(gen, 12))
    gen.close()  # stopping between steps writes a checkpoint
    assert head[-1].step == 12 and Run(tmp_path / "split").checkpoint_steps() == [10, 12]  # best, stop
    del first
    torch.manual_seed(0)  # whatever happened to the global RNG meanwhile must not matter
    resumed = Trainer.resume(tmp_path / "split", text=text)
    assert resumed.step == 12
    tail = list(resumed.steps())

    assert [r.train_loss for r in head + tail] == [r.train_loss for r in whole_reports]
    final, other = whole.weights_copy(), resumed.weights_copy()
    assert all(torch.equal(final[k], other[k]) for k in final)
    a, b = Run(tmp_path / "whole").metrics(), Run(tmp_path / "split").metrics()
    assert [(r["step"], r["train_loss"], r["val_loss"]) for r in a] == \
           [(r["step"], r["train_loss"], r["val_loss"]) for r in b]
    assert tail[-1].wall_s >= head[-1].wall_s


def test_resume_with_more_steps_extends_the_run(text, tmp_path):
    trainer = Trainer(small_config(steps=10), tmp_path / "run", text=text)
    list(trainer.steps())
    more = Trainer.resume(tmp_path / "run", text=text, steps=15)
    assert [r.step for r in more.steps()][-1] == 15
    assert Run(tmp_path / "run").config.train.steps == 15
    with pytest.raises(UserError, match="fewer than the 15 steps"):
        Trainer.resume(tmp_path / "run", text=text, steps=12)


def test_resume_refuses_a_corpus_with_another_vocabulary(text, tmp_path):
    trainer = Trainer(small_config(steps=5), tmp_path / "run", text=text)
    list(trainer.steps())
    with pytest.raises(UserError, match="vocabulary"):
        Trainer.resume(tmp_path / "run", text=text + "¤ new characters ¶" * 20)


# ---- the NaN guard ---------------------------------------------------------------------------

def poison_loss(trainer: Trainer) -> None:
    real = trainer.model.loss
    trainer.model.loss = lambda logits, targets: real(logits, targets) * float("nan")


def poison_gradient(trainer: Trainer) -> None:
    trainer.model.W_E.register_hook(lambda g: g * float("inf"))  # finite loss, infinite gradient


@pytest.mark.parametrize("poison", [poison_loss, poison_gradient])
def test_a_non_finite_loss_or_gradient_stops_before_the_weights_change(text, tmp_path, poison):
    trainer = Trainer(small_config(steps=40, checkpoint_every=10), tmp_path / "run", text=text)
    list(trainer.steps(10))  # checkpoint at step 10
    checkpoints = tree_digest(tmp_path / "run" / "checkpoints")
    weights = trainer.weights_copy()
    moments = {k: v.clone() for k, v in trainer.optimizer.state[trainer.model.W_E].items()}
    poison(trainer)
    gen = trainer.steps()
    report = next(gen)
    gen.close()  # even closing the generator here must not write over the good checkpoint
    assert report.event == "nan" and "not finite" in report.message and "step 10" in report.message
    assert report.step == trainer.step == 10
    now = trainer.weights_copy()
    assert all(torch.equal(weights[k], now[k]) for k in weights)
    assert all(torch.equal(moments[k], trainer.optimizer.state[trainer.model.W_E][k]) for k in moments)
    assert tree_digest(tmp_path / "run" / "checkpoints") == checkpoints
    assert [r["step"] for r in Run(tmp_path / "run").metrics()][-1] == 10


# ---- devices ---------------------------------------------------------------------------------

def test_pick_device_auto_and_refusals():
    assert pick_device("auto").type in ("cuda", "mps", "cpu")
    assert pick_device("cpu") == torch.device("cpu")
    with pytest.raises(UserError, match="unknown device 'tpu'"):
        pick_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(UserError, match="no CUDA"):
            pick_device("cuda")


def test_single_thread_restores_the_thread_count_even_on_error():
    from engine.training.device import single_thread

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with pytest.raises(RuntimeError), single_thread():
            assert torch.get_num_threads() == 1
            raise RuntimeError
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_the_probe_batch_holds_at_most_its_budget_of_tokens(text):
    from engine.configs.sizes import PROBE_TOKENS, probe_sequences

    assert PROBE_TOKENS == 1024
    assert [probe_sequences(n, 4) for n in (16, 256, 512, 1024, 4096)] == [4, 4, 2, 1, 1]  # whole sequences, ≥ 1
    cfg = small_config()
    cfg = cfg.replace(model=dataclasses.replace(cfg.model, n_ctx=512))
    probe = Trainer(cfg, text=text).probe
    assert probe.x.shape == (2, 512) and probe.induction.shape == (2, 512)
