"""Positional encodings: sinusoidal exactly as in "Attention is all you need" (Vaswani et al. 2017, §3.5).

P[i, j] = sin(i / 10000^(j/d)) for even j and cos(i / 10000^((j−1)/d)) for odd j: positions are rows,
dimensions columns. For every offset k there is a fixed linear map M_k (block-diagonal 2×2 rotations)
with P[p + k] = P[p] M_k, the property the paper cites; `shift_operator` builds it.
"""

from __future__ import annotations

import torch


def sinusoidal(n_ctx: int, d_model: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """(n_ctx, d_model) sinusoidal encoding."""
    pos = torch.arange(n_ctx, dtype=torch.float64)[:, None]
    j = torch.arange(d_model)
    even = (j - j % 2).to(torch.float64)  # j for even j, j − 1 for odd j
    angle = pos / torch.pow(10000.0, even / d_model)
    p = torch.where(j % 2 == 0, torch.sin(angle), torch.cos(angle))
    return p.to(dtype)


def frequencies(d_model: int) -> torch.Tensor:
    """ω_m = 1 / 10000^(2m/d) for each sin/cos pair m."""
    m = torch.arange(0, d_model, 2, dtype=torch.float64)
    return 1.0 / torch.pow(10000.0, m / d_model)


def shift_operator(k: int, d_model: int) -> torch.Tensor:
    """(d, d) M_k with sinusoidal(n)[p + k] = sinusoidal(n)[p] @ M_k for every p (row vectors)."""
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    for pair, w in enumerate(frequencies(d_model)):
        c, s = torch.cos(k * w), torch.sin(k * w)
        a, b = 2 * pair, 2 * pair + 1
        # [sin(x+kw), cos(x+kw)] = [sin x, cos x] @ [[c, -s], [s, c]]
        m[a, a], m[a, b] = c, -s
        if b < d_model:
            m[b, a], m[b, b] = s, c
    return m
