"""Muon with its Newton–Schulz iterations stacked by shape: torch.optim.Muon's update in fewer, larger products.

torch.optim.Muon orthogonalises each matrix's momentum on its own: five Newton–Schulz iterations of three small
bfloat16 products per matrix, so a 4-layer model's 24 block matrices cost 360 matrix products a step, each too
small to keep a core busy. `StackedMuon` stacks the matrices of one shape (a tall one transposed, as torch's
iteration transposes it) and runs the same iteration as batched products, 5 × 3 per shape. Each matrix of the
stack sees the same arithmetic in the same order (its own Frobenius norm, the same coefficients, the same
bfloat16 products). On the `nanogpt-cpu` shapes (128 × 128, 128 × 512) the weights it produces are torch's bit
for bit; on tiny matrices (16 × 16) the CPU's batched bfloat16 product can round its last bit otherwise than the
single one, and the two differ by that rounding (tests/engine/training/test_muon.py checks both against
torch.optim.Muon). Either way a run is reproducible under this optimizer, and its state is torch's, so a
checkpoint written under one resumes under the other.

Measured for issue 28 on the `nanogpt-cpu` model at one thread (16 matrices 128 × 128 and 8 of 128 × 512):
torch's iteration 20.9 ms a step, stacked 14.0 ms (`python benchmarks/fast_recipe.py` times the whole recipe).
"""

from __future__ import annotations

import math
from collections import defaultdict

import torch

from .eager_optimizers import Eager


def newton_schulz_stacked(stack: torch.Tensor, coefficients: tuple[float, float, float], steps: int,
                          eps: float) -> torch.Tensor:
    """The quintic Newton–Schulz iteration of torch.optim.Muon on a stack (k, m, n) with m ≤ n, in bfloat16."""
    a, b, c = coefficients
    x = stack.bfloat16()
    x = x / x.flatten(1).norm(dim=1).clamp(min=eps)[:, None, None]  # each matrix's spectral norm ≤ 1
    for _ in range(steps):
        gram = x @ x.mT
        update = torch.baddbmm(gram, gram, gram, beta=b, alpha=c)
        x = torch.baddbmm(x, update, x, beta=a)
    return x


def shape_lr(lr: float, adjust: str | None, shape: torch.Size) -> float:
    """torch.optim.Muon's learning rate for a matrix of `shape`: ×√max(1, rows/cols), or ×0.2·√max(rows, cols)
    for `adjust_lr_fn="match_rms_adamw"` (an update as large as AdamW's)."""
    rows, cols = shape
    return lr * (0.2 * math.sqrt(max(rows, cols)) if adjust == "match_rms_adamw" else math.sqrt(max(1.0, rows / cols)))


class StackedMuon(Eager, torch.optim.Muon):
    """torch.optim.Muon whose Newton–Schulz iterations run one stack per matrix shape (see the module docstring),
    without torch's compiler wrappers (engine/training/eager_optimizers.py)."""

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params: list[torch.Tensor] = []
            grads: list[torch.Tensor] = []
            buffers: list[torch.Tensor] = []
            self._init_group(group, params, grads, buffers)
            lr, momentum = float(group["lr"]), group["momentum"]
            updates = []
            for grad, buf in zip(grads, buffers):
                buf.lerp_(grad, 1 - momentum)
                updates.append(grad.lerp(buf, momentum) if group["nesterov"] else buf)
            by_shape: dict[tuple[int, int], list[int]] = defaultdict(list)
            for i, u in enumerate(updates):
                by_shape[tuple(sorted(u.shape))].append(i)  # a tall matrix goes in transposed
            for indices in by_shape.values():
                wide = [updates[i] if updates[i].size(0) <= updates[i].size(1) else updates[i].T for i in indices]
                done = newton_schulz_stacked(torch.stack(wide), group["ns_coefficients"], group["ns_steps"],
                                             group["eps"])
                for i, x in zip(indices, done):
                    param = params[i]
                    update = x if param.size(0) <= param.size(1) else x.T
                    param.mul_(1 - lr * group["weight_decay"])
                    param.add_(update, alpha=-shape_lr(lr, group["adjust_lr_fn"], param.shape))
        return loss


__all__ = ["StackedMuon", "newton_schulz_stacked", "shape_lr"]
