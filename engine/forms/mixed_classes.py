"""The mixed form by route classes: how A's update moves each route class of B's coefficient
(docs/second-order.md#route-classes-of-the-mixed-form).

A model's mixed form soon has too many terms to list (two layers of `tiny` already have 4,480 for one pair);
as for the first order, route classes group them. The class split of B's coefficient, G_B = Σ_c G_B^c
(engine/forms/evaluate.py `classes`, docs/route-classes.md), is a function of the weights, so its derivative
along A's update ΔA,

    dG_B^c[ΔA]   (B's shape), summed over the classes c: −H_BA ΔA,

is the forward-mode derivative (torch.func.jvp) of the class automaton itself, at about the cost of one class
split of B. Its classes are the mixed terms': with V on B, ⟨V, dG_B^c[ΔA]⟩ = ⟨Σ_{mixed terms t of class c}
M_t^t, ΔA⟩ (engine/forms/mixed.py; tests check both identities in float64).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from . import gpt
from .evaluate import Bound, classes


def class_moves(cfg, weights: Mapping, x, y, weight: str, other: str, delta: torch.Tensor,
                by_head: bool = False) -> dict[str, torch.Tensor]:
    """route class of `weight` (B) -> dG_B^c along `delta` on `other` (A), in B's shape, float64; `cfg` a
    resolved ModelConfig, `weights` by state-dict key, x and y the probe batch (B, T)."""
    forms = gpt.derive(cfg)
    net = forms.net
    B, A = net.find(weight)[0].name, net.find(other)[0].name
    base = {k: torch.as_tensor(v).detach().to(torch.float64) for k, v in weights.items()}
    x, y = torch.as_tensor(x), torch.as_tensor(y)

    def split(a: torch.Tensor) -> dict[str, torch.Tensor]:
        values, scalars = gpt.leaves(net, {**base, A: a}, x, y, detach=False)
        return classes(Bound(net, values, scalars), forms, B, by_head)[B]

    _, moves = torch.func.jvp(split, (base[A],), (torch.as_tensor(delta).detach().to(torch.float64),))
    return moves


__all__ = ["class_moves"]
