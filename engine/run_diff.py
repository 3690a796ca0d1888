"""Two paired runs side by side at the same step: the difference of their attention maps on one prompt,
and of one weight. For runs made by engine/fork.py the two start from the same weights and batches, so
a difference here is the changed setting's doing.

Both runs must have the same weight shapes and vocabulary (the same prompt means the same tokens to both);
the step must be one both saved weights at (`common_steps`). Differences are B − A, NaN where masked.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import UserError
from .probes import attention_maps, prompt_ids, visible_tokens
from .runs import Run


@dataclass(frozen=True)
class AttentionDiff:
    """Attention weights of runs A and B at one step on one prompt, and B − A; each (L, H, T, T)."""

    names: tuple[str, str]
    step: int
    tokens: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray

    @property
    def diff(self) -> np.ndarray:
        return self.b - self.a


def common_steps(a: Run, b: Run) -> list[int]:
    """Steps at which both runs saved weights (a snapshot or a checkpoint)."""
    saved = [set(r.snapshot_steps()) | set(r.checkpoint_steps()) for r in (a, b)]
    return sorted(saved[0] & saved[1])


def load_pair(a_dir: str | Path, b_dir: str | Path, step: int) -> tuple[Run, Run, dict, dict]:
    """Both runs and their weights at `step`; runs that cannot be compared there are a UserError."""
    a, b = Run(a_dir), Run(b_dir)
    if a.tokenizer.vocab != b.tokenizer.vocab:
        raise UserError(f"{a.path.name} and {b.path.name} have different vocabularies, so one prompt is not the "
                        "same tokens to both")
    steps = common_steps(a, b)
    if step not in steps:
        shown = ", ".join(map(str, steps[:10])) or "none"
        raise UserError(f"{a.path.name} and {b.path.name} both saved weights at steps {shown}, not at {step}")
    wa, wb = a.load_weights(step), b.load_weights(step)
    if {k: v.shape for k, v in wa.items()} != {k: v.shape for k, v in wb.items()}:
        raise UserError(f"{a.path.name} and {b.path.name} have weights of different shapes")
    return a, b, wa, wb


def attention_diff(a_dir: str | Path, b_dir: str | Path, step: int, prompt: str | None = None) -> AttentionDiff:
    """Both runs' attention at `step` on `prompt` (default: A's heatmap prompt)."""
    from .model import GPT

    a, b, wa, wb = load_pair(a_dir, b_dir, step)
    prompt = a.probe().prompt if prompt is None else prompt
    ids = prompt_ids(a.tokenizer, prompt, min(a.config.model.n_ctx, b.config.model.n_ctx))
    maps = []
    for run, weights in ((a, wa), (b, wb)):
        model = GPT(run.config.model)
        model.load_state_dict(weights)
        maps.append(attention_maps(model.eval(), ids).weights)
    return AttentionDiff((a.path.name, b.path.name), step, visible_tokens(a.tokenizer, ids), maps[0], maps[1])


def weight_diff(a_dir: str | Path, b_dir: str | Path, step: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    """One weight (a state-dict key, e.g. blocks.0.W_Q) of both runs at `step`, as float64 arrays."""
    _, _, wa, wb = load_pair(a_dir, b_dir, step)
    if name not in wa:
        raise UserError(f"no weight named {name!r} (one of {', '.join(list(wa)[:6])}, …)")
    return wa[name].double().numpy(), wb[name].double().numpy()
