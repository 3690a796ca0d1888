"""Probes: the attention, masks and positional encodings the heatmaps pane and `gpt-explorer export` show.

Pure functions without Qt, returning owned numpy arrays. Attention is softmax(Q Kᵗ/√d_k + M) of
"Attention is all you need" (Vaswani et al. 2017, §3.2.1), read from the model's explicit path
(`GPT.attention_trace`); rows are queries, columns keys. Masked entries are NaN in everything returned here
(never −inf), so displays and exports can draw them as "masked". The shift map M_k with
P[p + k] = P[p] M_k is the linear-offset property of sinusoidal encodings the paper cites (§3.5).
`induction_probe` is the standard induction probe: random tokens repeated twice (Olsson et al. 2022, "In-context
learning and induction heads", §2), drawn from the corpus's own token distribution and stored with each run.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch

from . import masks, positional
from ..errors import UserError
from .gpt import GPT

_VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"}


@dataclass(frozen=True)
class AttentionMaps:
    """What every head of every layer did with one prompt."""

    tokens: tuple[str, ...]  # the prompt's tokens, whitespace made visible (axis labels)
    ids: np.ndarray          # (T,) token ids
    mask: np.ndarray         # (T, T) bool, True where the query (row) may attend to the key (column)
    scores: np.ndarray       # (L, H, T, T) Q Kᵗ / √d_k before the mask, in the model's dtype as the others
    masked: np.ndarray       # (L, H, T, T) scores after the mask, NaN where masked
    weights: np.ndarray      # (L, H, T, T) attention rows (sum to 1), NaN where masked


def prompt_ids(tokenizer, prompt: str, n_ctx: int) -> np.ndarray:
    """Token ids of the prompt, cut to the context length; an empty prompt is a UserError."""
    ids = np.asarray(tokenizer.encode(prompt), dtype=np.int64)[:n_ctx]
    if ids.size == 0:
        raise UserError("the prompt is empty: type a line of text")
    return ids


def _visible(c: str) -> str:
    if c in _VISIBLE:
        return _VISIBLE[c]
    return c if c.isprintable() else c.encode("unicode_escape").decode("ascii")


def visible_tokens(tokenizer, ids) -> tuple[str, ...]:
    """Token strings with spaces and newlines drawn as ␣ and ↵ so they read as axis labels, and any other
    character that prints nothing (a byte-level BPE's control bytes: "\x03") as its escape, as a lone byte of a
    longer character already is ("\xe6")."""
    return tuple("".join(_visible(c) for c in s) or "∅" for s in tokenizer.token_strings(ids))


def mask_matrix(kind: str, n: int, band: int = 1) -> np.ndarray:
    """(n, n) display of a mask: 1 where a query may attend, NaN where it is masked."""
    ok = masks.allowed(kind, n, band).numpy()
    return np.where(ok, 1.0, np.nan)


def attention_maps(model: GPT, ids: np.ndarray, tokens: tuple[str, ...] = ()) -> AttentionMaps:
    """Run the prompt through the explicit attention path (eval mode: no dropout) and stack the layers."""
    return summarised_attention(model, ids, tokens)[0]


def summarised_attention(model: GPT, ids: np.ndarray, tokens: tuple[str, ...] = ()
                         ) -> tuple[AttentionMaps, np.ndarray, np.ndarray]:
    """`attention_maps` and each head's `head_summaries` (L, H), these read from the weights before their
    masked entries become NaN (zeros then: one copy of the stack fewer)."""
    was_training = model.training
    model.eval()
    try:
        idx = torch.as_tensor(np.asarray(ids), dtype=torch.long, device=_device(model))[None]
        trace = model.attention_trace(idx)
    finally:
        model.train(was_training)
    T = idx.shape[1]
    masked = ~model.mask_ok[:T, :T].cpu()

    def stack(name: str) -> torch.Tensor:  # (L, H, T, T) in the model's dtype, on the CPU
        out = torch.empty((len(trace), *trace[0].weights.shape[1:]), dtype=trace[0].weights.dtype)
        for layer, t in zip(out, trace):
            layer.copy_(getattr(t, name)[0])
        return out

    scores, weights = stack("scores"), stack("weights")
    entropy, distance = _summaries(weights)
    weights.masked_fill_(masked, float("nan"))
    # the scores after the mask are the scores where the mask allows (it adds 0 there), NaN elsewhere
    maps = AttentionMaps(tuple(tokens), np.asarray(ids).copy(), (~masked).numpy(), scores.numpy(),
                         scores.masked_fill(masked, float("nan")).numpy(), weights.numpy())
    return maps, entropy, distance


def head_summaries(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean row entropy (nats) and mean distance attended |i − j| (tokens), over the leading axes.

    weights (..., T, T) with NaN where masked; each row's entropy is −Σ_j w_ij log w_ij (0 log 0 = 0) and
    its distance Σ_j w_ij |i − j|; both are averaged over the query rows.
    """
    return _summaries(torch.nan_to_num(torch.as_tensor(weights), nan=0.0))


def _summaries(w: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """`head_summaries` of weights that are 0 where masked. In torch: GPT-2 small's 144 heads at 256 tokens
    took 2 s in numpy, ~0.2 s here."""
    entropy = -torch.special.xlogy(w, w).sum(dim=-1).mean(dim=-1)
    i = torch.arange(w.shape[-1])
    distance = (w * (i[:, None] - i[None, :]).abs().to(w.dtype)).sum(dim=-1).mean(dim=-1)
    return entropy.double().numpy(), distance.double().numpy()


def induction_probe(vocab_size: int, n_ctx: int, seed: int, batch: int,
                    counts: np.ndarray | None = None) -> np.ndarray:
    """(batch, 2·⌊n_ctx/2⌋) int64: each row a random sequence of ⌊n_ctx/2⌋ tokens followed by itself.

    Seeded from the run's seed, so the same run always gets the same probe. `counts` (each token's count in
    the training text) draws the tokens from the corpus's own distribution: uniform draws would fill a
    character model's probe with characters it has barely seen ('&', 'Z', '3'), whose attention says little
    about what the head does on text. Without `counts` the draw is uniform, as it was before counts were used
    (`Run.probe` derives that one for runs that predate stored probes). Tokens are drawn without replacement
    when enough distinct ones occur, so each token of the first half occurs once; else (a character
    vocabulary smaller than the half) with replacement, and a token's earlier occurrences are several (the
    induction score counts them all).
    """
    half = n_ctx // 2
    g = np.random.default_rng([seed, 14])  # 14: a stream of its own, apart from the run's other draws
    if counts is None:
        if vocab_size >= half:
            rows = [g.permutation(vocab_size)[:half] for _ in range(batch)]
        else:
            rows = [g.integers(0, vocab_size, half) for _ in range(batch)]
    else:
        p = np.asarray(counts, dtype=np.float64)[:vocab_size]
        p = p / p.sum()
        distinct = np.count_nonzero(p) >= half
        rows = [g.choice(vocab_size, half, replace=not distinct, p=p) for _ in range(batch)]
    first = np.asarray(rows, dtype=np.int64).reshape(batch, half)
    return np.concatenate([first, first], axis=1)


def with_mask(model: GPT, kind: str, band: int, reuse: GPT | None = None) -> GPT:
    """The same weights in a model whose mask is `kind` (band β for banded), in eval mode: the very tensors,
    shared, not copies (GPT-2 small's three other masks held 1.5 GB of copies), so only the masks are its own.
    `reuse`, a model built by an earlier call for the same config and mask, is given the weights again instead
    of building a new one."""
    cfg = dataclasses.replace(model.cfg, mask=kind, band=band)
    p = next(model.parameters())
    if reuse is None or reuse.cfg != cfg:
        with torch.device("meta"):  # no weights of its own; its masks are built on the CPU (gpt.py)
            reuse = GPT(cfg)
    reuse.load_state_dict(model.state_dict(), assign=True)
    return reuse.to(device=p.device, dtype=p.dtype).eval()


def attention_under_masks(model: GPT, ids: np.ndarray, masks_by_name: dict[str, tuple[str, int]],
                          models: dict | None = None) -> dict[str, np.ndarray]:
    """Attention weights (L, H, T, T, NaN where masked) under each named (kind, band), same weights.

    The whole model runs under the other mask, so from layer 1 on a head also sees how the earlier layers
    changed; in layer 0 this is exactly the head's own scores under the other mask. `models`, a dict the
    caller keeps, holds the re-masked models between calls so a refresh does not build them again.
    """
    models = {} if models is None else models
    out = {}
    for name, (kind, band) in masks_by_name.items():
        if (kind, band) == (model.cfg.mask, model.cfg.band):
            m = model
        else:
            m = models[kind, band] = with_mask(model, kind, band, models.get((kind, band)))
        out[name] = attention_maps(m, ids).weights
    return out


def positional_matrix(model: GPT) -> np.ndarray:
    """W_P (n_ctx, d_model): positions are rows, dimensions columns (zeros when positions are off)."""
    return model.W_P.detach().to("cpu", torch.float64).numpy().copy()


def similarity(P: np.ndarray) -> np.ndarray:
    """P·Pᵗ (n, n): how much the encodings of two positions overlap."""
    return P @ P.T


def shift_map(k: int, d_model: int) -> np.ndarray:
    """M_k (d, d), the fixed linear map with sinusoidal P[p + k] = P[p] M_k (block 2×2 rotations)."""
    return positional.shift_operator(k, d_model).numpy()


def shift_error(P: np.ndarray, M: np.ndarray, k: int) -> np.ndarray:
    """max_j |P[p + k, j] − (P[p] M)_j| for every position p that has a p + k, shape (n − k,)."""
    if not 0 < k < P.shape[0]:
        raise UserError(f"the shift k must be between 1 and {P.shape[0] - 1}")
    return np.abs(P[k:] - P[:-k] @ M).max(axis=1)


def _device(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device
