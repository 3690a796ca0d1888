"""Paired runs compared at one step through their RunAnalysis objects: attention maps, a weight's
coefficient G and the weight itself of A and B, and B − A; and the same answers through the door."""

from __future__ import annotations

import numpy as np
import pytest

from engine.analysis import door
from engine.analysis import pair as pr
from engine.analysis import questions as q
from engine.analysis.run_analysis import RunAnalysis
from engine.errors import UserError
from engine.configs.config import parse_setting
from engine.rundir.fork import fork_run
from engine.model.probes import attention_maps, prompt_ids
from engine.rundir.runs import Run
from engine.training.trainer import Trainer
from tests.engine.training.test_trainer import small_config


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from engine.text.corpus import shakespeare_text

    text = shakespeare_text()[:40_000]
    root = tmp_path_factory.mktemp("pair")
    list(Trainer(small_config(steps=20, snapshot_every=10), root / "a", text=text).steps())
    cfg = parse_setting("train.lr=1e-2", Run(root / "a").config)
    list(fork_run(root / "a", root / "b", cfg, 0, text=text).steps())
    return root / "a", root / "b"


@pytest.fixture
def pair(runs):
    return RunAnalysis(runs[0]), RunAnalysis(runs[1])


def test_the_choices_are_the_common_steps_and_the_weights(pair):
    a, b = pair
    got = pr.choices(a, b)
    assert got.steps == [0, 10, 20] and "blocks.0.W_Q" in got.weights and sorted(got.weights) == sorted(a.weights(0))
    assert not got.parent_second and pr.choices(b, a).parent_second  # b is a's fork: a reads as A


def test_attention_is_each_runs_own_and_equal_at_the_start(pair):
    a, b = pair
    assert np.nanmax(np.abs(pr.attention(a, b, 0).diff)) == 0  # a fork starts from its parent's weights
    later = pr.attention(a, b, 20, "To be, or not")
    np.testing.assert_array_equal(later.a, a.attention(20, "To be, or not").maps.weights)
    np.testing.assert_array_equal(later.b, b.attention(20, "To be, or not").maps.weights)
    ids = prompt_ids(b.tokenizer, "To be, or not", 16)
    np.testing.assert_allclose(later.b, attention_maps(b.run.build_model(20), ids).weights, atol=1e-6)
    assert np.nanmax(np.abs(later.diff)) > 0 and later.names == ("a", "b") and len(later.tokens) == len(ids)


def test_the_coefficient_diff_is_b_minus_a_of_each_runs_record(pair):
    a, b = pair
    d = pr.weight(a, b, 20, "blocks.0.W_Q")
    ga, gb = (r.coefficients.record("blocks.0.W_Q", 20).G for r in (a, b))
    assert d.what == (pr.COEFFICIENT, "blocks.0.W_Q") and d.a.shape == ga.shape
    np.testing.assert_array_equal(d.diff, gb.astype(np.float64) - ga.astype(np.float64))
    assert np.abs(d.diff).max() > 0
    w = pr.weight(a, b, 20, "blocks.0.W_Q", pr.WEIGHT)
    assert np.array_equal(w.a, Run(a.path).load_weights(20)["blocks.0.W_Q"].double().numpy())
    assert not np.array_equal(w.a, w.b) and not np.array_equal(w.a, d.a)


def test_a_step_not_saved_by_both_and_an_unknown_weight_are_refused(pair):
    a, b = pair
    with pytest.raises(UserError, match="not at 5"):
        pr.attention(a, b, 5)
    with pytest.raises(UserError, match="no weight named"):
        pr.weight(a, b, 0, "W_nothing")


def test_the_door_answers_pair_questions_from_the_runs_analyses(runs):
    a, b = (str(p) for p in runs)
    got = door.answer(q.PairWeight(a, b, 10, "blocks.0.W_K", pr.COEFFICIENT))
    ga = door.door().analysis(a).coefficients.record("blocks.0.W_K", 10).G
    np.testing.assert_array_equal(got.a, ga.astype(np.float64))
    assert door.answer(q.PairChoices(b, a)).steps == [0, 10, 20]
