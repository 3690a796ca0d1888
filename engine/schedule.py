"""The learning-rate schedule: linear warm-up, then a cosine decay to a floor (nanoGPT's `get_lr`).

A plain function of the step and the TrainConfig, so the Training pane can draw the whole curve before
training starts and a resumed run continues on exactly the same curve.
"""

from __future__ import annotations

import math

from .config import TrainConfig


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate of the optimizer step with 0-based index `step` (the first step is 0).

    Warm-up: lr·(step + 1)/(warmup + 1) for step < warmup, so the first step already moves the weights.
    Then cosine from lr at step = warmup down to min_lr at step = steps, and min_lr after that.
    """
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / (cfg.warmup_steps + 1)
    span = max(cfg.steps - cfg.warmup_steps, 1)
    progress = min((step - cfg.warmup_steps) / span, 1.0)
    coeff = 0.5 * (1.0 + math.cos(math.pi * progress))  # 1 → 0
    return cfg.min_lr + coeff * (cfg.lr - cfg.min_lr)
