"""What a model's attention does with a prompt, as the Heatmaps pane and `export` show it: pure functions
of a loaded GPT (engine.model.probes does the forward passes), returning frozen dataclasses of numpy arrays.

attention: every layer's and head's weights, with each head's mean row entropy and distance attended;
masks: the same weights under the mask in force, causal, banded β and none; positional: the encoding
matrix P, its similarity P Pᵗ and, for sinusoids, the shift map M_k with its error (engine/model/probes.py);
attention_diff: how every head's attention on one prompt changed between two saved steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..model.probes import AttentionMaps


@dataclass(frozen=True)
class AttentionResult:
    step: int
    maps: AttentionMaps
    entropy: np.ndarray   # (L, H) mean row entropy, nats
    distance: np.ndarray  # (L, H) mean distance attended, tokens


@dataclass(frozen=True)
class MasksResult:
    step: int
    tokens: tuple[str, ...]
    in_force: str                    # the model's mask, as the first of `names` reads
    names: tuple[str, ...]           # in force, causal, banded β, none
    masks: dict[str, np.ndarray]     # name -> (T, T), 1 allowed, NaN masked
    weights: dict[str, np.ndarray]   # name -> (L, H, T, T) attention under that mask, same weights


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


def attention_diff(at: AttentionResult, other: AttentionResult) -> AttentionDiff:
    """Attention weights of `at` minus those of `other`, the same prompt through the same architecture:
    each entry in [−1, 1], each row summing to 0 (both rows are distributions over the same keys)."""
    if at.maps.tokens != other.maps.tokens:
        raise ValueError("attention of two steps is compared on the same prompt")
    return AttentionDiff(at.step, other.step, at.maps.tokens, at.maps.weights - other.maps.weights)


def mask_label(kind: str, band: int) -> str:
    return {"causal": "causal", "none": "none"}.get(kind, f"banded, β = {band}")


def prompt_tokens(tokenizer, prompt: str, n_ctx: int) -> tuple[np.ndarray, tuple[str, ...]]:
    """Token ids of `prompt` cut to the context `n_ctx`, and their visible labels."""
    from ..model import probes

    ids = probes.prompt_ids(tokenizer, prompt, n_ctx)
    return ids, probes.visible_tokens(tokenizer, ids)


def attention(model, tokenizer, prompt: str, step: int) -> AttentionResult:
    from ..model import probes

    ids, tokens = prompt_tokens(tokenizer, prompt, model.cfg.n_ctx)
    maps = probes.attention_maps(model, ids, tokens)
    entropy, distance = probes.head_summaries(maps.weights)
    return AttentionResult(step, maps, entropy, distance)


def masks(model, tokenizer, prompt: str, band: int, step: int, reuse: dict | None = None) -> MasksResult:
    """`reuse` keeps the model rebuilt under each other mask between calls ((kind, band) -> GPT)."""
    from ..model import probes

    ids, tokens = prompt_tokens(tokenizer, prompt, model.cfg.n_ctx)
    cfg, T = model.cfg, len(ids)
    in_force = f"in force: {mask_label(cfg.mask, cfg.band)}"
    variants = {in_force: (cfg.mask, cfg.band), "causal": ("causal", band),
                mask_label("banded", band): ("banded", band), "none": ("none", band)}
    matrices = {name: probes.mask_matrix(kind, T, b) for name, (kind, b) in variants.items()}
    weights = probes.attention_under_masks(model, ids, variants, {} if reuse is None else reuse)
    return MasksResult(step, tokens, in_force, tuple(variants), matrices, weights)


def positional(model, shift: int, step: int) -> PositionalResult:
    from ..model import probes

    P = probes.positional_matrix(model)
    kind, k = model.cfg.pos_encoding, min(max(shift, 1), P.shape[0] - 1)
    M = error = None
    if kind == "sinusoidal":
        M = probes.shift_map(k, P.shape[1])
        error = probes.shift_error(P, M, k)
    return PositionalResult(step, kind, P, probes.similarity(P), k, M, error)
