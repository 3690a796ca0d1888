"""Which of an axis's labels to draw, and at what font size: every label whenever they fit, smaller before
fewer, and a regular subset only when even the smallest size does not fit (the hover read-out names every
cell). A prompt labelled at every 2nd token (or every 7th in a grid) read as garbage; a power-of-two step,
as before, dropped to every 4th where every 3rd fitted.

Pure arithmetic on sizes measured by the caller, so it is tested without a plot.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

MIN_POINT_SIZE = 6.0  # the smallest tick font still read without effort on a laptop screen
POINT_STEP = 0.5


@dataclass(frozen=True)
class TickPlan:
    point_size: float  # the tick font's size
    step: int          # label every step-th cell (1: all)


def tick_plan(per_cell: float, need_at: Callable[[float], float], base_size: float) -> TickPlan:
    """The largest size from `base_size` down to MIN_POINT_SIZE at which one label per cell fits
    (`need_at(size)`: pixels a label needs along the axis, `per_cell`: pixels a cell has); where none
    fits, the base size and the smallest step that keeps labels apart."""
    size = base_size
    while size >= MIN_POINT_SIZE:
        if need_at(size) <= per_cell:
            return TickPlan(size, 1)
        size -= POINT_STEP
    return TickPlan(base_size, max(1, math.ceil(need_at(base_size) / max(per_cell, 1e-9))))


def labelled(labels: list[str], step: int, pinned: tuple[int, ...] = ()) -> list[tuple[float, str]]:
    """pyqtgraph ticks at the cells' centres for every step-th label, and for the `pinned` cells whatever the
    step, each in place of the regular labels that would crowd it (closer than a step); of pinned cells
    closer than a step to each other only the first is labelled (two heads that formed at steps 400 and 425
    printed "400425")."""
    kept: list[int] = []
    for p in sorted(set(pinned)):
        if not kept or p - kept[-1] >= step:
            kept.append(p)
    shown = {i for i in range(0, len(labels), step) if all(abs(i - p) >= step for p in kept)}
    return [(i + 0.5, labels[i]) for i in sorted(shown | set(kept))]
