"""What of a large coefficient record is drawn: a window of chosen rows, or the whole matrix pooled into bands.

GPT-2 small's W_E is 50,257 × 768: its record (W, G, autograd's G and each class) is hundreds of megabytes,
too much to send to the GUI for each step shown and more rows than a screen has pixels. So the analysis
process sends a view: the rows asked for (`Window.rows`, e.g. the prompt's tokens' rows of W_E) or, without
them, every row pooled into at most MAX_SHOWN bands; columns beyond MAX_SHOWN are pooled likewise. A band
shows its entry of largest magnitude, with its sign, so that one large weight is not averaged away.
`Axes` says what each drawn row and column stands for. Norms, shares and the agreement are those of the
whole matrices (`StepCoefficient.whole`), never of the view.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import RowSparse, StepCoefficient, Update, dense

MAX_SHOWN = 1024  # rows or columns drawn at most


@dataclass(frozen=True)
class Window:
    """The rows of a matrix to draw, in order (None: every row, pooled into bands when there are too many), or
    `text`: the rows of its tokens, which the analysis process finds with the run's tokenizer (`of_tokens`): the
    app's own Run of a large-tokenizer run (GPT-2's) never reads it, and the rows were silently pooled there."""

    rows: tuple[int, ...] | None = None
    text: str | None = None

    def of_tokens(self, tokenizer) -> Window:
        """The window with `text` read as the rows of its tokens (each once, in order, at most MAX_SHOWN); a text
        with none is every row, pooled. A text the tokenizer cannot read (a character outside a character
        vocabulary) is refused in one line."""
        if self.text is None:
            return self
        ids = list(dict.fromkeys(int(i) for i in tokenizer.encode(self.text)))[:MAX_SHOWN]
        return Window(tuple(ids)) if ids else Window()


@dataclass(frozen=True)
class Axes:
    """How a drawn matrix maps onto the whole one."""

    shape: tuple[int, int]           # the whole matrix's
    row_labels: tuple[str, ...]
    col_labels: tuple[str, ...]
    note: str                        # what is drawn, in one line


def needed(shape: tuple[int, ...], window: Window) -> bool:
    """Whether a matrix of `shape` is drawn through a view."""
    rows, cols = (1, shape[0]) if len(shape) == 1 else shape
    return window.rows is not None or rows > MAX_SHOWN or cols > MAX_SHOWN


def _bands(n: int) -> np.ndarray:
    """Start of each band when n indices are pooled into at most MAX_SHOWN (n itself last)."""
    return np.linspace(0, n, min(n, MAX_SHOWN) + 1).round().astype(int)


def _pool(a: np.ndarray, edges: np.ndarray, axis: int) -> np.ndarray:
    """Each band's entry of largest magnitude, signed, along `axis`."""
    if len(edges) - 1 == a.shape[axis]:
        return a
    mags = np.maximum.reduceat(np.abs(a), edges[:-1], axis=axis)
    highs = np.maximum.reduceat(a, edges[:-1], axis=axis)
    return np.where(highs >= mags, highs, -mags)


def reduce(a: np.ndarray, window: Window) -> np.ndarray:
    """The drawn part of a matrix (a vector is one row)."""
    a = a.reshape(1, -1) if a.ndim == 1 else a
    if window.rows is not None:
        a = a[np.asarray(window.rows, dtype=int)]
    else:
        a = _pool(a, _bands(a.shape[0]), 0)
    return _pool(a, _bands(a.shape[1]), 1)


def axes(shape: tuple[int, ...], window: Window, row_name: Callable[[int], str] | None = None) -> Axes:
    rows, cols = (1, shape[0]) if len(shape) == 1 else shape
    name = row_name or str

    def banded(edges: np.ndarray) -> tuple[str, ...]:
        return tuple(str(s) if e - s == 1 else f"{s}–{e - 1}" for s, e in zip(edges[:-1], edges[1:]))

    col_edges = _bands(cols)
    col_note = f"{cols:,} columns" if len(col_edges) - 1 == cols else \
        f"{cols:,} columns in {len(col_edges) - 1} bands"
    if window.rows is not None:
        labels = tuple(f"{r} {name(r)}" if row_name else str(r) for r in window.rows)
        note = f"{len(window.rows)} chosen rows of {rows:,}, {col_note}"
    else:
        edges = _bands(rows)
        labels = banded(edges)
        note = (f"all {rows:,} rows" if len(edges) - 1 == rows else f"{rows:,} rows in {len(edges) - 1} bands") + \
            f", {col_note}"
    if "bands" in note:
        note += " (a band shows its entry of largest magnitude)"
    return Axes((rows, cols), labels, banded(col_edges), note)


def shown(record: StepCoefficient, window: Window, row_name: Callable[[int], str] | None = None
          ) -> StepCoefficient:
    """The record as drawn: its matrices reduced (with `axes` and the whole record's `whole` summary) when
    the weight needs a view, else the record itself."""
    if not needed(record.W.shape, window):
        if any(isinstance(v, RowSparse) for v in record.classes.values()):
            return dataclasses.replace(record, classes={k: dense(v) for k, v in record.classes.items()})
        return record
    r = lambda a: reduce(a, window)  # noqa: E731
    return dataclasses.replace(record, W=r(record.W), G=r(record.G), grad=r(record.grad),
                               classes={k: r(dense(v)) for k, v in record.classes.items()},
                               terms={k: r(v) for k, v in record.terms.items()},
                               axes=axes(record.W.shape, window, row_name), whole=record.summary())


def shown_update(update: Update | None, window: Window) -> Update | None:
    if update is None or not needed(update.dW.shape, window):
        return update
    return dataclasses.replace(update, dW=reduce(update.dW, window))
