"""Mixed precision and torch.compile for the training step (engine/training/acceleration.py), on the CPU.

CUDA is absent here: which precision `auto` picks on a GPU is checked by stubbing the two questions torch
answers about the GPU (`is_bf16_supported`), never by pretending a tensor lives there. The compile
fallback is checked by making torch.compile fail (a missing toolchain fails the same way, at the first
call), and the compiled path itself with dynamo's "eager" backend, which traces the model as inductor
would but needs no C++ compiler and seconds instead of a minute.
"""

from __future__ import annotations

import itertools
import os

import pytest
import torch

from engine import user_cache
from engine.training import acceleration
from engine.training.acceleration import PrecisionError, autocast_dtype
from engine.cli import main
from engine.configs.config import ExperimentConfig, TrainConfig
from engine.text.corpus import shakespeare_text
from engine.rundir.runs import Run
from engine.training.trainer import Trainer
from tests.engine.training.test_trainer import small_config

CPU, CUDA, MPS = torch.device("cpu"), torch.device("cuda"), torch.device("mps")


@pytest.fixture(scope="module")
def text() -> str:
    return shakespeare_text()[:40_000]


def train_losses(trainer: Trainer, n: int) -> list[float]:
    return [r.train_loss for r in itertools.islice(trainer.steps(), n)]


@pytest.mark.parametrize("bf16_gpu", [True, False])
@pytest.mark.parametrize("bf16_cpu", [True, False])
def test_auto_is_bf16_only_where_the_hardware_multiplies_it(monkeypatch, bf16_gpu, bf16_cpu):
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: bf16_gpu)
    monkeypatch.setattr(acceleration, "cpu_multiplies_bf16", lambda: bf16_cpu)
    assert autocast_dtype("auto", CUDA) is (torch.bfloat16 if bf16_gpu else None)
    assert autocast_dtype("auto", CPU) is (torch.bfloat16 if bf16_cpu else None)
    assert autocast_dtype("auto", MPS) is None
    assert autocast_dtype("float32", CUDA) is None and autocast_dtype("bf16", CPU) is torch.bfloat16
    if bf16_gpu:
        assert autocast_dtype("bf16", CUDA) is torch.bfloat16
    else:
        with pytest.raises(PrecisionError, match="this GPU has no bfloat16"):
            autocast_dtype("bf16", CUDA)
    with pytest.raises(PrecisionError, match="not on mps"):
        autocast_dtype("bf16", MPS)


def test_precision_and_compile_round_trip_and_validate():
    cfg = ExperimentConfig(train=TrainConfig(precision="bf16", compile=True))
    assert ExperimentConfig.from_toml(cfg.to_toml()) == cfg
    assert [p.field for p in TrainConfig(precision="fp16").validate()] == ["train.precision"]
    assert ExperimentConfig.from_toml("").train.precision == "auto" and not TrainConfig().compile


def test_bf16_trains_near_float32_and_keeps_float32_weights(text, tmp_path):
    fp32 = Trainer(small_config(precision="float32"), text=text)
    bf16 = Trainer(small_config(precision="bf16"), tmp_path / "run", text=text)
    assert fp32.autocast_dtype is None and bf16.autocast_dtype is torch.bfloat16
    want, got = train_losses(fp32, 5), train_losses(bf16, 5)
    assert got != want  # the matmuls really ran in bfloat16 ...
    assert got == pytest.approx(want, abs=0.05)  # ... and bfloat16 rounding moves the loss only a little
    bf16.save_checkpoint()
    assert {w.dtype for w in Run(tmp_path / "run").load_weights().values()} == {torch.float32}
    assert {p.dtype for p in bf16.model.parameters()} == {torch.float32}
    assert bf16.evaluate() == pytest.approx(bf16.evaluate())  # validation runs in float32, no autocast


def test_a_model_that_cannot_compile_trains_eagerly_with_one_line_saying_so(text, monkeypatch):
    def broken_compile(model, **kwargs):
        def fail(*args, **kw):
            raise RuntimeError("InductorError: no working C++ compiler found\nmore detail")
        return fail

    eager = Trainer(small_config(), text=text)
    monkeypatch.setattr(torch, "compile", broken_compile)
    fallback = Trainer(small_config(compile=True), text=text)
    assert fallback.compile_message == ("torch.compile could not compile this model (InductorError: no working "
                                        "C++ compiler found); training runs eagerly")
    assert fallback._forward is fallback.model
    assert train_losses(fallback, 4) == train_losses(eager, 4)  # the failed trial left no trace


def test_a_compiled_step_computes_what_the_eager_step_does(text, monkeypatch):
    monkeypatch.setattr(acceleration, "COMPILE_BACKEND", "eager")
    monkeypatch.delenv(acceleration.INDUCTOR_CACHE, raising=False)
    eager = Trainer(small_config(), text=text)
    compiled = Trainer(small_config(compile=True), text=text)
    assert compiled.compile_message is None and compiled._forward is not compiled.model
    assert train_losses(compiled, 3) == pytest.approx(train_losses(eager, 3), rel=1e-6)
    assert compiled.model.state_dict().keys() == eager.model.state_dict().keys()  # no "_orig_mod." names
    assert os.environ[acceleration.INDUCTOR_CACHE] == str(user_cache.root() / "torch-compile")  # kept across runs


def test_a_compile_cache_the_user_chose_stays(monkeypatch, tmp_path):
    monkeypatch.setenv(acceleration.INDUCTOR_CACHE, str(tmp_path))
    monkeypatch.setattr(torch, "compile", lambda model, **kw: (_ for _ in ()).throw(RuntimeError("no compiler")))
    x = y = torch.zeros(1, 4, dtype=torch.long)
    _, message = acceleration.compile_or_eager(torch.nn.Linear(1, 1), x, y, None)
    assert message and os.environ[acceleration.INDUCTOR_CACHE] == str(tmp_path)


def test_cli_precision_and_compile_reach_the_run_and_can_change_on_resume(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(torch, "compile", lambda model, **kw: (_ for _ in ()).throw(RuntimeError("no compiler")))
    config = tmp_path / "small.toml"
    config.write_text(small_config(steps=4).replace(data=small_config().data.__class__()).to_toml())
    run_dir = tmp_path / "run"
    assert main(["train", "--config", str(config), "--run", str(run_dir), "--precision", "bf16", "--compile"]) == 0
    out, err = capsys.readouterr()
    assert "bf16" in out and err.strip() == ("note: torch.compile could not compile this model (no compiler); "
                                             "training runs eagerly")
    assert Run(run_dir).config.train.precision == "bf16" and Run(run_dir).config.train.compile
    assert main(["train", "--run", str(run_dir), "--steps", "6", "--precision", "float32", "--no-compile"]) == 0
    out, err = capsys.readouterr()
    assert "resuming at step 4" in out and "float32" in out and not err
    assert Run(run_dir).config.train.precision == "float32" and not Run(run_dir).config.train.compile
