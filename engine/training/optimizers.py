"""The optimizer as a geometry (docs/geometries.md): AdamW, SGD or Muon, built from TrainConfig.

    adamw   torch.optim.AdamW, fused: the diagonal metric √v̂ + ε (Loshchilov & Hutter 2019, decoupled decay)
    sgd     torch.optim.SGD with heavy-ball momentum: the Euclidean metric (weight decay is torch's L2 term)
    muon    torch.optim.Muon on the blocks' 2-D matrices (momentum, then Newton–Schulz ≈ U Vᵀ: the spectral
            norm, Jordan et al. 2024, https://kellerjordan.github.io/posts/muon/), its iterations stacked by
            shape (engine.training.muon.StackedMuon: the same update in fewer products), and
            torch.optim.AdamW on embeddings, unembedding, gains and biases, as torch's Muon documentation
            prescribes

Every parameter group carries `lr_scale`: its learning rate divided by `TrainConfig.lr`, so one schedule
(engine.training.schedule.lr_at) drives every group (Muon's matrices peak at `muon_lr`, the rest at `lr`). Weight
decay touches matrices only, never gains and biases (nanoGPT). Our weights are stored (in, out) for x @ W,
the transpose of torch.nn.Linear: Muon's shape-dependent lr factor √max(1, rows/cols) therefore falls on
W_out (512×128) rather than W_in, and the orthogonalised direction itself does not depend on the layout.

`MuonWithAdamW` only holds the two optimizers side by side (step, zero_grad, state dicts); it computes no
update itself. The classes are torch's without its compiler wrappers (engine/training/eager_optimizers.py).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from ..configs.config import OPTIMIZERS, TrainConfig
from .eager_optimizers import SGD, AdamW
from .muon import StackedMuon


def muon_parameters(model: torch.nn.Module) -> list[str]:
    """Names of the parameters Muon trains: the 2-D matrices inside the transformer blocks."""
    return [n for n, p in model.named_parameters() if p.requires_grad and p.ndim == 2 and n.startswith("blocks.")]


def _decay_groups(params: Iterable[torch.nn.Parameter], weight_decay: float, lr_scale: float = 1.0) -> list[dict]:
    params = list(params)
    return [{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay, "lr_scale": lr_scale},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0, "lr_scale": lr_scale}]


def _adamw(groups: list[dict], t: TrainConfig) -> torch.optim.AdamW:
    # fused: one kernel for every tensor of a group instead of ~10 operations per tensor (nanogpt-cpu's 53
    # tensors, one thread: 3.0 -> 0.7 ms a step); it rounds a few last bits otherwise than the loop, so a run
    # keeps the kind it started with (the flag is in its saved state, and a resume restores it)
    return AdamW(groups, lr=t.lr, betas=(t.beta1, t.beta2), eps=t.adam_eps, fused=True)


class MuonWithAdamW:
    """torch.optim.Muon for the blocks' matrices beside torch.optim.AdamW for every other parameter."""

    def __init__(self, muon: torch.optim.Muon, adamw: torch.optim.AdamW):
        self.muon, self.adamw = muon, adamw

    @property
    def param_groups(self) -> list[dict]:
        return self.muon.param_groups + self.adamw.param_groups

    @property
    def state(self) -> dict:
        """Per-parameter state of both (a parameter belongs to exactly one of them)."""
        return {**self.adamw.state, **self.muon.state}

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.muon.zero_grad(set_to_none=set_to_none)
        self.adamw.zero_grad(set_to_none=set_to_none)

    def step(self) -> None:
        self.muon.step()
        self.adamw.step()

    def state_dict(self) -> dict:
        return {"muon": self.muon.state_dict(), "adamw": self.adamw.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        if not isinstance(state, dict) or set(state) != {"muon", "adamw"}:
            raise ValueError("the optimizer state is not a Muon + AdamW state (was the run trained with another "
                             "optimizer?)")
        self.muon.load_state_dict(state["muon"])
        self.adamw.load_state_dict(state["adamw"])


def make_optimizer(model: torch.nn.Module, t: TrainConfig):
    """The optimizer `t.optimizer` names, over the model's trainable parameters (see the module docstring)."""
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    params = [p for _, p in named]
    if t.optimizer == "sgd":
        return SGD(_decay_groups(params, t.weight_decay), lr=t.lr, momentum=t.momentum)
    if t.optimizer == "muon":
        chosen = set(muon_parameters(model))
        matrices = [p for n, p in named if n in chosen]
        muon = StackedMuon([{"params": matrices, "lr_scale": t.muon_lr / t.lr, "muon": True}], lr=t.muon_lr,
                           weight_decay=t.weight_decay, momentum=t.muon_momentum, ns_steps=t.muon_ns_steps)
        rest = [p for n, p in named if n not in chosen]
        return MuonWithAdamW(muon, _adamw(_decay_groups(rest, t.weight_decay), t))
    if t.optimizer == "adamw":
        return _adamw(_decay_groups(params, t.weight_decay), t)
    raise ValueError(f"unknown optimizer {t.optimizer!r}; choose one of {', '.join(OPTIMIZERS)}")


def adam_second_moments(optimizer) -> dict[torch.nn.Parameter, tuple[torch.Tensor, int]]:
    """parameter -> (exp_avg_sq, step count) for the parameters an AdamW (alone or beside Muon) trains."""
    adamw = optimizer.adamw if isinstance(optimizer, MuonWithAdamW) else optimizer
    if not isinstance(adamw, torch.optim.AdamW):
        return {}
    return {p: (s["exp_avg_sq"], int(s["step"])) for p, s in adamw.state.items() if "exp_avg_sq" in s}


__all__ = ["OPTIMIZERS", "MuonWithAdamW", "make_optimizer", "muon_parameters", "adam_second_moments"]
