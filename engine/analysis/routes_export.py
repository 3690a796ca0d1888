"""`export --what routes`: which routes the optimizer used over training (engine/analysis/routes.py) as
data or a figure, for one weight (--weight) or the whole model (no --weight).

By the file's suffix: .csv one row per interval, direction and route class: step, prev_step, direction
(applied_dW or a geometry), class, share ⟨G_c(p), D⟩ (repr floats, so they sum back to ⟨G(p), D⟩ exactly as
computed); .npy the applied update's shares (intervals, classes) in the CSV's class order; .png .svg .pdf the
shares over the steps (one line per class, their sum in black) beside the ranking over training. G is taken on
the run's fixed probe batch at each interval's start, not on the training minibatch: the figure says so.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from ..figures import export
from .routes import APPLIED, NOTE, RouteShares

COLUMNS = ("step", "prev_step", "direction", "class", "share")


def save_csv(path: Path, r: RouteShares) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for direction, table in r.shares.items():
            name = "applied_dW" if direction == APPLIED else direction
            for i, (s, p) in enumerate(zip(r.steps, r.prev_steps)):
                w.writerows([int(s), int(p), name, c, repr(float(table[i, j]))] for j, c in enumerate(r.classes))
    return path


def figure(r: RouteShares):
    """The applied update's shares over the steps, and the ranking of the classes over training."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13, 5), layout="constrained")
    over, rank = fig.subplots(1, 2, width_ratios=(2, 1))
    over.plot(r.steps, r.total(), color="black", lw=2.2, label="Σ classes = ⟨G(p), ΔW⟩")
    for j, c in enumerate(r.classes):
        over.plot(r.steps, r.shares[APPLIED][:, j], lw=1.2, label=c)
    over.axhline(0, color="grey", lw=0.6)
    over.set_xlabel("step s (interval [p, s])")
    over.set_ylabel("⟨G_c(p), ΔW⟩")
    over.set_title(NOTE, fontsize=8)
    over.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ranked = r.ranking()
    rank.barh([c for c, _ in ranked][::-1], [v for _, v in ranked][::-1], color="#4e79a7")
    rank.tick_params(axis="y", labelsize=7)
    rank.set_xlabel("Σ over training of ⟨G_c(p), ΔW⟩")
    fig.suptitle(f"which routes the optimizer used · {r.weight or 'whole model (every weight)'}")
    return fig


def export_routes(path: str | Path, r: RouteShares) -> Path:
    """Write `r` to path, the format from its suffix (module docstring)."""
    fmt = export.format_of(path, export.FIGURE_FORMATS + export.DATA_FORMATS)
    path = Path(path)
    if fmt == "csv":
        return save_csv(path, r)
    if fmt == "npy":
        np.save(path, r.shares[APPLIED])
        return path
    return export.save_figure(figure(r), path)


__all__ = ["COLUMNS", "save_csv", "figure", "export_routes"]
