"""`export --what curvature`: the curvature along the step over the saved steps (curvature.py,
docs/readings.md#curvature-along-the-step) as data or a figure. Pure functions of its results, no Qt.

    .csv   one row per saved step s after the first (the update from the saved step p before it): COLUMNS,
           `limit` saying where the line search found only a bound on λ_c ("at most", "at least")
    .npy   the same numbers as a 2-D float array (the limit as 0, +1 at most, −1 at least)
    .png .svg .pdf   λ_c and κ (and --weight's κ_W) against 2/η over training, above the probe loss and the
           training loss
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ..figures import export
from .curvature import Curvature

FORMATS = export.FIGURE_FORMATS + export.DATA_FORMATS
COLUMNS = ("step", "prev_step", "steps", "lr", "threshold", "critical_sharpness", "limit", "critical_step",
           "curvature", "weight_curvature", "loss", "loss_after", "slope", "along", "forwards")
_LIMIT = {"": 0.0, "at most": 1.0, "at least": -1.0}


def rows(series: Sequence[Curvature]) -> list[tuple]:
    """The CSV's rows in COLUMNS order."""
    return [(c.step, c.prev_step, c.steps, c.lr, c.threshold, c.critical_sharpness, c.limit, c.critical_step,
             c.curvature, math.nan if c.weight_curvature is None else c.weight_curvature, c.loss, c.loss_after,
             c.slope, c.along, c.forwards) for c in series]


def _cell(v) -> str:
    return v if isinstance(v, str) else str(v) if isinstance(v, (int, np.integer)) else repr(float(v))


def curvature_figure(series: Sequence[Curvature], metrics: Sequence[Mapping] = (), words: str = ""):
    """λ_c, κ (and κ_W) against 2/η, log scale, above the probe loss at the saved steps and the training loss."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 6.4), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    steps = np.array([c.step for c in series], dtype=float)
    lam = np.array([c.critical_sharpness for c in series])
    found = np.array([c.limit == "" for c in series])
    top.plot(steps, [c.threshold for c in series], color="0.35", lw=1.2, ls="--", label="2/η (the schedule's rate)")
    top.plot(steps[found], lam[found], "o-", ms=3.5, color="#b2182b", label="critical sharpness λ_c")
    if (~found).any():
        top.plot(steps[~found], lam[~found], "v", ms=4, mfc="none", color="#b2182b", label="λ_c, a bound")
    kappa = np.array([c.curvature for c in series])
    top.plot(steps, np.where(kappa > 0, kappa, np.nan), "s-", ms=2.5, lw=0.8, color="#2166ac",
             label="κ = δᵀHδ/‖δ‖², whole model")
    weight = next((c.weight for c in series if c.weight), None)
    if weight:
        kw = np.array([c.weight_curvature for c in series])
        top.plot(steps, np.where(kw > 0, kw, np.nan), "^-", ms=2.5, lw=0.8, color="#4d9221",
                 label=export.escape_text(f"κ of {weight}"))
    top.set_yscale("log")
    top.set_ylabel("curvature")
    top.grid(alpha=0.3, which="both")
    top.legend(fontsize=7)
    crossed = [c.step for c in series if c.limit != "at most" and c.critical_sharpness > c.threshold]
    title = f"first above 2/η at step {crossed[0]}" if crossed else "λ_c stays below 2/η"
    top.set_title(export.escape_text(f"curvature along the step · {title} (probe batch)"), fontsize=9)
    bottom.plot(steps, [c.loss_after for c in series], "o-", ms=3, label="probe loss at the step")
    table = export.loss_table(metrics) if metrics else None
    if table is not None and len(table["step"]):
        bottom.plot(table["step"], table["train_loss"], lw=0.8, alpha=0.7, label="training loss")
    bottom.set_yscale("log")  # a run that diverges grows by orders of magnitude
    bottom.set_xlabel("step")
    bottom.set_ylabel("loss")
    bottom.grid(alpha=0.3)
    bottom.legend(fontsize=7)
    unmeasured = next((c.unmeasured for c in series if c.unmeasured), "")
    approximate = next((c.approximate for c in series if c.approximate), "")
    words = "; ".join(w for w in (unmeasured and unmeasured + ": λ_c alone, from forwards",
                                  approximate and "κ and the shares " + approximate, words) if w)
    if words:
        fig.supxlabel(export.escape_text(words), fontsize=6, color="0.25", wrap=True)
    return fig


def export_curvature(path: str | Path, series: Sequence[Curvature], metrics: Sequence[Mapping] = (),
                     words: str = "") -> Path:
    """Write the series (module docstring); `metrics` the run's rows for the training loss, `words` the
    threshold's meaning for the run's optimizer."""
    fmt = export.format_of(path, FORMATS)
    path = Path(path)
    table = rows(series)
    if fmt == "csv":
        import csv

        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(COLUMNS)
            w.writerows([[_cell(v) for v in row] for row in table])
    elif fmt == "npy":
        np.save(path, np.array([[_LIMIT[v] if isinstance(v, str) else float(v) for v in row] for row in table],
                               dtype=np.float64).reshape(len(table), len(COLUMNS)))
    else:
        export.save_figure(curvature_figure(series, metrics, words), path)
    return path


def export_run_curvature(path: str | Path, run_dir: str | Path, weight: str | None = None, step: int | None = None,
                         progress=None) -> Path:
    """The command line's and the Weight pane's export of a run's curvature over its saved steps (up to `step`),
    each interval reported to `progress(done, total)` as it is measured."""
    from .curvature import threshold_words
    from .run_analysis import RunAnalysis

    a = RunAnalysis(run_dir)
    a.curvature(None, weight)  # checks the name and that an update reaches a saved step first
    series = [c for c in a.curvature_series(weight, progress) if step is None or c.step <= step]
    return export_curvature(path, series, a.run.metrics(), threshold_words(a.config.train))


__all__ = ["FORMATS", "COLUMNS", "rows", "curvature_figure", "export_curvature", "export_run_curvature"]
