"""The distribution a sampled token is drawn from: the model's logits divided by the temperature, cut to
the top k, through a softmax; temperature 0 takes the most likely token (all its mass on the argmax).
Stated once here for `GPT.generate` and for the next-token view (engine/analysis/next_tokens.py), so
the bars a user reads are the probabilities Generate draws with.
"""

from __future__ import annotations

import torch


def sampling_probabilities(logits: torch.Tensor, temperature: float = 1.0,
                           top_k: int | None = None) -> torch.Tensor:
    """(…, V) logits -> (…, V) the probabilities of drawing each token."""
    if temperature <= 0:
        return torch.nn.functional.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    logits = logits / temperature
    if top_k:
        kth = torch.topk(logits, min(top_k, logits.shape[-1])).values[..., [-1]]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    return torch.softmax(logits, dim=-1)
