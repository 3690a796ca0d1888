"""The builder's draft before any run: the model Train starts from, built without training."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from engine.analysis.door import Door
from engine.analysis.draft import DRAFT_MAX_PARAMETERS, build_draft, draft_of
from engine.analysis import questions as q
from engine.configs.config import DataConfig, ExperimentConfig, ModelConfig, TrainConfig
from engine.errors import UserError
from engine.training.trainer import Trainer


def config(tmp_path, **model) -> ExperimentConfig:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("First Citizen:\nBefore we proceed any further, hear me speak.\n" * 40, encoding="utf-8")
    m = dict(n_layer=2, n_head=2, d_model=16, d_ff=32, n_ctx=16)
    m.update(model)
    return ExperimentConfig(name="draft", model=ModelConfig(**m),
                            train=TrainConfig(steps=2, batch_size=2, seed=7, torch_threads=1, device="cpu"),
                            data=DataConfig(corpus=str(corpus)))


def test_the_draft_is_step_0_of_the_run_train_starts_bit_for_bit(tmp_path):
    cfg = config(tmp_path)
    model, tokenizer = build_draft(cfg)
    trainer = Trainer(cfg, tmp_path / "run")
    assert tokenizer.vocab_size == trainer.tokenizer.vocab_size
    want = trainer.model.state_dict()
    got = model.state_dict()
    assert got.keys() == want.keys()
    for name in want:
        assert torch.equal(got[name], want[name]), name


def test_building_a_draft_leaves_the_processes_generator_as_it_was(tmp_path):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    build_draft(config(tmp_path))
    assert torch.equal(torch.rand(3), expected)


def test_only_what_decides_the_weights_names_a_draft(tmp_path):
    cfg = config(tmp_path)
    faster = cfg.replace(name="other", train=dataclasses.replace(cfg.train, lr=1e-2, steps=99))
    assert draft_of(faster) == draft_of(cfg)
    assert draft_of(cfg.replace(train=dataclasses.replace(cfg.train, seed=8))) != draft_of(cfg)
    assert draft_of(cfg.replace(model=dataclasses.replace(cfg.model, n_layer=3))) != draft_of(cfg)


def test_a_draft_that_cannot_be_built_says_why(tmp_path):
    cfg = config(tmp_path)
    with pytest.raises(UserError, match="problem"):
        build_draft(cfg.replace(model=dataclasses.replace(cfg.model, n_head=3)))  # 3 heads do not divide 16
    with pytest.raises(UserError, match="not found"):
        build_draft(cfg.replace(data=dataclasses.replace(cfg.data, corpus=str(tmp_path / "missing.txt"))))
    big = cfg.replace(model=dataclasses.replace(cfg.model, n_layer=12, d_model=512, d_ff=2048, n_head=8))
    with pytest.raises(UserError, match=f"{DRAFT_MAX_PARAMETERS:,}"):
        build_draft(big)


def test_the_door_answers_the_draft_tabs_from_one_model(tmp_path):
    door, cfg = Door(), draft_of(config(tmp_path, pos_encoding="sinusoidal"))
    attention = q.Attention(q.Draft(cfg), "Before we").answer(door)
    model = door.draft(cfg)[0]
    masks = q.Masks(q.Draft(cfg), "Before we", 3).answer(door)
    positional = q.Positional(q.Draft(cfg), 2).answer(door)
    assert door.draft(cfg)[0] is model  # built once for the three tabs
    assert attention.step == masks.step == positional.step == 0
    assert attention.maps.tokens[:6] == ("B", "e", "f", "o", "r", "e")
    torch.testing.assert_close(torch.from_numpy(positional.P), model.W_P.detach().double())
