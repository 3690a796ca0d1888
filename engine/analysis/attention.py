"""What a model's attention does with a prompt, as the Heatmaps pane and `export` show it: pure functions
of a loaded GPT (engine.model.probes does the forward passes), returning frozen dataclasses of numpy arrays.

attention: every layer's and head's weights, with each head's mean row entropy and distance attended;
masks: the same weights under the mask in force, causal, banded β and none; positional: the encoding
matrix P, its similarity P Pᵗ and, for sinusoids, the shift map M_k with its error (engine/model/probes.py);
attention_diff: how every head's attention on one prompt changed between two saved steps.

A prompt's attention holds layers × heads × T² entries several times over (the scores before and after the
mask and the weights, in torch and then in numpy): on GPT-2 small a 1024-token prompt asked for ~8.75 GB.
So the prompt is cut, before anything is allocated, to the longest that fits ATTENTION_BYTES
(`token_cap`), and the result says so in one line (`note`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..model.probes import AttentionMaps

ATTENTION_BYTES = 2**30  # the most one prompt's attention (or masks) may take at its peak
# Bytes each (layer, head, query, key) entry takes at the peak, measured (VmHWM after clear_refs) on GPT-2
# small's shape at 256 and 400 tokens: 49–50 for attention (the trace's three float32 stacks, their float64
# copies and one more while NaN is written); masks keep four float64 weight stacks beside one trace, ~71
# besides the three models rebuilt under the other masks (~0.5 GB each on GPT-2 small, not counted here).
BYTES_PER_ENTRY = {"attention": 50, "masks": 80}
BAND = 4   # β of the banded mask the masks are compared with, until the user chooses another
SHIFT = 1  # k of the shift map P[p + k] ≈ P[p] M_k, until the user chooses another


@dataclass(frozen=True)
class AttentionResult:
    step: int
    maps: AttentionMaps
    entropy: np.ndarray   # (L, H) mean row entropy, nats
    distance: np.ndarray  # (L, H) mean distance attended, tokens
    note: str = ""        # why the prompt was cut shorter than the context allows (token_cap), else ""


@dataclass(frozen=True)
class MasksResult:
    step: int
    tokens: tuple[str, ...]
    in_force: str                    # the model's mask, as the first of `names` reads
    names: tuple[str, ...]           # in force, causal, banded β, none
    masks: dict[str, np.ndarray]     # name -> (T, T), 1 allowed, NaN masked
    weights: dict[str, np.ndarray]   # name -> (L, H, T, T) attention under that mask, same weights
    note: str = ""                   # why the prompt was cut (token_cap), else ""


@dataclass(frozen=True)
class PositionalResult:
    step: int
    kind: str                       # sinusoidal | learned | none
    P: np.ndarray                   # (n_ctx, d_model)
    similarity: np.ndarray          # (n_ctx, n_ctx) P Pᵗ
    shift: int
    M: np.ndarray | None            # (d, d) M_k, sinusoidal only
    error: np.ndarray | None        # (n_ctx − k,) max |P[p+k] − P[p] M_k| per p, sinusoidal only


@dataclass(frozen=True)
class AttentionDiff:
    step: int
    other_step: int
    tokens: tuple[str, ...]
    diff: np.ndarray   # (L, H, T, T) attention at `step` minus at `other_step`, NaN where masked
    note: str = ""     # why the prompt was cut (token_cap), else ""


def attention_diff(at: AttentionResult, other: AttentionResult) -> AttentionDiff:
    """Attention weights of `at` minus those of `other`, the same prompt through the same architecture:
    each entry in [−1, 1], each row summing to 0 (both rows are distributions over the same keys)."""
    if at.maps.tokens != other.maps.tokens:
        raise ValueError("attention of two steps is compared on the same prompt")
    return AttentionDiff(at.step, other.step, at.maps.tokens, at.maps.weights - other.maps.weights, at.note)


def mask_label(kind: str, band: int) -> str:
    return {"causal": "causal", "none": "none"}.get(kind, f"banded, β = {band}")


def prompt_tokens(tokenizer, prompt: str, n_ctx: int) -> tuple[np.ndarray, tuple[str, ...]]:
    """Token ids of `prompt` cut to the context `n_ctx`, and their visible labels."""
    from ..model import probes

    ids = probes.prompt_ids(tokenizer, prompt, n_ctx)
    return ids, probes.visible_tokens(tokenizer, ids)


def token_cap(n_layer: int, n_head: int, n_ctx: int, what: str = "attention") -> int:
    """The most prompt tokens whose attention (`what`: attention | masks) fits ATTENTION_BYTES."""
    entries = ATTENTION_BYTES // (BYTES_PER_ENTRY[what] * n_layer * n_head)
    return max(1, min(n_ctx, math.isqrt(entries)))


def capped_tokens(tokenizer, prompt: str, cfg, what: str = "attention") -> tuple[np.ndarray, tuple[str, ...], str]:
    """`prompt_tokens` cut to `token_cap` before anything is computed, and the one line that says so ("" when
    the whole prompt fits)."""
    from ..model import probes

    ids = probes.prompt_ids(tokenizer, prompt, cfg.n_ctx)
    cap = token_cap(cfg.n_layer, cfg.n_head, cfg.n_ctx, what)
    note = ""
    if len(ids) > cap:
        heads, n = cfg.n_layer * cfg.n_head, len(ids)
        need = BYTES_PER_ENTRY[what] * heads * n * n
        note = (f"Showing the prompt's first {cap} of {n} tokens: the {what} of {heads} heads at {n} tokens "
                f"would take {need / 2**30:.1f} GB, over the {ATTENTION_BYTES / 2**30:.0f} GB this view may use.")
        ids = ids[:cap]
    return ids, probes.visible_tokens(tokenizer, ids), note


def attention(model, tokenizer, prompt: str, step: int) -> AttentionResult:
    from ..model import probes

    ids, tokens, note = capped_tokens(tokenizer, prompt, model.cfg)
    maps, entropy, distance = probes.summarised_attention(model, ids, tokens)
    return AttentionResult(step, maps, entropy, distance, note)


def masks(model, tokenizer, prompt: str, band: int, step: int, reuse: dict | None = None) -> MasksResult:
    """`reuse` keeps the model rebuilt under each other mask between calls ((kind, band) -> GPT)."""
    from ..model import probes

    ids, tokens, note = capped_tokens(tokenizer, prompt, model.cfg, "masks")
    cfg, T = model.cfg, len(ids)
    in_force = f"in force: {mask_label(cfg.mask, cfg.band)}"
    variants = {in_force: (cfg.mask, cfg.band), "causal": ("causal", band),
                mask_label("banded", band): ("banded", band), "none": ("none", band)}
    matrices = {name: probes.mask_matrix(kind, T, b) for name, (kind, b) in variants.items()}
    weights = probes.attention_under_masks(model, ids, variants, {} if reuse is None else reuse)
    return MasksResult(step, tokens, in_force, tuple(variants), matrices, weights, note)


def positional(model, shift: int, step: int) -> PositionalResult:
    from ..model import probes

    P = probes.positional_matrix(model)
    kind, k = model.cfg.pos_encoding, min(max(shift, 1), P.shape[0] - 1)
    M = error = None
    if kind == "sinusoidal":
        M = probes.shift_map(k, P.shape[1])
        error = probes.shift_error(P, M, k)
    return PositionalResult(step, kind, P, probes.similarity(P), k, M, error)
