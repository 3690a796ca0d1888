"""Configs: validation names the field, TOML round-trips, and the closed parameter formula equals torch."""

import dataclasses
import random

import pytest

from engine.configs.config import ConfigError, DataConfig, ExperimentConfig, ModelConfig, TrainConfig
from engine.configs.sizes import parameter_count
from engine.model.gpt import GPT
from engine.configs.presets import load_preset, preset_names


def fields_of(problems):
    return {p.field for p in problems}


def test_heads_must_divide_d_model():
    assert "model.n_head" in fields_of(ModelConfig(n_head=3, d_model=64).validate())


@pytest.mark.parametrize("change, field", [
    ({"n_layer": 0}, "model.n_layer"),
    ({"d_ff": -1}, "model.d_ff"),
    ({"n_ctx": 1}, "model.n_ctx"),
    ({"band": 0}, "model.band"),
    ({"dropout": 1.0}, "model.dropout"),
    ({"mask": "diagonal"}, "model.mask"),
    ({"norm": "batch"}, "model.norm"),
    ({"pos_encoding": "sinusoidal", "d_model": 63, "n_head": 1}, "model.d_model"),
])
def test_model_problems_name_their_field(change, field):
    assert field in fields_of(dataclasses.replace(ModelConfig(), **change).validate())


@pytest.mark.parametrize("change, field", [
    ({"lr": 0.0}, "train.lr"), ({"batch_size": 0}, "train.batch_size"),
    ({"min_lr": 1.0}, "train.min_lr"), ({"device": "tpu"}, "train.device"),
    ({"beta2": 1.0}, "train.beta2"), ({"snapshot_budget_mb": 0.0}, "train.snapshot_budget_mb"),
])
def test_train_problems_name_their_field(change, field):
    assert field in fields_of(dataclasses.replace(TrainConfig(), **change).validate())


def test_every_problem_is_reported_at_once():
    cfg = ExperimentConfig(model=ModelConfig(n_layer=0, n_head=3), train=TrainConfig(lr=-1),
                           data=DataConfig(tokenizer="bytes"))
    assert {"model.n_layer", "model.n_head", "train.lr", "data.tokenizer"} <= fields_of(cfg.validate())


def test_defaults_and_presets_are_valid():
    assert ExperimentConfig().validate() == []
    for name in preset_names():
        assert load_preset(name).validate() == [], name


def test_toml_round_trip():
    cfg = ExperimentConfig(name="x", model=ModelConfig(mask="banded", band=3, tied=True, dropout=0.1),
                           train=TrainConfig(lr=2e-4, steps=7), data=DataConfig(corpus="/tmp/a b.txt"))
    assert ExperimentConfig.from_toml(cfg.to_toml()) == cfg


def test_a_config_written_before_gpt2s_parts_builds_the_model_it_did():
    old = ("[model]\nn_layer = 1\nn_head = 2\nd_model = 8\nd_ff = 16\nn_ctx = 4\nvocab_size = 5\n"
           "activation = \"gelu\"\n")
    m = ExperimentConfig.from_toml(old).model
    assert (m.attn_bias, m.activation, m.ln_eps) == (False, "gelu", 1e-5)
    assert not any(".b_Q" in k or ".b_O" in k for k in GPT(m).state_dict())
    gpt2 = dataclasses.replace(m, attn_bias=True, activation="gelu_tanh", ln_eps=1e-6)
    assert ExperimentConfig.from_toml(ExperimentConfig(model=gpt2).to_toml()).model == gpt2


def test_toml_accepts_ints_for_floats_and_partial_sections():
    cfg = ExperimentConfig.from_toml("[train]\nlr = 1\n")
    assert cfg.train.lr == 1.0 and cfg.model == ModelConfig()


@pytest.mark.parametrize("text", ["[model]\nn_layer = 'two'\n", "[model]\nwidth = 3\n", "[optim]\n",
                                  "model = 3\n", "[model\n"])
def test_bad_toml_is_a_config_error(text):
    with pytest.raises(ConfigError):
        ExperimentConfig.from_toml(text)


def test_missing_config_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        ExperimentConfig.load(tmp_path / "nope.toml")


def torch_count(cfg: ModelConfig) -> int:
    return sum(p.numel() for p in GPT(cfg).parameters())


@pytest.mark.parametrize("name", preset_names())
def test_parameter_formula_equals_torch_for_presets(name):
    cfg = dataclasses.replace(load_preset(name).model, vocab_size=80)
    assert parameter_count(cfg) == torch_count(cfg)


def test_parameter_formula_equals_torch_for_random_configs():
    rng = random.Random(0)
    for _ in range(40):
        h = rng.choice([1, 2, 4])
        cfg = ModelConfig(
            n_layer=rng.randint(1, 3), n_head=h, d_model=h * rng.choice([2, 4, 6]),
            d_ff=rng.randint(1, 40), n_ctx=rng.randint(2, 20), vocab_size=rng.randint(2, 50),
            pos_encoding=rng.choice(["sinusoidal", "learned", "none"]),
            norm=rng.choice(["pre", "post", "none"]), residual=rng.random() < 0.5,
            tied=rng.random() < 0.5, activation=rng.choice(["relu", "gelu", "gelu_tanh"]),
            attn_bias=rng.random() < 0.5)
        assert cfg.validate() == []
        assert parameter_count(cfg) == torch_count(cfg), cfg
