"""Paired runs: a fork shares its parent's initial weights and batch order, so the only difference is the
setting it changed. A fork that changes nothing training reads retraces its parent exactly."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from engine.configs.config import ConfigError, parse_setting
from engine.errors import UserError
from engine.rundir.fork import fork_record, fork_run
from engine.rundir.runs import Run
from engine.training.trainer import Trainer
from tests.engine.training.test_trainer import small_config


@pytest.fixture(scope="module")
def text() -> str:
    from engine.text.corpus import shakespeare_text

    return shakespeare_text()[:40_000]


@pytest.fixture(scope="module")
def parent(text, tmp_path_factory):
    path = tmp_path_factory.mktemp("parent") / "run"
    list(Trainer(small_config(steps=20, checkpoint_every=10, eval_every=10), path, text=text).steps())
    return Run(path)


def first_batch(trainer: Trainer) -> torch.Tensor:
    gen = torch.Generator()
    gen.set_state(trainer.batch_gen.get_state())  # a copy: the trainer's own generator is not advanced
    return trainer.dataset.get_batch("train", trainer.cfg.train.batch_size, trainer.cfg.model.n_ctx, gen)[0]


def equal_weights(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_a_fork_at_step_0_starts_from_the_parents_weights_and_first_batch(parent, text, tmp_path):
    cfg = parse_setting("train.lr=1e-3", parent.config)
    child = fork_run(parent.path, tmp_path / "fork", cfg, 0, text=text)
    assert child.step == 0 and equal_weights(child.weights_copy(), parent.load_weights(0))
    fresh = Trainer(parent.config, text=text)  # the parent as it was before its first step
    assert torch.equal(first_batch(child), first_batch(fresh))
    assert fork_record(tmp_path / "fork") == {"parent": str(parent.path.resolve()), "step": 0,
                                              "changed": {"train.lr": [3e-3, 1e-3]}, "optimizer_state": "fresh"}
    list(child.steps())
    assert not equal_weights(Run(tmp_path / "fork").load_weights(20), parent.load_weights(20))
    fork_run(parent.path, tmp_path / "fork2", cfg, 0, text=text)
    resumed = Trainer.resume(tmp_path / "fork2", text=text)  # as the app's Train continues an opened fork
    assert resumed.step == 0 and torch.equal(first_batch(resumed), first_batch(fresh))
    assert equal_weights(resumed.weights_copy(), parent.load_weights(0))


def test_a_fork_at_step_0_keeps_its_parents_probe_batch(parent, text, tmp_path):
    """An imported run's probe batch is the importer's, not the one a fresh trainer draws: its fork's G at step 0
    (measured on the fork's probe) differed from its parent's for the same weights (issue 37's Xvfb walk)."""
    import json
    import shutil

    imported = tmp_path / "imported"
    shutil.copytree(parent.path, imported)
    probe = json.loads((imported / "probe.json").read_text())
    probe["x"] = [row[::-1] for row in probe["x"]]  # another batch of the same shape, as an importer's
    (imported / "probe.json").write_text(json.dumps(probe))
    fork_run(imported, tmp_path / "fork", parse_setting("train.lr=1e-3", parent.config), 0, text=text)
    assert (Run(tmp_path / "fork").probe().x == Run(imported).probe().x).all()
    assert not (Run(tmp_path / "fork").probe().x == parent.probe().x).all()


@pytest.mark.parametrize("step", [0, 10])
def test_a_fork_keeps_its_parents_tokenizer(parent, text, tmp_path, step):
    """As an imported run's: a tokenizer fitted on the fork's corpus (here one without every character of the
    parent's) has another vocabulary, which the parent's weights do not fit."""
    short = text[:300]
    assert len(set(short)) < parent.config.model.vocab_size
    child = fork_run(parent.path, tmp_path / "fork", parse_setting("train.lr=1e-3", parent.config), step, text=short)
    assert child.tokenizer.vocab == parent.tokenizer.vocab and child.step == step


@pytest.mark.parametrize("step", [0, 10])
def test_a_fork_that_changes_nothing_training_reads_retraces_its_parent(parent, text, tmp_path, step):
    cfg = parse_setting("train.sample_tokens=5", parent.config)
    child = fork_run(parent.path, tmp_path / "fork", cfg, step, text=text)
    assert child.step == step and equal_weights(child.weights_copy(), parent.load_weights(step))
    if step:
        _, state = parent.load_checkpoint(step)
        assert torch.equal(child.batch_gen.get_state(), state["batch_rng"])
        assert fork_record(tmp_path / "fork")["optimizer_state"] == "carried"
        assert [r["step"] for r in Run(tmp_path / "fork").metrics()] == list(range(1, step + 1))
    list(child.steps())
    assert equal_weights(Run(tmp_path / "fork").load_weights(20), parent.load_weights(20))


def test_a_fork_at_a_checkpoint_takes_the_new_hyperparameters(parent, text, tmp_path):
    cfg = parse_setting("train.beta2=0.95", parent.config)
    child = fork_run(parent.path, tmp_path / "fork", cfg, 10, text=text)
    assert all(g["betas"] == (0.9, 0.95) for g in child.optimizer.param_groups)
    assert child.optimizer.state  # the moments came along


@pytest.mark.parametrize("setting, match", [("train.seed=7", "seed"), ("model.d_model=64", "shapes"),
                                            ("data.val_fraction=0.2", "corpus")])
def test_changes_that_break_the_pairing_are_refused(parent, text, tmp_path, setting, match):
    with pytest.raises(UserError, match=match):
        fork_run(parent.path, tmp_path / "fork", parse_setting(setting, parent.config), 0, text=text)
    assert not (tmp_path / "fork").exists()


def test_a_step_without_a_checkpoint_and_a_bad_setting_are_one_line(parent, text, tmp_path):
    with pytest.raises(UserError, match="no checkpoint at step 5"):
        fork_run(parent.path, tmp_path / "fork", parse_setting("train.lr=1e-3", parent.config), 5, text=text)
    with pytest.raises(ConfigError):
        parse_setting("train.lr", parent.config)
    with pytest.raises(ConfigError, match="must be float"):
        parse_setting("train.lr=fast", parent.config)
    assert dataclasses.replace(parent.config.model, activation="relu") == \
        parse_setting("model.activation=relu", parent.config).model


def test_the_command_line_forks_with_a_setting_changed(text, tmp_path, capsys):
    from engine.cli import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(text, encoding="utf-8")
    cfg = small_config(steps=10, eval_every=5)
    cfg = cfg.replace(data=dataclasses.replace(cfg.data, corpus=str(corpus)))
    list(Trainer(cfg, tmp_path / "parent", text=text).steps())
    argv = ["train", "--fork", str(tmp_path / "parent"), "--set", "model.activation=relu", "--run",
            str(tmp_path / "child")]
    assert main(argv) == 0
    assert "model.activation gelu -> relu" in capsys.readouterr().out
    child = Run(tmp_path / "child")
    assert child.config.model.activation == "relu" and child.metrics()[-1]["step"] == 10
    assert equal_weights(child.load_weights(0), Run(tmp_path / "parent").load_weights(0))
    assert main(argv[:3] + ["--set", "train.seed=1", "--run", str(tmp_path / "other")]) == 2
    assert "seed" in capsys.readouterr().err
