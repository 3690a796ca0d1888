"""The schedule: cosine and warm-up–stable–decay learning rates, and Muon's momentum warm-up, set on every
parameter group by apply_schedule."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from engine.configs.config import TrainConfig
from engine.training.optimizers import make_optimizer
from engine.training.schedule import MUON_MOMENTUM_START, apply_schedule, lr_at, muon_momentum_at


def test_wsd_holds_the_peak_then_decays_linearly_to_the_floor_over_the_cooldown():
    t = TrainConfig(steps=100, lr=1.0, min_lr=0.1, warmup_steps=10, schedule="wsd", cooldown_frac=0.4)
    assert lr_at(0, t) == pytest.approx(1 / 11) and lr_at(9, t) == pytest.approx(10 / 11)
    assert [lr_at(s, t) for s in (10, 30, 60)] == [1.0, 1.0, 1.0]
    assert lr_at(80, t) == pytest.approx(0.1 + 0.5 * 0.9)  # half-way through the last 40 steps
    assert lr_at(100, t) == pytest.approx(0.1) and lr_at(150, t) == pytest.approx(0.1)
    cosine = dataclasses.replace(t, schedule="cosine")
    assert lr_at(30, cosine) < 1.0 and lr_at(100, cosine) == pytest.approx(0.1)


def test_muon_momentum_warms_up_and_apply_schedule_sets_it_on_muons_groups_only():
    t = TrainConfig(optimizer="muon", muon_momentum=0.95, muon_momentum_warmup=100, lr=1e-3, muon_lr=0.02)
    assert muon_momentum_at(0, t) == MUON_MOMENTUM_START
    assert muon_momentum_at(50, t) == pytest.approx(0.9) and muon_momentum_at(500, t) == 0.95
    assert muon_momentum_at(0, dataclasses.replace(t, muon_momentum_warmup=0)) == 0.95
    model = torch.nn.Module()
    model.blocks = torch.nn.Linear(4, 4)  # a "blocks." matrix for Muon, and its bias for AdamW
    opt = make_optimizer(model, t)
    lr = apply_schedule(opt, 50, t)
    assert [g["momentum"] for g in opt.muon.param_groups] == [pytest.approx(0.9)]
    assert opt.muon.param_groups[0]["lr"] == pytest.approx(lr * 20)
    assert all("momentum" not in g for g in opt.adamw.param_groups)


def test_a_schedule_or_cooldown_that_does_not_exist_is_named_beside_its_field():
    fields = {p.field for p in TrainConfig(schedule="linear", cooldown_frac=0.0, muon_momentum_warmup=-1).validate()}
    assert {"train.schedule", "train.cooldown_frac", "train.muon_momentum_warmup"} <= fields
