"""One layer's attention as lines between tokens (issue 40): which lines are drawn, and the export."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from engine.figures.attention_lines import MIN_WEIGHT, export_lines, line_segments, lines_figure

TOKENS = ["The", "␣cat", "␣sat", "."]


def layer() -> np.ndarray:
    """Two heads over four tokens, causal: head 0 looks at the previous token, head 1 spreads evenly."""
    w = np.zeros((2, 4, 4))
    for q in range(4):
        w[0, q, max(q - 1, 0)] = 1.0
        w[1, q, : q + 1] = 1.0 / (q + 1)
    return np.where(np.tril(np.ones((4, 4))) > 0, w, -np.inf)


def test_segments_are_the_weights_above_the_floor_lightest_first_and_follow_the_hovered_token():
    w = layer()
    every = line_segments(w, [0, 1])
    assert all(s.weight >= MIN_WEIGHT for s in every) and [s.weight for s in every] == sorted(s.weight for s in every)
    assert {(s.query, s.key) for s in every if s.head == 0} == {(0, 0), (1, 0), (2, 1), (3, 2)}
    assert len([s for s in every if s.head == 1]) == 1 + 2 + 3 + 4  # every allowed key, nothing masked
    assert {(s.head, s.key) for s in line_segments(w, [0, 1], query=3)} == {(0, 2), (1, 0), (1, 1), (1, 2), (1, 3)}
    into = line_segments(w, [0], key=0)
    assert {s.query for s in into} == {0, 1} and line_segments(w, [0], query=1, key=3) == []
    assert line_segments(w, []) == []


def test_the_figure_draws_the_chosen_heads_with_every_token_on_both_sides():
    fig = lines_figure(layer(), TOKENS, [0], layer=2, caption="run x · step 5")
    ax = fig.axes[0]
    assert len(ax.collections[0].get_segments()) == len(line_segments(layer(), [0]))
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("␣cat") == 2 and "query" in texts and "key" in texts
    assert ax.get_title() == "attention of layer 2 as lines"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["head 0"]


@pytest.mark.parametrize("suffix", ["png", "svg", "pdf"])
def test_exports_a_figure(tmp_path, suffix):
    out = export_lines(tmp_path / f"l.{suffix}", layer(), TOKENS, [0, 1])
    assert out.stat().st_size > 1000


def test_exports_the_layers_weights_with_their_tokens(tmp_path):
    w = layer()
    rows = list(csv.reader(open(export_lines(tmp_path / "l.csv", w, TOKENS, [0]), encoding="utf-8")))
    assert rows[0] == ["head", "query", "key", "query_token", "key_token", "value"]
    assert len(rows) == 1 + w.size  # every head, not only those drawn
    head, q, k, qt, kt, v = rows[1 + 1 * 16 + 3 * 4 + 1]
    assert (head, q, k, qt, kt) == ("1", "3", "1", ".", "␣cat") and float(v) == pytest.approx(0.25)
    np.testing.assert_array_equal(np.load(export_lines(tmp_path / "l.npy", w, TOKENS, [0])),
                                  np.where(np.isfinite(w), w, np.nan))
