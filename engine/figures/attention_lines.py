"""One layer's attention as lines between tokens (the head view of BertViz, Vig 2019): the prompt's tokens in
two columns, each query on the left joined to the keys it attends to on the right, one colour per head (the
series palette of engine/figures/palette.py, as on the screen), a line's opacity its weight.

`line_segments` is what both the screen (gui/widgets/attention_lines.py) and the export draw: the lines worth
drawing, heaviest last so they lie on top. The export is matplotlib's object API with a LineCollection
(one artist for every line), in the formats and at the options of engine/figures/export.py; its data is the
layer's weights as a long table with the tokens named (CSV) or the array (NPY).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .export import (DATA_FORMATS, _caption, display_matrix, escape_text, format_of, save_figure,
                     save_stack_data)
from .palette import color_of

MIN_WEIGHT = 0.02  # lighter lines are left out: at T = 64 a head spreading its attention draws 2,000 of them


@dataclass(frozen=True)
class Segment:
    head: int
    query: int
    key: int
    weight: float


def line_segments(weights: np.ndarray, heads: Sequence[int], query: int | None = None, key: int | None = None,
                  min_weight: float = MIN_WEIGHT) -> list[Segment]:
    """The lines to draw of a layer's attention `weights` (H, T, T), for `heads`, from one `query` or into one
    `key` when given; masked (NaN) and lighter than `min_weight` left out; ordered lightest first."""
    a = display_matrix(weights)
    out = []
    for h in heads:
        m = np.nan_to_num(a[h], nan=0.0)
        rows = range(m.shape[0]) if query is None else [query]
        for q in rows:
            if key is None:
                cols = np.flatnonzero(m[q] >= min_weight)
            else:
                cols = [key] if m[q, key] >= min_weight else []
            out.extend(Segment(h, q, int(k), float(m[q, k])) for k in cols)
    return sorted(out, key=lambda s: s.weight)


def lines_figure(weights, tokens: Sequence[str], heads: Sequence[int], *, layer: int = 0, title: str = "",
                 caption: str = ""):
    """A Figure of `heads` of one layer as lines from queries (left) to keys (right)."""
    from matplotlib.collections import LineCollection
    from matplotlib.colors import to_rgba
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    a = display_matrix(weights)
    T = a.shape[1]
    height = min(14.0, max(3.0, 0.22 * T + 1.2))
    fig = Figure(figsize=(4.6, height + (0.3 if caption else 0)), layout="constrained")
    ax = fig.add_subplot()
    segments = line_segments(a, heads)
    ax.add_collection(LineCollection([[(0, s.query), (1, s.key)] for s in segments],
                                     colors=[to_rgba(color_of(s.head), min(1.0, s.weight)) for s in segments],
                                     linewidths=[0.6 + 2.4 * s.weight for s in segments]))
    size = 8 if T <= 32 else 6 if T <= 64 else 4
    for i, token in enumerate(tokens):
        ax.text(-0.04, i, escape_text(str(token)), ha="right", va="center", fontsize=size, family="monospace")
        ax.text(1.04, i, escape_text(str(token)), ha="left", va="center", fontsize=size, family="monospace")
    ax.set_xlim(-0.6, 1.6)
    ax.set_ylim(T - 0.5, -0.5)
    ax.axis("off")
    ax.text(0, -0.9, "query", ha="center", va="bottom", fontsize=8)
    ax.text(1, -0.9, "key", ha="center", va="bottom", fontsize=8)
    ax.legend(handles=[Line2D([], [], color=color_of(h), lw=2, label=f"head {h}") for h in heads],
              loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(4, max(1, len(heads))), fontsize=7,
              frameon=False)
    ax.set_title(escape_text(title or f"attention of layer {layer} as lines"), fontsize=9, pad=16)
    _caption(fig, caption)
    return fig


def export_lines(path: str | Path, weights, tokens: Sequence[str], heads: Sequence[int], *, layer: int = 0,
                 title: str = "", caption: str = "") -> Path:
    """The lines of `heads` as a figure (.png .svg .pdf), or the layer's weights (every head) as data: CSV
    one line per head, query and key with their tokens; NPY the (H, T, T) array."""
    if format_of(path) in DATA_FORMATS:
        return save_stack_data(path, weights, ("head", "query", "key"), {1: tokens, 2: tokens})
    return save_figure(lines_figure(weights, tokens, heads, layer=layer, title=title, caption=caption), path)
