"""Exports: figures through matplotlib (PNG, SVG, PDF) and data (CSV, NPY), as pure functions without Qt.

The format comes from the file's suffix (`format_of`); an unknown suffix is a UserError. Figures are built
with matplotlib's object API (`Figure` + `savefig`, never pyplot), so exports run safely off the GUI thread
and never choose an interactive backend; raster output goes through Agg. Matrices are drawn with `imshow`
(`pcolormesh` took 6 s per 256×256 SVG here, `imshow` 0.1 s) using the colormaps and levels of the app's
HeatmapWidget (`COLORMAPS`, `levels_for`), rows downward, NaN hatched as "masked" as on screen.
Later exports (formula snapshots, coefficient matrices) add their own functions on `format_of`,
`save_figure`, `matrix_figure` and `save_table` without touching these.

Fit for a paper (issue 16, item 7): square matrices get square cells (a grid of attention tiles was
stretched), axes carry their titles, the colour bar names its quantity (`value_title`), and a `caption`
(run, step, prompt) is set under the figure. The resolution and width are the user's choice in the export
dialog: the caller runs the export inside `using_figure_options`, and `save_figure` reads them from there,
so every export function honours them without passing them through.

A long export (a formula sheet of hundreds of rows, an animation over training) says how far it is with
`report_progress`, which also stops it (`ExportCancelled`) once whoever runs it asked it to: engine/progress.py's
`report` and `Cancelled`, the one mechanism every long answer of the app uses. Outside a runner that listens, a
report does nothing, so the command line runs the same functions unchanged.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ..errors import UserError
from ..progress import Cancelled, report, reporting
# the export dialog's options, defined without numpy for the GUI's start; exports read them from here too
from .options import (DPI_CHOICES, WIDTH_CHOICES, FigureOptions, figure_options,  # noqa: F401
                             using_figure_options)

FIGURE_FORMATS = ("png", "svg", "pdf")
DATA_FORMATS = ("csv", "npy")
# probability: attention rows, fixed levels [0, 1]; sequential: any one-signed matrix, min..max;
# signed: scores, encodings, coefficients: a diverging map with levels symmetric about 0.
COLORMAPS = {"probability": "viridis", "sequential": "viridis", "signed": "RdBu_r"}
# SVG text stays text (editable, searchable) instead of glyph outlines; PDF and PostScript embed TrueType
# (Type 42) fonts, not matplotlib's default Type 3, which IEEE PDF eXpress and some ACM checks reject
FONT_EMBEDDING = {"svg.fonttype": "none", "pdf.fonttype": 42, "ps.fonttype": 42}
MASKED_HATCH = "#9e9e9e"   # colour of the hatching drawn where a matrix is NaN ("masked")
MASKED_FILL = "#ececec"


# an export's progress and its Cancel are the one mechanism of engine/progress.py, under the names exports use
ExportCancelled = Cancelled
report_progress = report
reporting_progress = reporting


def format_of(path: str | Path, allowed: Sequence[str] = FIGURE_FORMATS + DATA_FORMATS) -> str:
    """The format named by the path's suffix ('png', 'csv', ...), or a UserError naming the choices."""
    fmt = Path(path).suffix.lower().lstrip(".")
    if fmt not in allowed:
        shown = " ".join("." + a for a in allowed)
        raise UserError(f"cannot export to {Path(path).name!r}: choose a file ending in {shown}")
    return fmt


def nice_ceil(x: float) -> float:
    """The smallest of 1, 2, 2.5, 5 × 10^k that is ≥ x (1 for 0): colour-bar ends that stay put while a
    matrix drifts during training (and a colour bar whose range changes must be laid out again)."""
    if not x > 0:
        return 1.0
    scale = 10.0 ** math.floor(math.log10(x))
    return next(f * scale for f in (1, 2, 2.5, 5, 10) if f * scale >= x * (1 - 1e-12))


def levels_for(matrix: np.ndarray, kind: str) -> tuple[float, float]:
    """Colour levels: [0, 1] for probabilities, symmetric ±nice_ceil(max|x|) for signed, min..max for
    sequential."""
    if kind not in COLORMAPS:
        raise ValueError(f"unknown heatmap kind {kind!r}; one of {', '.join(COLORMAPS)}")
    if kind == "probability":
        return 0.0, 1.0
    finite = np.asarray(matrix, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        return (-1.0, 1.0) if kind == "signed" else (0.0, 1.0)
    if kind == "signed":
        m = nice_ceil(float(np.abs(finite).max()))
        return -m, m
    lo, hi = float(finite.min()), float(finite.max())
    return (lo - 0.5, hi + 0.5) if lo == hi else (lo, hi)


def label_step(n: int, max_labels: int) -> int:
    """Label every s-th of n cells, s the smallest power of two that keeps to max_labels labels."""
    step = 1
    while -(-n // step) > max_labels:
        step *= 2
    return step


def display_matrix(matrix) -> np.ndarray:
    """A float copy with every non-finite entry (−inf from a mask) as NaN: what is drawn and written."""
    a = np.array(matrix, dtype=np.float64, copy=True)
    a[~np.isfinite(a)] = np.nan
    return a


def matrix_figure(matrix, *, row_labels=None, col_labels=None, kind: str = "sequential",
                  title: str = "", row_title: str = "", col_title: str = "",
                  levels: tuple[float, float] | None = None, value_title: str = "", caption: str = "",
                  cmap: str | None = None):
    """A matplotlib Figure of one matrix: imshow, labels on both axes, title and colour bar; `levels`
    overrides the kind's (as on screen, where two views may share one scale), as `cmap` (a matplotlib
    name) does the kind's colour map."""
    from matplotlib.figure import Figure

    a = display_matrix(matrix)
    n_rows, n_cols = a.shape
    side = min(12.0, 3.0 + 0.12 * max(n_rows, n_cols))
    fig = Figure(figsize=(side + 1.2, side + (0.3 if caption else 0)), layout="constrained")
    ax = fig.add_subplot()
    im = _draw(ax, a, kind, levels, cmap)
    _label_axis(ax.set_yticks, row_labels, n_rows)
    _label_axis(ax.set_xticks, col_labels, n_cols, rotate=True)
    ax.set_ylabel(row_title)
    ax.set_xlabel(col_title)
    ax.set_title(escape_text(title))
    fig.colorbar(im, ax=ax, shrink=0.8, label=_bar_label(value_title, a))
    _caption(fig, caption)
    return fig


def _bar_label(value_title: str, a: np.ndarray) -> str | None:
    """The colour bar names what its colours measure, and says what hatching means when there is any."""
    masked = "hatched: masked" if np.isnan(a).any() else ""
    text = ", ".join(t for t in (escape_text(value_title), masked) if t)
    return text or None


def _caption(fig, caption: str) -> None:
    if caption:
        fig.supxlabel(escape_text(caption), fontsize=8, color="0.25")


def grid_figure(stack, *, row_labels=None, col_labels=None, kind: str = "probability",
                title: str = "", tile_title: str = "layer {0} · head {1}",
                levels: tuple[float, float] | None = None, row_title: str = "query", col_title: str = "key",
                value_title: str = "", caption: str = "", cmap: str | None = None):
    """A Figure of a (R, C, n, m) stack as an R × C grid of square-celled tiles with one shared colour bar,
    the row and column titles on the outer tiles; a tile is large enough to label every token up to 40."""
    from matplotlib.figure import Figure

    a = display_matrix(stack)
    R, C, n, m = a.shape
    tile = min(4.5, max(2.2, 0.11 * max(n, m)))  # inches: ~0.11 in per 6-pt label
    fig = Figure(figsize=(tile * C + 1.4, tile * R + 0.9 + (0.3 if caption else 0)), layout="constrained")
    axes = fig.subplots(R, C, squeeze=False)
    levels = levels or levels_for(a, kind)
    fit = max(4, int(tile / 0.11))
    for r in range(R):
        for c in range(C):
            ax = axes[r, c]
            im = _draw(ax, a[r, c], kind, levels, cmap)
            ax.set_title(tile_title.format(r, c), fontsize=8)
            _label_axis(ax.set_yticks, row_labels, n, max_labels=fit, hide=c != 0)
            _label_axis(ax.set_xticks, col_labels, m, max_labels=fit, rotate=True, hide=r != R - 1)
            if c == 0:
                ax.set_ylabel(row_title, fontsize=8)
            if r == R - 1:
                ax.set_xlabel(col_title, fontsize=8)
    fig.colorbar(im, ax=axes, shrink=0.6, label=_bar_label(value_title, a))
    fig.suptitle(escape_text(title))
    _caption(fig, caption)
    return fig


def loss_figure(rows: Sequence[Mapping], caption: str = ""):
    """Train and validation loss against step, from metrics rows (dicts with step, train_loss, val_loss)."""
    from matplotlib.figure import Figure

    table = loss_table(rows)
    fig = Figure(figsize=(7, 4.2), layout="constrained")
    _caption(fig, caption)
    ax = fig.add_subplot()
    ax.plot(table["step"], table["train_loss"], lw=1, label="train")
    val = ~np.isnan(table["val_loss"])
    if val.any():
        ax.plot(table["step"][val], table["val_loss"][val], "o-", ms=3, label="validation")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.grid(alpha=0.3)
    ax.legend()
    return fig


def loss_table(rows: Sequence[Mapping]) -> dict[str, np.ndarray]:
    """Columns step, train_loss, val_loss (NaN where a row has none) from metrics rows."""
    if not rows:
        raise UserError("the run has no logged steps yet: nothing to export")

    def column(key):
        return np.array([math.nan if r.get(key) is None else float(r[key]) for r in rows])

    return {"step": np.array([int(r["step"]) for r in rows], dtype=np.int64), "train_loss": column("train_loss"),
            "val_loss": column("val_loss")}


def save_figure(fig, path: str | Path) -> Path:
    """Write a matplotlib Figure as PNG, SVG or PDF, chosen by the suffix, at the FigureOptions in use."""
    import matplotlib

    fmt = format_of(path, FIGURE_FORMATS)
    path = Path(path)
    options = figure_options()
    if options.width_in:  # scaled as a whole, so text keeps its size relative to the page
        w, h = fig.get_size_inches()
        fig.set_size_inches(options.width_in, h * options.width_in / w)
    with matplotlib.rc_context(FONT_EMBEDDING):
        fig.savefig(path, format=fmt, dpi=options.dpi)
    return path


def save_matrix_data(path: str | Path, matrix, row_labels=None, col_labels=None) -> Path:
    """NPY: the matrix (float64, NaN where masked). CSV: a header of column labels, then one labelled row
    per matrix row; values written with repr so they read back exactly."""
    fmt = format_of(path, DATA_FORMATS)
    a = display_matrix(matrix)
    if fmt == "npy":
        np.save(path, a)
        return Path(path)
    rows = axis_labels(row_labels, a.shape[0])
    cols = axis_labels(col_labels, a.shape[1])
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow([""] + cols)
        for label, values in zip(rows, a):
            w.writerow([label] + [repr(float(v)) for v in values])
    return Path(path)


def save_stack_data(path: str | Path, stack, axis_names: Sequence[str],
                    labels: Mapping[int, Sequence[str]] | None = None) -> Path:
    """NPY: the whole array. CSV: long format, one line per entry: its index on every axis, then, for each
    axis given `labels` (axis number → one label per index: the tokens of a query or key axis), a column
    `<axis>_token` with that index's label, then the value."""
    fmt = format_of(path, DATA_FORMATS)
    a = display_matrix(stack)
    if fmt == "npy":
        np.save(path, a)
        return Path(path)
    labels = {axis: axis_labels(names, a.shape[axis]) for axis, names in (labels or {}).items()
              if names is not None}
    index = np.indices(a.shape).reshape(a.ndim, -1).T
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(list(axis_names) + [f"{axis_names[k]}_token" for k in labels] + ["value"])
        for idx, v in zip(index, a.ravel()):
            w.writerow([*map(int, idx), *(labels[k][idx[k]] for k in labels), repr(float(v))])
    return Path(path)


def csv_cell(value) -> str:
    """A number as a CSV cell: an integer (a step, an index, a count) as one ("120", not "120.0"), a float
    with repr so it reads back exactly."""
    if isinstance(value, (bool, np.bool_)):
        return str(int(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return repr(float(value))


def save_table(path: str | Path, columns: Mapping[str, Sequence[float]]) -> Path:
    """CSV: a header of column names, then the rows; a column of integers (steps) is written as integers.
    NPY: a 2-D float array, columns in the given order."""
    fmt = format_of(path, DATA_FORMATS)
    arrays = [np.asarray(v) for v in columns.values()]
    if fmt == "npy":
        np.save(path, np.column_stack([a.astype(np.float64) for a in arrays]))
        return Path(path)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(list(columns))
        w.writerows([[csv_cell(v) for v in row] for row in zip(*(a.tolist() for a in arrays))])
    return Path(path)


def export_matrix(path: str | Path, matrix, *, row_labels=None, col_labels=None,
                  kind: str = "sequential", title: str = "", row_title: str = "",
                  col_title: str = "", levels: tuple[float, float] | None = None,
                  value_title: str = "", caption: str = "", cmap: str | None = None) -> Path:
    """One matrix to a figure (.png .svg .pdf) or its data (.csv .npy), by the suffix."""
    if format_of(path) in DATA_FORMATS:
        return save_matrix_data(path, matrix, row_labels, col_labels)
    return save_figure(matrix_figure(matrix, row_labels=row_labels, col_labels=col_labels, kind=kind,
                                     title=title, row_title=row_title, col_title=col_title,
                                     levels=levels, value_title=value_title, caption=caption, cmap=cmap),
                       path)


def export_grid(path: str | Path, stack, *, row_labels=None, col_labels=None,
                kind: str = "probability", title: str = "", tile_title: str = "layer {0} · head {1}",
                axis_names: Sequence[str] = ("layer", "head", "query", "key"),
                levels: tuple[float, float] | None = None, value_title: str = "", caption: str = "",
                cmap: str | None = None) -> Path:
    """A (R, C, n, m) stack to a grid figure or its data, by the suffix."""
    if format_of(path) in DATA_FORMATS:
        return save_stack_data(path, stack, axis_names, {2: row_labels, 3: col_labels})
    return save_figure(grid_figure(stack, row_labels=row_labels, col_labels=col_labels, kind=kind,
                                   title=title, tile_title=tile_title, levels=levels,
                                   row_title=axis_names[2], col_title=axis_names[3],
                                   value_title=value_title, caption=caption, cmap=cmap), path)


def export_loss(path: str | Path, rows: Sequence[Mapping]) -> Path:
    """Loss curves to a figure, or the columns step, train_loss, val_loss to CSV/NPY."""
    if format_of(path) in DATA_FORMATS:
        return save_table(path, loss_table(rows))
    return save_figure(loss_figure(rows), path)


def _draw(ax, a: np.ndarray, kind: str, levels: tuple[float, float] | None = None, cmap: str | None = None):
    """imshow with the kind's colormap (or `cmap`), NaN transparent over a hatched patch ('masked')."""
    import matplotlib
    from matplotlib.patches import Rectangle

    lo, hi = levels or levels_for(a, kind)
    cmap = matplotlib.colormaps[cmap or COLORMAPS[kind]].with_extremes(bad=(0, 0, 0, 0))
    n, m = a.shape
    if np.isnan(a).any():
        ax.add_patch(Rectangle((-0.5, -0.5), m, n, facecolor=MASKED_FILL, edgecolor=MASKED_HATCH,
                               hatch="///", linewidth=0, zorder=0))
    # square matrices (attention, similarity) get square cells; others fill the axes
    return ax.imshow(a, cmap=cmap, vmin=lo, vmax=hi, interpolation="nearest",
                     aspect="equal" if n == m else "auto", origin="upper", zorder=1)


def _label_axis(set_ticks, labels, n: int, max_labels: int = 64, rotate: bool = False,
                hide: bool = False) -> None:
    if hide:
        set_ticks([], [])
        return
    labels = axis_labels(labels, n)
    shown = range(0, n, label_step(n, max_labels))
    size = 8 if len(shown) <= 24 else 6 if len(shown) <= 48 else 5
    rotate = rotate and max(len(labels[i]) for i in shown) > 2  # single characters read best upright
    set_ticks(list(shown), [escape_text(labels[i]) for i in shown], fontsize=size,
              rotation=90 if rotate else 0)


def axis_labels(labels, n: int) -> list[str]:
    """The labels as strings (indices when None); a count that does not match is a ValueError."""
    if labels is None:
        return [str(i) for i in range(n)]
    if len(labels) != n:
        raise ValueError(f"{len(labels)} labels for {n} rows or columns")
    return [str(s) for s in labels]


def escape_text(text: str) -> str:
    """Keep a literal '$' (a token, a corpus line) from switching matplotlib into mathtext."""
    return text.replace("$", r"\$")
