"""Overlaid runs' curves as pgfplots/TikZ for a LaTeX paper: one `groupplot` panel per metric, each run a
line in its series colour (engine/figures/palette.py, as on the screen and in the PNG/SVG/PDF figure), the
legend naming each run in full. The file is a `tikzpicture` to `\\input` into a document whose preamble
has (as the file's first lines say):

    \\usepackage{pgfplots}  \\pgfplotsset{compat=1.18}  \\usepgfplotslibrary{groupplots}

Data are inline coordinates, thinned evenly to at most MAX_POINTS per curve: TeX's default main memory
holds some tens of thousands of plotted points in one picture, and a run logs every step (the CSV export
holds every row).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .palette import color_of
from .run_curves import AXIS_LABELS, METRIC_LABELS, RunCurves
from ..rundir.runs import atomic_write_text

MAX_POINTS = 1000
_TEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                 "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def tex_escape(text: str) -> str:
    """Plain text as it must be written in TeX (a run folder name has underscores and may have more)."""
    return "".join(_TEX_SPECIALS.get(ch, ch) for ch in text)


def thinned(x: np.ndarray, y: np.ndarray, most: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Every k-th point so that at most `most` remain, the last point always kept."""
    if len(x) <= most:
        return x, y
    keep = np.unique(np.r_[np.arange(0, len(x), math.ceil(len(x) / most))[: most - 1], len(x) - 1])
    return x[keep], y[keep]


def _coordinates(x: np.ndarray, y: np.ndarray) -> str:
    return " ".join(f"({a:.10g},{b:.8g})" for a, b in zip(*thinned(x, y)))


def overlay_tikz(curves: Sequence[RunCurves], axis: str = "step", smoothing: float = 0.0,
                 metrics: Sequence[str] = tuple(METRIC_LABELS)) -> str:
    """The TikZ source of the overlay: one panel per metric, two panels a row."""
    colours = "\n".join(f"\\definecolor{{run{i}}}{{HTML}}{{{color_of(i).lstrip('#').upper()}}}"
                        for i in range(len(curves)))
    rows = math.ceil(len(metrics) / 2)
    lines = ["% GPT Explorer: runs' curves. Preamble: \\usepackage{pgfplots} \\pgfplotsset{compat=1.18} "
             "\\usepgfplotslibrary{groupplots}", colours, "\\begin{tikzpicture}",
             f"\\begin{{groupplot}}[group style={{group size={min(2, len(metrics))} by {rows}, "
             "horizontal sep=2cm, vertical sep=2cm}, width=7cm, height=5cm, grid=major, "
             "legend style={font=\\footnotesize}, legend pos=outer north east]"]
    for n, metric in enumerate(metrics):
        lines.append(f"\\nextgroupplot[title={{{tex_escape(METRIC_LABELS[metric])}}}, "
                     f"xlabel={{{tex_escape(AXIS_LABELS[axis])}}}]")
        for i, c in enumerate(curves):
            x, y = c.series(metric, axis, smoothing)
            mark = "mark=*, mark size=1pt" if metric == "val_loss" else "no markers"
            lines.append(f"\\addplot[color=run{i}, {mark}, thick] coordinates {{{_coordinates(x, y)}}};")
            if n == min(1, len(metrics) - 1):  # once, right of the first row, naming every run in full
                lines.append(f"\\addlegendentry{{{tex_escape(c.name)}}}")
    lines += ["\\end{groupplot}", "\\end{tikzpicture}", ""]
    return "\n".join(lines)


def save_overlay_tikz(path: str | Path, curves: Sequence[RunCurves], axis: str = "step",
                      smoothing: float = 0.0) -> Path:
    atomic_write_text(Path(path), overlay_tikz(curves, axis, smoothing))
    return Path(path)
