"""The schedule: the learning rate of every step (linear warm-up, then nanoGPT's cosine decay to a floor or
modded-nanogpt's stable-then-decay), and Muon's momentum warm-up; `apply_schedule` sets both on an optimizer.

Plain functions of the step and the TrainConfig, so the Training pane can draw the whole curve before
training starts and a resumed run continues on exactly the same curve.
"""

from __future__ import annotations

import math

from ..configs.config import TrainConfig

MUON_MOMENTUM_START = 0.85  # modded-nanogpt's Muon momentum at step 0, rising to its 0.95 over 300 steps


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate of the optimizer step with 0-based index `step` (the first step is 0).

    Warm-up: lr·(step + 1)/(warmup + 1) for step < warmup, so the first step already moves the weights.
    Then, cosine: from lr at step = warmup down to min_lr at step = steps, and min_lr after that; wsd: lr
    until the last cooldown_frac of the steps, then linearly down to min_lr at step = steps.
    """
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / (cfg.warmup_steps + 1)
    if cfg.schedule == "wsd":
        cooldown = max(cfg.cooldown_frac * cfg.steps, 1.0)
        left = min(max((cfg.steps - step) / cooldown, 0.0), 1.0)  # 1 while stable → 0 at the end
        return cfg.min_lr + left * (cfg.lr - cfg.min_lr)
    span = max(cfg.steps - cfg.warmup_steps, 1)
    progress = min((step - cfg.warmup_steps) / span, 1.0)
    coeff = 0.5 * (1.0 + math.cos(math.pi * progress))  # 1 → 0
    return cfg.min_lr + coeff * (cfg.lr - cfg.min_lr)


def muon_momentum_at(step: int, cfg: TrainConfig) -> float:
    """Muon's momentum at `step`: from MUON_MOMENTUM_START up to muon_momentum over muon_momentum_warmup steps."""
    if step >= cfg.muon_momentum_warmup:
        return cfg.muon_momentum
    f = step / cfg.muon_momentum_warmup
    return (1 - f) * MUON_MOMENTUM_START + f * cfg.muon_momentum


def apply_schedule(optimizer, step: int, cfg: TrainConfig) -> float:
    """Set every parameter group's lr (scaled by its `lr_scale`) and Muon's momentum for `step`; returns lr."""
    lr = lr_at(step, cfg)
    for group in optimizer.param_groups:
        group["lr"] = lr * group.get("lr_scale", 1.0)  # Muon's matrices peak at muon_lr, the rest at lr
        if group.get("muon"):
            group["momentum"] = muon_momentum_at(step, cfg)
    return lr
