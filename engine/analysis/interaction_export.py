"""`export --what interaction` and `--what interaction-map`: the second-order view (interaction.py,
docs/second-order.md) as data or a figure. Pure functions of its results, no Qt.

interaction (B = --weight, A = --other), by the file's suffix:
    .npy   −H_BA ΔA at the step, in B's shape
    .csv   one row per saved step s (the update from the saved step p before it): ‖−H_BA ΔA‖, its cosine with
           the real ΔG_B, ‖exact change from A's update alone‖, ‖real ΔG_B‖ and the pair's share
           ½⟨ΔB, H_BA ΔA⟩ of the curvature term
    .png .svg .pdf   the three maps at the step side by side (−H_BA ΔA and the exact change on one scale)
interaction-map:
    .npy   the weights × weights matrix of pair shares [B, A] in model order
    .csv   the same with the weights' names on its rows and columns
    .png .svg .pdf   the map with the loss accounting of the interval beneath it
Every file is written under a temporary name and moved into place.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..figures import export
from ..coefficients import as_matrix, norm
from .interaction import InteractionMap, PairInteraction

FORMATS = export.FIGURE_FORMATS + export.DATA_FORMATS
COLUMNS = ("step", "prev_step", "predicted_norm", "cosine_real", "exact_norm", "real_norm", "share")


def _into_place(path: str | Path, write: Callable[[Path], object]) -> Path:
    """write(tmp) under a temporary name with the same suffix, then os.replace it onto `path`."""
    path = Path(path)
    tmp = path.with_name(f".{path.stem}.tmp{os.getpid()}{path.suffix}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def rows(series: list[PairInteraction]) -> list[tuple]:
    """The CSV's rows, one per interval, in COLUMNS order."""
    return [(p.step, p.prev_step, norm(p.predicted), p.cosine, norm(p.exact), norm(p.real), p.share)
            for p in series]


def _csv(tmp: Path, header, table) -> None:
    text = io.StringIO()
    w = csv.writer(text, lineterminator="\n")
    w.writerow(header)
    w.writerows(table)
    tmp.write_text(text.getvalue(), encoding="utf-8")


def pair_figure(p: PairInteraction):
    """−H_BA ΔA, the exact change from A alone (one scale: they should agree) and the real ΔG_B."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13, 4.6), layout="constrained")
    axes = fig.subplots(1, 3)
    shared = export.levels_for(np.concatenate([as_matrix(p.predicted).ravel(), as_matrix(p.exact).ravel()]),
                               "signed")
    panels = [(f"−H_BA ΔA (‖·‖ {norm(p.predicted):.3g}, {p.cosine_words})", p.predicted, shared),
              (f"exact, from ΔA alone (‖·‖ {norm(p.exact):.3g})", p.exact, shared),
              (f"real ΔG_B (‖·‖ {norm(p.real):.3g})", p.real, export.levels_for(as_matrix(p.real), "signed"))]
    for ax, (title, matrix, (lo, hi)) in zip(axes, panels):
        im = ax.imshow(as_matrix(matrix), cmap=export.COLORMAPS["signed"], vmin=lo, vmax=hi,
                       interpolation="nearest", aspect="auto")
        ax.set_title(title, fontsize=8)
        fig.colorbar(im, ax=ax, shrink=0.8)
    fig.suptitle(f"how {p.other}'s update moved {p.weight}'s coefficient · steps {p.prev_step} → {p.step} · "
                 f"pair's share of the curvature term {p.share:.3g} (probe batch)", fontsize=9)
    return fig


def export_interaction(path: str | Path, series: list[PairInteraction], step: int) -> Path:
    """Write the pair (module docstring); `series` every interval, `step` the one the .npy and figure show."""
    fmt = export.format_of(path, FORMATS)
    at = next(p for p in series if p.step == step)
    if fmt == "csv":
        table = [[int(s), int(q), *(repr(float(v)) for v in rest)] for s, q, *rest in rows(series)]
        return _into_place(path, lambda tmp: _csv(tmp, COLUMNS, table))
    if fmt == "npy":
        return _into_place(path, lambda tmp: np.save(tmp, at.predicted))
    return _into_place(path, lambda tmp: export.save_figure(pair_figure(at), tmp))


def map_figure(m: InteractionMap):
    """The pair shares, names on both axes, with the interval's loss accounting as a caption."""
    from matplotlib.figure import Figure

    n = len(m.names)
    side = min(14.0, 3.0 + 0.28 * n)
    fig = Figure(figsize=(side + 1.5, side), layout="constrained")
    ax = fig.subplots()
    lo, hi = export.levels_for(m.shares, "signed")
    im = ax.imshow(m.shares, cmap=export.COLORMAPS["signed"], vmin=lo, vmax=hi, interpolation="nearest")
    ax.set_xticks(range(n), m.names, rotation=90, fontsize=6)
    ax.set_yticks(range(n), m.names, fontsize=6)
    ax.set_xlabel("A (whose update)")
    ax.set_ylabel("B (whose coefficient)")
    fig.colorbar(im, ax=ax, shrink=0.7, label="½⟨ΔB, H_BA ΔA⟩")
    ax.set_title(f"pair shares of the curvature term · steps {m.prev_step} → {m.step}\n"
                 f"E(s) − E(p) = {m.change:.4g};  first order {m.first_order.sum():.4g} + curvature "
                 f"{m.curvature:.4g} = {m.predicted_change:.4g} (probe batch)", fontsize=8)
    return fig


def export_interaction_map(path: str | Path, m: InteractionMap) -> Path:
    """Write the map (module docstring)."""
    fmt = export.format_of(path, FORMATS)
    if fmt == "csv":
        table = [[name, *(repr(float(v)) for v in row)] for name, row in zip(m.names, m.shares)]
        return _into_place(path, lambda tmp: _csv(tmp, ["B \\ A", *m.names], table))
    if fmt == "npy":
        return _into_place(path, lambda tmp: np.save(tmp, m.shares))
    return _into_place(path, lambda tmp: export.save_figure(map_figure(m), tmp))


__all__ = ["FORMATS", "COLUMNS", "rows", "pair_figure", "export_interaction", "map_figure",
           "export_interaction_map"]
