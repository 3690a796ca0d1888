"""How an exported figure is written: its resolution and width (issue 16, item 7), chosen in the export
dialog and read by every figure export (engine.figures.export.save_figure, the formula snapshots) while it runs.

A context variable set by `using_figure_options` around the export on the thread that runs it, so export
functions need not pass the options through. Kept apart from engine.figures.export (no numpy) because the main
window imports it before its first paint.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass

DPI_CHOICES = (100, 150, 300, 600)
WIDTH_CHOICES = {"as drawn": None, "one column (3.5 in)": 3.5, "two columns (7 in)": 7.0}


@dataclass(frozen=True)
class FigureOptions:
    """How a figure is written: dots per inch (PNG; vector formats ignore it) and a width in inches to
    scale the figure to (None: the size it was drawn at)."""
    dpi: int = 150
    width_in: float | None = None


_FIGURE_OPTIONS: ContextVar[FigureOptions] = ContextVar("figure_options", default=FigureOptions())


def figure_options() -> FigureOptions:
    """The options the export in progress was asked with (the defaults outside `using_figure_options`)."""
    return _FIGURE_OPTIONS.get()


def using_figure_options(options: FigureOptions, fn: Callable, *args):
    """fn(*args) with `options` for every figure it saves (call it on the thread that exports)."""
    token = _FIGURE_OPTIONS.set(options)
    try:
        return fn(*args)
    finally:
        _FIGURE_OPTIONS.reset(token)
