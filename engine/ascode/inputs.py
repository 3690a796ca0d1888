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


def numpy_weights(cfg: ModelConfig, weights: Mapping, dtype=np.float64) -> dict[str, np.ndarray]:
    """{name: array} of the trained weights in `dtype`, plus W_P for a sinusoidal model."""
    out = {k: np.asarray(v.detach().double().numpy() if hasattr(v, "detach") else v, dtype=dtype)
           for k, v in weights.items()}
    if cfg.pos_encoding == "sinusoidal":
        from ..model import positional

        out["W_P"] = positional.sinusoidal(cfg.n_ctx, cfg.d_model).double().numpy().astype(dtype)
    return out


def vectorised_erf() -> None:
    """numpy_gpt's erf by torch (vectorised, as exact in float64) instead of math.erf one entry at a time: a
    GELU model's forward pass spent half its time there (nanogpt-cpu's probe: 0.1 of 0.2 s)."""
    import torch

    from . import numpy_gpt

    numpy_gpt.erf = lambda u: torch.erf(torch.from_numpy(np.ascontiguousarray(u))).numpy()


__all__ = ["config_dict", "numpy_weights", "vectorised_erf"]
