"""What numpy_gpt.py reads, from a run's config and weights: the config as a plain dict and the weights as
float64 arrays, with the positional matrix the model adds (a sinusoidal model's buffer included, as
engine.model.gpt.GPT builds it: in float32, then widened)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from ..configs.config import ModelConfig


def config_dict(cfg: ModelConfig) -> dict:
    """ModelConfig's fields as a plain dict (what numpy_gpt's functions take as `cfg`)."""
    return dataclasses.asdict(cfg)


def numpy_weights(cfg: ModelConfig, weights: Mapping) -> dict[str, np.ndarray]:
    """{name: float64 array} of the trained weights, plus W_P for a sinusoidal model."""
    out = {k: np.asarray(v.detach().double().numpy() if hasattr(v, "detach") else v, dtype=np.float64)
           for k, v in weights.items()}
    if cfg.pos_encoding == "sinusoidal":
        from ..model import positional

        out["W_P"] = positional.sinusoidal(cfg.n_ctx, cfg.d_model).double().numpy()
    return out


__all__ = ["config_dict", "numpy_weights"]
