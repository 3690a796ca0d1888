"""`export --what update`: a weight's geometries at a step (engine/analysis/update.py) as data or a figure.

By the file's suffix: .csv one row per geometry (and one for the applied ΔW): its cosine with G and with ΔW,
Frobenius norm, effective rank and largest singular value; .npy the directions stacked (geometries, rows,
cols) in the CSV's order, without ΔW; .png .svg .pdf the matrices side by side (matplotlib imshow, each with
its own symmetric scale, since their norms differ by orders) above their singular-value spectra.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from ..figures import export
from . import geometry as geo
from .update import UpdateGeometry

COLUMNS = ("geometry", "cos_G", "cos_dW", "norm", "effective_rank", "sigma_max")


def rows(result: UpdateGeometry) -> list[tuple]:
    """The CSV's rows: each direction, then the applied update ΔW when there is one."""
    out = [(d.geometry, d.cos_G, d.cos_dW, d.norm, d.effective_rank, float(d.singular_values[0]))
           for d in result.directions]
    if result.dW is not None:
        d = geo.describe("applied_dW", result.dW, result.G, result.dW)
        out.append((d.geometry, d.cos_G, d.cos_dW, d.norm, d.effective_rank, float(d.singular_values[0])))
    return out


def save_csv(path: Path, result: UpdateGeometry) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        w.writerows([[name, *(repr(float(v)) for v in values)] for name, *values in rows(result)])
    return path


def figure(result: UpdateGeometry):
    """The directions and ΔW side by side, each over its spectrum."""
    from matplotlib.figure import Figure

    panels = [(geo.LABELS[d.geometry], d.matrix, d.singular_values, d.cos_G, d.cos_dW) for d in result.directions]
    if result.dW is not None:
        d = geo.describe("applied_dW", result.dW, result.G, result.dW)
        panels.append((f"applied ΔW = W({result.step}) − W({result.prev_step})", result.dW, d.singular_values,
                       d.cos_G, 1.0))
    fig = Figure(figsize=(3.2 * len(panels), 6.4), layout="constrained")
    axes = fig.subplots(2, len(panels), squeeze=False, height_ratios=(3, 1.4))
    for i, (label, matrix, spectrum, cos_G, cos_dW) in enumerate(panels):
        a = export.display_matrix(geo.as_matrix(matrix))
        lo, hi = export.levels_for(a, "signed")
        im = axes[0, i].imshow(a, cmap=export.COLORMAPS["signed"], vmin=lo, vmax=hi, interpolation="nearest",
                               aspect="auto")
        axes[0, i].set_title(f"{label}\ncos G {cos_G:.3f} · cos ΔW {cos_dW:.3f}", fontsize=8)
        fig.colorbar(im, ax=axes[0, i], shrink=0.7)
        floor = spectrum[0] * 1e-12 if spectrum.size and spectrum[0] > 0 else 1e-300  # round-off below this
        axes[1, i].semilogy(np.arange(1, len(spectrum) + 1), np.maximum(spectrum, floor), lw=1)
        axes[1, i].set_title(f"singular values · eff. rank {geo.effective_rank(spectrum):.1f}", fontsize=8)
        axes[1, i].set_xlabel("index", fontsize=8)
    fig.suptitle(f"{result.weight} · step {result.step} · run trained with {result.optimizer}"
                 + (f" · v̂ from checkpoint {result.v_step}" if result.v_step is not None else ""))
    return fig


def export_update(path: str | Path, result: UpdateGeometry) -> Path:
    """Write `result` to path, the format from its suffix (module docstring)."""
    fmt = export.format_of(path, export.FIGURE_FORMATS + export.DATA_FORMATS)
    path = Path(path)
    if fmt == "csv":
        return save_csv(path, result)
    if fmt == "npy":
        np.save(path, result.stack())
        return path
    return export.save_figure(figure(result), path)


__all__ = ["COLUMNS", "rows", "save_csv", "figure", "export_update"]
