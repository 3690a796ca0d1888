"""Attention masks as boolean matrices: True where a query (row) may attend to a key (column).

causal: key j ≤ query i. banded causal with band β: i − β ≤ j ≤ i, so each token sees itself and at most β
earlier tokens. none: everything. The additive form (0 / −inf) is what the softmax sees; displays use
NaN for masked entries, never −inf.
"""

from __future__ import annotations

import torch


def allowed(kind: str, n: int, band: int = 1, device: torch.device | str | None = None) -> torch.Tensor:
    """(n, n) bool: rows are queries, columns keys."""
    i = torch.arange(n, device=device)[:, None]
    j = torch.arange(n, device=device)[None, :]
    if kind == "causal":
        return j <= i
    if kind == "banded":
        return (j <= i) & (j >= i - band)
    if kind == "none":
        return torch.ones(n, n, dtype=torch.bool, device=device)
    raise ValueError(f"unknown mask {kind!r}")


def additive(kind: str, n: int, band: int = 1, dtype: torch.dtype = torch.float32,
             device: torch.device | str | None = None) -> torch.Tensor:
    """(n, n) with 0 where allowed and −inf where masked, added to the scores before the softmax."""
    # in place: an out-of-place fill held two float copies at once, 10 bytes per entry at peak instead of 6
    return torch.zeros(n, n, dtype=dtype, device=device).masked_fill_(~allowed(kind, n, band, device),
                                                                      float("-inf"))
