"""Each weight's update-to-weight ratio ‖ΔW‖ / ‖W‖ (Frobenius norms, W before the step): how far one optimizer step
moves a weight relative to its size, the figure Muon-era recipes steer by (modded-nanogpt's update/weight floor)
and Karpathy's "update : data" ratio, ~1e-3 in a healthy AdamW run.

Measuring needs the weight before the step, so `UpdateRatios` copies a few weights before each step and compares
after it, in rotation: an eighth of the model's bytes a step (at least 512 KB; a single larger weight alone), into
one buffer allocated at the first step, so every weight is measured about every 8 steps whatever the model's size.
nanogpt-cpu (0.8 M parameters): ~0.3 ms a step at one thread, ~0.5% of the step; GPT-2 small: 62 MB copied a step,
and W_E's 154 MB alone once in 8 steps. The copies add an eighth of the weights to training's memory, inside the
rounding of the configs' estimate (engine/configs/sizes.py: weights, gradients, AdamW's two moments, activations).
"""

from __future__ import annotations

import torch

EVERY = 8  # steps in which every weight comes round
MIN_BUDGET = 1 << 19  # bytes copied a step at least: fewer, smaller copies cost more in calls than in bytes


class UpdateRatios:
    """`before()` ahead of the optimizer's step, `after()` once it is done: {weight name: ‖ΔW‖ / ‖W‖} of the
    weights measured at this step (the next ones in rotation); NaN for a weight that was all zeros (a bias at
    its first step), which the run's log writes as null."""

    def __init__(self, named: list[tuple[str, torch.Tensor]], every: int = EVERY, min_budget: int = MIN_BUDGET):
        total = sum(w.numel() * w.element_size() for _, w in named)
        self.named, self.budget, self.next = named, max(min_budget, total // every), 0
        self._flat: torch.Tensor | None = None  # the copies' storage, allocated at the first step
        self._taken: list[tuple[str, torch.Tensor, torch.Tensor]] = []  # (name, weight, its copy)

    def before(self) -> None:
        """Copy the next weights in rotation, up to the budget (always at least one)."""
        if self._flat is None:
            first = self.named[0][1]
            total = sum(w.numel() for _, w in self.named)
            self._flat = torch.empty(min(total, self.budget // first.element_size()), dtype=first.dtype,
                                     device=first.device)
        self._taken, used = [], 0
        while len(self._taken) < len(self.named):
            name, weight = self.named[self.next]
            weight = weight.detach()
            fits = weight.dtype == self._flat.dtype and weight.device == self._flat.device and \
                used + weight.numel() <= self._flat.numel()
            if self._taken and not fits:
                break
            copy = self._flat[used:used + weight.numel()].view(weight.shape) if fits else torch.empty_like(
                weight, memory_format=torch.contiguous_format)  # a weight larger than the budget, alone
            used += weight.numel() if fits else 0
            copy.copy_(weight)
            self._taken.append((name, weight, copy))
            self.next = (self.next + 1) % len(self.named)
            if not fits:
                break

    @torch.no_grad()
    def after(self) -> dict[str, float]:
        if not self._taken:
            return {}
        names, weights, copies = zip(*self._taken)
        self._taken = []
        sizes = torch._foreach_norm(copies)
        torch._foreach_sub_(copies, weights)  # W before − W after: −ΔW
        moves = torch._foreach_norm(copies)
        moves, sizes = torch.stack(moves).float(), torch.stack(sizes).float()
        ratios = torch.where(sizes > 0, moves / sizes, torch.nan)  # a weight of zeros has no size to compare
        return dict(zip(names, ratios.tolist()))
