"""A coefficient kept as the rows it can be non-zero in (`RowSparse`), and the two things done with any
coefficient whatever its keeping: `dense` and `inner`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class RowSparse:
    """A matrix that is zero outside some of its rows: a route class of W_E's embedding reaches only the rows of
    the tokens in the probe (engine/coefficients/class_split.py), ~1,000 of GPT-2 small's 50,257."""

    rows: np.ndarray    # (n,) ascending row indices
    values: np.ndarray  # (n, cols)
    shape: tuple[int, int]

    @property
    def nbytes(self) -> int:
        return self.rows.nbytes + self.values.nbytes

    @property
    def dtype(self):
        return self.values.dtype

    def dense(self) -> np.ndarray:
        out = np.zeros(self.shape, dtype=self.values.dtype)
        out[self.rows] = self.values
        return out


def dense(a) -> np.ndarray:
    """A matrix whole, whether kept whole or as its rows (RowSparse)."""
    return a.dense() if isinstance(a, RowSparse) else a


def inner(a, b) -> float:
    """⟨a, b⟩ in float64; a may be RowSparse."""
    if isinstance(a, RowSparse):
        return float(np.sum(a.values.astype(np.float64) * np.asarray(b)[a.rows].astype(np.float64)))
    return float(np.sum(np.asarray(a, np.float64) * np.asarray(b, np.float64)))
