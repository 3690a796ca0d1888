"""Overlaid runs' curves exported by the file's suffix: the matplotlib figure (.png .svg .pdf) and the data
(.csv) of engine/figures/run_curves.py, or pgfplots/TikZ (.tex) of engine/figures/run_curves_tex.py."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .export import format_of, save_figure
from .run_curves import RunCurves, overlay_figure, save_overlay_table
from .run_curves_tex import save_overlay_tikz


def export_overlay(path: str | Path, curves: Sequence[RunCurves], axis: str = "step",
                   smoothing: float = 0.0) -> Path:
    """The overlaid figure (.png .svg .pdf), its data (.csv), or pgfplots/TikZ (.tex), by the suffix."""
    fmt = format_of(path, ("png", "svg", "pdf", "csv", "tex"))
    if fmt == "csv":
        return save_overlay_table(path, curves, smoothing)
    if fmt == "tex":
        return save_overlay_tikz(path, curves, axis, smoothing)
    return save_figure(overlay_figure(curves, axis, smoothing), path)
