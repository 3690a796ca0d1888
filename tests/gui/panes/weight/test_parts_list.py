"""A weight with more terms than are split at every step says so in place (issue 16, item 12)."""

from __future__ import annotations

import dataclasses

import numpy as np
from PySide6.QtCore import Qt

from gui.panes.weight.charts import PartsList


def record(terms: dict, count: int, step: int = 0):
    from engine.coefficients import StepCoefficient

    G = np.ones((2, 2))
    return StepCoefficient("blocks.0.W_Q", step, G, G, G, 0.0, {"L1.q": G}, terms, count)


def test_an_empty_terms_group_says_why_and_the_note_goes_when_terms_come(qtbot):
    parts = PartsList()
    qtbot.addWidget(parts)
    parts.show_step(record({}, 208))
    group = parts.groups["term"]
    assert group.text(0) == "terms (208)" and group.childCount() == 1
    note = group.child(0)
    assert "208 terms are more than" in note.toolTip(0) and not note.flags() & Qt.ItemFlag.ItemIsSelectable
    parts.show_step(record({}, 208))
    assert group.childCount() == 1  # not one note per step
    parts.show_step(record({"t0": np.ones((2, 2)), "t1": np.ones((2, 2))}, 2))
    assert group.childCount() == 2 and all(group.child(i).toolTip(0) in ("t0", "t1") for i in range(2))


def test_the_largest_terms_fill_the_group_in_their_order_with_their_shares(qtbot):
    from engine.coefficients.largest import LargestTerms

    parts = PartsList()
    qtbot.addWidget(parts)
    rec = record({}, 208, step=7)
    big = LargestTerms("blocks.0.W_Q", 7, 208, 10.0, {"b": np.ones((2, 2)), "a": np.ones((2, 2))},
                       {"b": 3.0, "a": 1.0})
    parts.show_step(rec, big)
    group = parts.groups["term"]
    assert group.text(0) == "terms: largest 2 of 208"
    assert [group.child(i).toolTip(0) for i in range(group.childCount())] == ["b", "a"]
    assert [group.child(i).text(2) for i in range(2)] == ["30.0%", "10.0%"]
    parts.show_step(rec, "W has 9999 terms, more than the 2500 searched")  # a refusal says why in place
    assert group.childCount() == 1 and "9999 terms" in group.child(0).toolTip(0)
    assert group.child(0).text(0) == "too many to split: see the route classes"


def test_a_large_models_parts_say_that_g_is_being_split_or_why_it_is_not(qtbot):
    """GPT-2 small's G comes before its split (pending), and a split over its budget says why (unsplit); the
    norms are the whole matrices' even when those drawn are a view of them."""
    from engine.coefficients import window

    parts = PartsList()
    qtbot.addWidget(parts)
    big = np.full((3000, 2), 2.0)
    whole = dataclasses.replace(record({}, 208), W=big, G=big, grad=big, classes={})
    parts.show_step(dataclasses.replace(whole, pending=True))
    group = parts.groups["class"]
    assert group.text(0) == "route classes: splitting G…" and group.childCount() == 0
    drawn = window.shown(dataclasses.replace(whole, unsplit="not split: its 50 route classes would hold 29 GB"),
                         window.Window())
    assert drawn.G.shape == (1024, 2) and drawn.summary().norm == np.sqrt(4.0 * 6000)
    parts.show_step(drawn)
    assert group.text(0) == "route classes: not split" and "29 GB" in group.toolTip(0)
    assert parts.total.text(1) == f"{np.sqrt(24000.0):.3g}"


def test_a_21_digit_term_count_is_written_as_a_power_of_ten(qtbot):
    """Issue 40: GPT-2 small's term counts printed as one unbroken 21-digit number in the parts list."""
    parts = PartsList()
    qtbot.addWidget(parts)
    parts.show_step(record({}, 117_964_800_000_000_000_000))
    group = parts.groups["term"]
    assert group.text(0) == "terms (1.18 × 10²⁰)"
    assert group.child(0).toolTip(0).startswith("1.18 × 10²⁰ terms are more than the 64 the pane splits")
