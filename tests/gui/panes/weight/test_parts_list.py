"""A weight with more terms than are split at every step says so in place (issue 16, item 12)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from PySide6.QtCore import Qt

from gui.panes.weight.charts import PartsList


def record(terms: dict, count: int):
    G = np.ones((2, 2))
    return SimpleNamespace(weight="blocks.0.W_Q", G=G, classes={"L1.q": G}, terms=terms, term_count=count)


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
    rec = record({}, 208)
    rec.step = 7
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
