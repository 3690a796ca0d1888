"""Paired runs compared at one step: attention maps and weights of A and B, and B − A."""

from __future__ import annotations

import numpy as np
import pytest

from engine.errors import UserError
from engine.fork import fork_run, parse_setting
from engine.probes import attention_maps, prompt_ids
from engine.run_diff import attention_diff, common_steps, weight_diff
from engine.runs import Run
from engine.trainer import Trainer
from tests.engine.test_trainer import small_config


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    from engine.corpus import shakespeare_text

    text = shakespeare_text()[:40_000]
    root = tmp_path_factory.mktemp("pair")
    list(Trainer(small_config(steps=20, snapshot_every=10), root / "a", text=text).steps())
    cfg = parse_setting("train.lr=1e-2", Run(root / "a").config)
    list(fork_run(root / "a", root / "b", cfg, 0, text=text).steps())
    return root / "a", root / "b"


def test_the_pair_is_equal_at_the_start_and_differs_later_as_each_run_says(pair):
    a, b = pair
    assert common_steps(Run(a), Run(b)) == [0, 10, 20]
    start = attention_diff(a, b, 0)
    assert np.nanmax(np.abs(start.diff)) == 0
    later = attention_diff(a, b, 20, prompt="To be, or not")
    ids = prompt_ids(Run(b).tokenizer, "To be, or not", 16)
    np.testing.assert_array_equal(later.b, attention_maps(Run(b).build_model(20), ids).weights)
    assert np.nanmax(np.abs(later.diff)) > 0 and later.names == ("a", "b") and len(later.tokens) == len(ids)
    wa, wb = weight_diff(a, b, 20, "blocks.0.W_Q")
    assert np.array_equal(wa, Run(a).load_weights(20)["blocks.0.W_Q"].double().numpy()) and not np.array_equal(wa, wb)


def test_a_step_not_saved_by_both_and_an_unknown_weight_are_refused(pair):
    a, b = pair
    with pytest.raises(UserError, match="not at 5"):
        attention_diff(a, b, 5)
    with pytest.raises(UserError, match="no weight named"):
        weight_diff(a, b, 0, "W_nothing")
