"""Models whose weights are set by hand so that known heads do known things: the planted heads the head scores
must find (a previous-token head, and an induction circuit by K-composition, Elhage et al. 2021)."""

from __future__ import annotations

import numpy as np
import torch

from engine.config import ModelConfig
from engine.model import GPT

V, N = 24, 16        # vocabulary and context
D = 3 * V + N        # residual stream: token one-hot | position one-hot | previous token | token to predict
TOK, POS, PREV, OUT = 0, V, V + N, 2 * V + N
SHARP = 12.0         # query and key scale: scores SHARP²/√d_k ≈ 22 apart, so a planted head attends ~only there


def config(n_layer: int = 2) -> ModelConfig:
    """Attention-only in effect: ModelConfig has no switch for the MLP, so its weights are set to zero
    (GELU(0)·0 = 0 with zero biases); no layer norm so the one-hot subspaces stay as they are."""
    return ModelConfig(n_layer=n_layer, n_head=2, d_model=D, d_ff=4, n_ctx=N, vocab_size=V, pos_encoding="learned",
                       norm="none", tied=False)


def induction_circuit() -> GPT:
    """Layer 0 head 0 attends to the previous token and writes it to PREV; layer 1 head 0 queries with the
    current token against keys that hold PREV (K-composition), so it attends to the token after an earlier
    copy of the current one and copies that token into OUT, which the unembedding reads. Heads 1 are zero."""
    m = GPT(config())
    with torch.no_grad():
        for p in m.parameters():
            p.zero_()
        eye_v, eye_n = torch.eye(V), torch.eye(N)
        m.W_E[:, TOK:TOK + V] = eye_v
        m.W_P[:, POS:POS + N] = eye_n
        b0, b1 = m.blocks
        b0.W_Q[POS:POS + N, :N] = SHARP * eye_n                     # query i → slot i
        b0.W_K[POS:POS + N - 1, 1:N] = SHARP * eye_n[:-1, :-1]      # key j → slot j + 1: matches query j + 1
        b0.W_V[TOK:TOK + V, :V] = eye_v
        b0.W_O[:V, PREV:PREV + V] = eye_v
        b1.W_Q[TOK:TOK + V, :V] = SHARP * eye_v                     # query: my token
        b1.W_K[PREV:PREV + V, :V] = SHARP * eye_v                   # key: the token before me
        b1.W_V[TOK:TOK + V, :V] = eye_v
        b1.W_O[:V, OUT:OUT + V] = eye_v
        m.W_U[OUT:OUT + V, :] = 5.0 * eye_v
    return m.eval()


def previous_token_only() -> GPT:
    """One layer whose head 0 is the previous-token head above (head 1 zero)."""
    m = GPT(config(n_layer=1))
    full = induction_circuit().state_dict()
    m.load_state_dict({k: v for k, v in full.items() if not k.startswith("blocks.1.")})
    return m.eval()


def random_ids(batch: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(seed).integers(0, V, (batch, N + 1))
    return x[:, :-1], x[:, 1:]
