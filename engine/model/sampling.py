"""Sampling: what a sample asks for (`SampleRequest`) and the distribution each sampled token is drawn from.

The distribution: the model's logits divided by the temperature, cut to the top k, through a softmax;
temperature 0 takes the most likely token (all its mass on the argmax). Stated once here for `GPT.generate`
and for the next-token view (engine/analysis/next_tokens.py), so the bars a user reads are the probabilities
Generate draws with.

A request is asked of the model training live (on the training thread, which alone touches it) or of a saved
run's newest checkpoint (engine.analysis.questions.Sample) alike; engine.training.trainer.generate_text writes
the text. This module imports torch only when a distribution is computed, so the GUI may build requests
before torch is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class SampleRequest:
    """The prompt the text continues, how many tokens it runs to, and how each is drawn: the softmax at
    `temperature`, over the `top_k` likeliest tokens only when set, from a generator seeded with `seed` when
    set (else a fresh seed each time)."""

    prompt: str
    n_tokens: int = 200
    temperature: float = 0.8
    top_k: int | None = None
    seed: int | None = None


class NonFiniteLogits(ArithmeticError):
    """The model gave logits that are not finite: its forward pass overflows (weights that exploded)."""


def sampling_probabilities(logits: torch.Tensor, temperature: float = 1.0,
                           top_k: int | None = None) -> torch.Tensor:
    """(…, V) logits -> (…, V) the probabilities of drawing each token."""
    import torch

    if temperature <= 0:
        return torch.nn.functional.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    logits = logits / temperature
    if top_k:
        kth = torch.topk(logits, min(top_k, logits.shape[-1])).values[..., [-1]]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    return torch.softmax(logits, dim=-1)
