"""The optimizer as a choice (engine/training/optimizers.py): AdamW, SGD and Muon built from TrainConfig, Muon equal to
torch.optim.Muon as its documentation sets it up, exact resume for each, and bad settings named by field."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
import torch

from engine.cli import main
from engine.configs.config import ExperimentConfig, ModelConfig, TrainConfig
from engine.model.gpt import GPT
from engine.training.optimizers import MuonWithAdamW, adam_second_moments, make_optimizer, muon_parameters
from engine.rundir.runs import Run
from engine.training.schedule import lr_at
from engine.training.trainer import Trainer
from tests.engine.training.test_trainer import small_config, text  # noqa: F401  (text is a fixture)

OPTIMIZERS = ("adamw", "sgd", "muon")


def model() -> GPT:
    torch.manual_seed(0)
    return GPT(ModelConfig(n_layer=2, n_head=2, d_model=16, d_ff=32, n_ctx=8, vocab_size=11, tied=False))


def gradients(m: GPT, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    for p in m.parameters():
        p.grad = torch.randn(p.shape, generator=gen)


@pytest.mark.parametrize("ns_steps", [5, 3])  # torch's default, and fewer (the cost of a Muon step is in them)
def test_our_muon_steps_equal_torch_muon_set_up_as_its_documentation_says(ns_steps):
    t = TrainConfig(optimizer="muon", lr=3e-3, muon_lr=0.05, muon_momentum=0.9, muon_ns_steps=ns_steps,
                    weight_decay=0.1, steps=10, warmup_steps=2)
    ours, ref = model(), model()
    opt = make_optimizer(ours, t)
    # torch's Muon docstring: Muon on the hidden 2-D matrices, AdamW on biases, embeddings and the rest
    hidden = [p for n, p in ref.named_parameters() if n.startswith("blocks.") and p.ndim == 2]
    rest = [p for n, p in ref.named_parameters() if not (n.startswith("blocks.") and p.ndim == 2)]
    ref_muon = torch.optim.Muon(hidden, lr=t.muon_lr, weight_decay=t.weight_decay, momentum=t.muon_momentum,
                                ns_steps=ns_steps)
    ref_adamw = torch.optim.AdamW([{"params": [p for p in rest if p.ndim == 2], "weight_decay": t.weight_decay},
                                   {"params": [p for p in rest if p.ndim < 2], "weight_decay": 0.0}],
                                  lr=t.lr, betas=(t.beta1, t.beta2), fused=True)  # ours is fused too
    for step in range(5):
        scale = lr_at(step, t) / t.lr
        for g in opt.param_groups:
            g["lr"] = lr_at(step, t) * g["lr_scale"]
        for g in ref_muon.param_groups:
            g["lr"] = t.muon_lr * scale
        for g in ref_adamw.param_groups:
            g["lr"] = t.lr * scale
        gradients(ours, step), gradients(ref, step)
        opt.step(), ref_muon.step(), ref_adamw.step()
    a, b = dict(ours.named_parameters()), dict(ref.named_parameters())
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert isinstance(opt, MuonWithAdamW) and set(muon_parameters(ours)) == {
        n for n, p in ours.named_parameters() if n.startswith("blocks.") and p.ndim == 2}
    assert not any(n.startswith(("W_E", "W_U", "W_P")) for n in muon_parameters(ours))


def test_muon_moves_a_block_matrix_by_an_orthogonalised_step():
    m = model()
    t = TrainConfig(optimizer="muon", muon_lr=0.1, weight_decay=0.0)
    opt = make_optimizer(m, t)
    w0 = m.blocks[0].W_Q.detach().clone()
    gradients(m, 0)
    opt.step()
    s = torch.linalg.svdvals((w0 - m.blocks[0].W_Q.detach()) / 0.1)
    assert 0.5 < s.min() and s.max() < 1.5  # Newton–Schulz's quintic leaves singular values in ~(0.7, 1.2)


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_each_optimizer_trains_and_carries_its_own_state(name):
    m = model()
    opt = make_optimizer(m, TrainConfig(optimizer=name))
    gradients(m, 0)
    opt.step()
    state = opt.state_dict()
    if name == "muon":
        assert set(state) == {"muon", "adamw"}
        assert all("momentum_buffer" in s for s in state["muon"]["state"].values())
    elif name == "sgd":
        assert isinstance(opt, torch.optim.SGD) and all("momentum_buffer" in s for s in state["state"].values())
    else:
        assert isinstance(opt, torch.optim.AdamW)
    assert bool(adam_second_moments(opt)) == (name != "sgd")


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_n_steps_resume_n_steps_equals_2n_steps_for_each_optimizer(text, tmp_path, name):  # noqa: F811
    cfg = small_config(steps=16, checkpoint_every=100, eval_every=8, optimizer=name, lr=0.05 if name == "sgd" else 3e-3)
    whole = Trainer(cfg, tmp_path / "whole", text=text)
    whole_losses = [r.train_loss for r in whole.steps()]
    first = Trainer(cfg, tmp_path / "split", text=text)
    gen = first.steps()
    head = [r.train_loss for r in itertools.islice(gen, 8)]
    gen.close()
    resumed = Trainer.resume(tmp_path / "split", text=text)
    tail = [r.train_loss for r in resumed.steps()]
    assert head + tail == whole_losses
    a, b = whole.weights_copy(), resumed.weights_copy()
    assert all(torch.equal(a[k], b[k]) for k in a)
    sa, sb = whole.optimizer.state_dict(), resumed.optimizer.state_dict()
    assert repr(sa) == repr(sb)  # every moment and buffer, bit for bit (repr shows tensors in full at this size)
    assert Run(tmp_path / "split").config.train.optimizer == name


def test_resuming_with_another_optimizer_state_is_refused(text, tmp_path):  # noqa: F811
    m = model()
    with pytest.raises(ValueError, match="another optimizer"):
        make_optimizer(m, TrainConfig(optimizer="muon")).load_state_dict(
            make_optimizer(m, TrainConfig(optimizer="adamw")).state_dict())


@pytest.mark.parametrize("change, field", [
    ({"optimizer": "adam"}, "train.optimizer"), ({"momentum": 1.0}, "train.momentum"),
    ({"muon_momentum": -0.1}, "train.muon_momentum"), ({"muon_lr": 0.0}, "train.muon_lr"),
    ({"muon_ns_steps": 0}, "train.muon_ns_steps"), ({"muon_ns_steps": 100}, "train.muon_ns_steps"),
    ({"adam_eps": 0.0}, "train.adam_eps"), ({"muon_lr": float("nan")}, "train.muon_lr"),
])
def test_bad_optimizer_settings_name_their_field(change, field):
    assert [p.field for p in dataclasses.replace(TrainConfig(), **change).validate()] == [field]


def test_optimizer_settings_round_trip_through_toml():
    cfg = ExperimentConfig(train=TrainConfig(optimizer="muon", muon_lr=0.03, muon_momentum=0.9, muon_ns_steps=6,
                                             momentum=0.5, adam_eps=1e-6))
    assert ExperimentConfig.from_toml(cfg.to_toml()) == cfg
    assert ExperimentConfig.from_toml("[train]\noptimizer = 'sgd'\n").train.optimizer == "sgd"


def test_cli_bad_optimizer_is_one_line_naming_the_field(tmp_path, capsys):
    rc = main(["train", "--preset", "tiny", "--optimizer", "adam", "--steps", "2", "--run", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "train.optimizer" in err and "muon" in err
    assert not (tmp_path / "r").exists()


def test_cli_optimizer_option_reaches_the_run(tmp_path, capsys):
    toml = small_config(steps=2, eval_every=2, checkpoint_every=2, snapshot_every=2).to_toml()
    (tmp_path / "c.toml").write_text(toml.replace('corpus = "test text"', 'corpus = "shakespeare"'))
    rc = main(["train", "--config", str(tmp_path / "c.toml"), "--optimizer", "muon", "--run", str(tmp_path / "r")])
    capsys.readouterr()
    assert rc == 0 and Run(tmp_path / "r").config.train.optimizer == "muon"
    _, state = Run(tmp_path / "r").load_checkpoint()
    assert set(state["optimizer"]) == {"muon", "adamw"}


@pytest.mark.parametrize("name,momentum", [("adamw", 0.9), ("sgd", 0.9), ("sgd", 0.0), ("muon", 0.9)])
def test_the_memory_estimate_counts_the_state_each_optimizer_keeps(name, momentum):
    from engine.configs.sizes import optimizer_state_floats

    m = model()
    t = TrainConfig(optimizer=name, momentum=momentum)
    opt = make_optimizer(m, t)
    gradients(m, 0)
    opt.step()
    kept = sum(v.numel() for s in opt.state.values() for k, v in s.items() if torch.is_tensor(v) and k != "step")
    assert optimizer_state_floats(ExperimentConfig(model=m.cfg, train=t)) == kept
