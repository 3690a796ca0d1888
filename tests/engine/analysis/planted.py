"""Models whose weights are set by hand so that known heads do known things: the planted heads the head scores
must find (a previous-token head, and an induction circuit by K-composition, Elhage et al. 2021).

The default shape has more tokens than half a context (V=24, N=16), as a word or BPE vocabulary does; `CHAR`
is a character model's shape, with fewer tokens than half a context, so its induction probe repeats tokens.
"""

from __future__ import annotations

import numpy as np
import torch

from engine.configs.config import ModelConfig
from engine.model.gpt import GPT

V, N = 24, 16        # vocabulary and context
CHAR = (12, 32)      # a character-sized vocabulary under a context holding each of its tokens several times
SHARP = 12.0         # query and key scale: scores SHARP²/√d_k ≈ 22 apart, so a planted head attends ~only there


def config(n_layer: int = 2, v: int = V, n: int = N) -> ModelConfig:
    """Attention-only in effect: ModelConfig has no switch for the MLP, so its weights are set to zero
    (GELU(0)·0 = 0 with zero biases); no layer norm so the one-hot subspaces stay as they are. The residual
    stream is token one-hot | position one-hot | previous token | token to predict: 3v + n wide."""
    return ModelConfig(n_layer=n_layer, n_head=2, d_model=3 * v + n, d_ff=4, n_ctx=n, vocab_size=v,
                       pos_encoding="learned", norm="none", tied=False)


def induction_circuit(v: int = V, n: int = N) -> GPT:
    """Layer 0 head 0 attends to the previous token and writes it to PREV; layer 1 head 0 queries with the
    current token against keys that hold PREV (K-composition), so it attends to the token after every earlier
    copy of the current one and copies that token into OUT, which the unembedding reads. Heads 1 are zero."""
    TOK, POS, PREV, OUT = 0, v, v + n, 2 * v + n
    m = GPT(config(2, v, n))
    with torch.no_grad():
        for p in m.parameters():
            p.zero_()
        eye_v, eye_n = torch.eye(v), torch.eye(n)
        m.W_E[:, TOK:TOK + v] = eye_v
        m.W_P[:, POS:POS + n] = eye_n
        b0, b1 = m.blocks
        b0.W_Q[POS:POS + n, :n] = SHARP * eye_n                     # query i → slot i
        b0.W_K[POS:POS + n - 1, 1:n] = SHARP * eye_n[:-1, :-1]      # key j → slot j + 1: matches query j + 1
        b0.W_V[TOK:TOK + v, :v] = eye_v
        b0.W_O[:v, PREV:PREV + v] = eye_v
        b1.W_Q[TOK:TOK + v, :v] = SHARP * eye_v                     # query: my token
        b1.W_K[PREV:PREV + v, :v] = SHARP * eye_v                   # key: the token before me
        b1.W_V[TOK:TOK + v, :v] = eye_v
        b1.W_O[:v, OUT:OUT + v] = eye_v
        m.W_U[OUT:OUT + v, :] = 5.0 * eye_v
    return m.eval()


def previous_token_only(v: int = V, n: int = N) -> GPT:
    """One layer whose head 0 is the previous-token head above (head 1 zero)."""
    m = GPT(config(1, v, n))
    full = induction_circuit(v, n).state_dict()
    m.load_state_dict({k: w for k, w in full.items() if not k.startswith("blocks.1.")})
    return m.eval()


def random_ids(batch: int, seed: int, v: int = V, n: int = N) -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(seed).integers(0, v, (batch, n + 1))
    return x[:, :-1], x[:, 1:]
