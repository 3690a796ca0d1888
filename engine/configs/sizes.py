"""What a config costs, by closed formulas, without building anything: the number of trained parameters, the
floats the optimizer keeps, and a rough estimate of training's memory; and `human_count` to show a count.

The builder shows these as the user types (no torch here), engine/configs/limits.py holds the estimates against
the machine's memory, and the command line prints the count.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..model.weight_layout import weight_shapes

if TYPE_CHECKING:
    from .config import ExperimentConfig, ModelConfig


# The probe batch holds at most this many tokens, in whole sequences of the context (at least one): every
# analysis of a run reads it (G and its split in one backward pass of it, a head timeline in about twenty, the
# whole model's route shares a few an interval), so its size sets what they cost. A lesson model's 4 × 64
# tokens are within it; GPT-2 small's context makes it one sequence of 1,024 (docs/figures.md#gpt-2-small).
PROBE_TOKENS = 1024


def probe_sequences(n_ctx: int, probe_batch: int) -> int:
    """How many of train.probe_batch's sequences of n_ctx tokens the probe batch holds: as many as PROBE_TOKENS
    allows, at least one."""
    return max(1, min(probe_batch, PROBE_TOKENS // n_ctx))


def parameter_count(m: ModelConfig) -> int:
    """Closed formula for the number of trained parameters (equals torch's count; tests check it).

    Per block (the tutorial's formula): attention 2·n_h·d·(d_v + d_q) with d_q = d_v = d/n_h, plus 4·d
    for the biases of Q, K, V and the output when `attn_bias` (GPT-2), MLP 2·d·d_f + d_f + d (weights
    and biases), and 2·d per layer norm (gain and bias), two per block. Embeddings d·n_vocab, plus
    d·n_ctx when positions are learned; a final layer norm (pre-LN); unembedding d·n_vocab + n_vocab, or
    only its bias n_vocab when tied to the embedding.
    """
    d, h, v = m.d_model, m.n_head, m.vocab_size
    dq = dv = d // h
    norms = 2 * (2 * d) if m.norm != "none" else 0
    attn = 2 * h * d * (dv + dq) + (4 * d if m.attn_bias else 0)
    block = attn + 2 * d * m.d_ff + d + m.d_ff + norms
    embed = d * v + (d * m.n_ctx if m.pos_encoding == "learned" else 0)
    final = 2 * d if m.has_final_norm else 0
    unembed = v if m.tied else d * v + v
    return m.n_layer * block + embed + final + unembed


def optimizer_state_floats(cfg: ExperimentConfig) -> int:
    """Floats the optimizer keeps: AdamW two moments per parameter; SGD one momentum buffer (none without
    momentum); Muon one momentum buffer per block matrix and AdamW's two moments for the rest
    (engine/training/optimizers.py)."""
    params, t = parameter_count(cfg.model), cfg.train
    if t.optimizer == "sgd":
        return params if t.momentum else 0
    if t.optimizer == "muon":
        matrices = sum(math.prod(s) for n, s in weight_shapes(cfg.model).items()
                       if n.startswith("blocks.") and len(s) == 2)
        return matrices + 2 * (params - matrices)
    return 2 * params


def memory_estimate_bytes(cfg: ExperimentConfig, bytes_per_float: int = 4) -> int:
    """Rough training memory: weights, gradients and the optimizer's state (optimizer_state_floats), plus
    the activations kept for the backward pass (about 16 tensors of B·T·d per block and the attention maps
    B·h·T·T), and the model's two masks (T·T floats and T·T booleans, whatever the precision)."""
    m, t = cfg.model, cfg.train
    params = parameter_count(m)
    b, n = t.batch_size, m.n_ctx
    per_block = 16 * b * n * m.d_model + 2 * b * n * m.d_ff + 3 * b * m.n_head * n * n
    acts = m.n_layer * per_block + 3 * b * n * m.vocab_size
    return bytes_per_float * (2 * params + optimizer_state_floats(cfg) + acts) + 5 * n * n


def human_count(n: int) -> str:
    """12_345 -> '12.3k'; used by the CLI and the builder."""
    if n < 1000:
        return str(n)
    exp = min(int(math.log10(n) // 3), 3)
    return f"{n / 10 ** (3 * exp):.3g}{'kMG'[exp - 1]}"
