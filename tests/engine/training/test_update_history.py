"""A run's update-to-weight ratios as a weights × steps matrix (engine/training/update_history.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.training.update_history import MAX_COLUMNS, UpdateHistory


def rotation(steps: int, names: list[str], per_step: int, ratio=lambda name, step: 1e-3) -> UpdateHistory:
    """A history measured as the trainer does: `per_step` weights a step, in turn."""
    history, turn = UpdateHistory(), 0
    for step in range(1, steps + 1):
        taken = [names[(turn + k) % len(names)] for k in range(per_step)]
        turn += per_step
        history.add(step, {name: ratio(name, step) for name in taken})
    return history


def test_every_measured_weight_has_a_number_in_every_column_in_the_models_order():
    names = [f"w{i}" for i in range(10)]
    history = rotation(40, names, per_step=3)
    matrix, rows, cols = history.matrix()
    assert rows == names and history.column_width() == 4  # w0 at steps 1, 4/5, 8 …: gaps of 3 and 4
    assert matrix.shape == (10, 10) and cols[:2] == ["1–4", "5–8"] and cols[-1] == "37–40"
    assert not np.isnan(matrix).any() and np.allclose(matrix, -3.0)


def test_rows_follow_the_models_order_and_unknown_weights_come_last():
    history = UpdateHistory(order=("W_E", "blocks.0.W_Q", "W_U"))
    history.add(1, {"W_U": 1e-3, "extra": 1e-3, "W_E": 1e-3})
    history.add(2, {"blocks.0.W_Q": 1e-3})
    assert history.matrix()[1] == ["W_E", "blocks.0.W_Q", "W_U", "extra"]


def test_a_cell_is_the_geometric_mean_of_its_steps():
    history = UpdateHistory()
    history.add(1, {"a": 1e-2, "b": 1e-3})
    history.add(2, {"a": 1e-4})
    history.add(3, {"b": 1e-3})  # b's gap of 2 steps makes a column of 2
    matrix, _, cols = history.matrix()
    assert cols == ["1–2", "3"] and matrix[0, 0] == pytest.approx(-3.0) and np.isnan(matrix[0, 1])


def test_a_long_run_is_cut_into_at_most_max_columns_and_a_replay_is_ignored():
    history = rotation(10_000, ["a", "b"], per_step=2, ratio=lambda name, step: step * 1e-6)
    matrix, _, cols = history.matrix()
    assert matrix.shape == (2, 159) and 159 <= MAX_COLUMNS and cols[0] == "1–63" and cols[-1] == "9955–10000"
    assert matrix[0, 0] == pytest.approx(np.mean(np.log10(np.arange(1, 64) * 1e-6)))
    assert not history.add(9_000, {"a": 1.0}) and history.last_step == 10_000


def test_zero_and_non_finite_ratios_are_left_out_and_an_empty_history_draws_nothing():
    history = UpdateHistory()
    assert history.matrix()[0].shape == (0, 0)
    history.add(1, {"bias": math.nan, "W": 0.0, "V": 2e-3})
    history.add(2, {"bias": math.inf})
    matrix, rows, cols = history.matrix()
    assert rows == ["V"] and cols == ["1", "2"] and matrix[0, 0] == pytest.approx(math.log10(2e-3))
