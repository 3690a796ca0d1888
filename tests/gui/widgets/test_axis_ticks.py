"""axis_ticks.tick_plan: every label when they fit, smaller before fewer, else the smallest regular step."""

from __future__ import annotations

from gui.widgets.axis_ticks import MIN_POINT_SIZE, TickPlan, labelled, tick_plan


def need(pt: float) -> float:  # a label 1.5 px per point wide
    return 1.5 * pt


def test_labels_that_fit_at_the_base_size_are_all_drawn_at_it():
    assert tick_plan(20.0, need, 9.0) == TickPlan(9.0, 1)


def test_a_smaller_font_comes_before_dropping_any_label():
    plan = tick_plan(12.0, need, 9.0)
    assert plan.step == 1 and MIN_POINT_SIZE <= plan.point_size == 8.0


def test_below_the_smallest_size_the_smallest_step_that_fits_at_the_base_size():
    plan = tick_plan(4.6, need, 9.0)  # 13.5 px a label: 3 cells of 4.6 px, not the next power of two, 4
    assert plan == TickPlan(9.0, 3)
    assert tick_plan(float("inf"), need, 9.0) == TickPlan(9.0, 1)


def test_ticks_sit_at_the_cells_centres():
    assert labelled(list("abcde"), 2) == [(0.5, "a"), (2.5, "c"), (4.5, "e")]


def test_pinned_cells_closer_than_a_step_are_labelled_once():
    """Issue 40, seen under Xvfb: heads that formed at steps 400 and 425 (cells next to each other, every
    6th labelled) printed "400425" under the roles chart."""
    labels = [str(25 * i) for i in range(33)]
    ticks = labelled(labels, 6, pinned=(6, 16, 17))
    assert [t for _, t in ticks] == ["0", "150", "400", "600", "750"]
