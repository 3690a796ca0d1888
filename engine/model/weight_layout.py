"""The trained weights of a GPT, named and shaped, without building it (no torch, so the GUI thread may ask).

The one statement of the weight layout that `engine.model.gpt.GPT` builds (its docstring lists it): the
state-dict keys in model order with their shapes. `weight_names`, the forms' parameters
(`engine.forms.gpt`) and the block diagram (`gui.panes.architecture.block_diagram`) derive from it, and
tests/engine/model/test_model.py holds it equal to `GPT(cfg).state_dict()` for every switch that changes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # an annotation only: configs reach this module through their sizes (engine/configs/sizes.py)
    from ..configs.config import ModelConfig

# With `attn_bias`, each block's attention adds b_Q, b_K, b_V to its queries, keys and values and b_O to its
# output; a head owns the same columns h·d_k … (h+1)·d_k − 1 of b_Q, b_K, b_V as of W_Q, W_K, W_V.
ATTENTION_BIASES = ("b_Q", "b_K", "b_V", "b_O")


def weight_shapes(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Trained weights in forward-pass order (the state-dict keys) with their shapes, without building the model.

    The one statement of the weight layout: `weight_names`, the forms' parameters and the block diagram
    derive from it, and a test holds it equal to `GPT(cfg).state_dict()`.
    """
    d, f, V = cfg.d_model, cfg.d_ff, cfg.vocab_size
    norm = cfg.norm != "none"
    out: dict[str, tuple[int, ...]] = {"W_E": (V, d)}
    if cfg.pos_encoding == "learned":
        out["W_P"] = (cfg.n_ctx, d)
    for i in range(cfg.n_layer):
        p = f"blocks.{i}."
        out.update({p + n: (d, d) for n in ("W_Q", "W_K", "W_V", "W_O")})
        if cfg.attn_bias:
            out.update({p + n: (d,) for n in ATTENTION_BIASES})
        if norm:
            out.update({p + "ln1.g": (d,), p + "ln1.b": (d,)})
        out.update({p + "W_in": (d, f), p + "b_in": (f,), p + "W_out": (f, d), p + "b_out": (d,)})
        if norm:
            out.update({p + "ln2.g": (d,), p + "ln2.b": (d,)})
    if cfg.has_final_norm:
        out.update({"ln_f.g": (d,), "ln_f.b": (d,)})
    if not cfg.tied:
        out["W_U"] = (d, V)
    out["b_U"] = (V,)
    return out


def weight_names(cfg: ModelConfig) -> list[str]:
    """Trained weights in model order (the state-dict keys), without building the model."""
    return list(weight_shapes(cfg))
