"""Each weight's update-to-weight ratio (engine/training/update_ratio.py): ‖ΔW‖ / ‖W‖ of the real step, measured a
few weights at a time in rotation, reported with the step and logged in the run's updates.jsonl."""

from __future__ import annotations

import dataclasses
import itertools

import torch

from engine.rundir.fork import fork_run
from engine.rundir.runs import Run
from engine.training.trainer import Trainer
from engine.training.update_ratio import UpdateRatios
from tests.engine.training.test_trainer import small_config, text  # noqa: F401  (text is a fixture)


def test_ratios_are_each_weights_move_over_its_size_and_every_weight_comes_round():
    torch.manual_seed(0)
    weights = [("a", torch.randn(30, 20)), ("b", torch.randn(50)), ("big", torch.randn(40, 40)), ("c", torch.randn(7))]
    ratios = UpdateRatios(weights, every=8, min_budget=4 * 700)  # 700 floats a step: "big" (1,600) goes alone
    seen: dict[str, list[bool]] = {}
    for step in range(6):
        before = {n: w.clone() for n, w in weights}
        ratios.before()
        for _, w in weights:  # an optimizer's step
            w.add_(torch.randn_like(w), alpha=0.01 * (step + 1))
        got = ratios.after()
        for name, r in got.items():
            want = (before[name] - dict(weights)[name]).norm() / before[name].norm()
            assert abs(r - float(want)) <= 1e-6 * float(want), name
            seen.setdefault(name, []).append(True)
        assert "big" not in got or set(got) == {"big"}  # a weight over the budget is measured alone
    assert set(seen) == {"a", "b", "big", "c"} and all(len(v) >= 2 for v in seen.values())


def test_training_reports_and_logs_the_ratios_and_a_fork_keeps_them(text, tmp_path):  # noqa: F811
    trainer = Trainer(small_config(steps=12, checkpoint_every=6), tmp_path / "run", text=text)
    reports = list(itertools.islice(trainer.steps(), 12))
    names = {n for n, _ in trainer.model.named_parameters()}
    measured = [dict(r.update_ratios) for r in reports]
    assert all(m and set(m) <= names for m in measured)
    assert all(0 < v < 1 for m in measured[4:] for v in m.values())  # biases start at zero: NaN at first
    assert set().union(*measured) == names  # the rotation reaches every weight
    run = Run(tmp_path / "run")
    assert run.updates() == [(r.step, {n: v for n, v in r.update_ratios if v == v}) for r in reports]
    changed = run.config.replace(train=dataclasses.replace(run.config.train, lr=1e-3))
    fork_run(run.path, tmp_path / "fork", changed, step=6, text=text)
    assert Run(tmp_path / "fork").updates() == run.updates()[:6]
