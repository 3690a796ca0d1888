"""How a tokenized corpus splits into training and validation: the first (1 − val_fraction) of its tokens train,
the rest validate, and each part must hold a context and its next token. Torch-free, so that making a corpus ready
in a child process (engine/text/prepared.py, asked by the builder and before Train) never imports torch: ~1.2 s of
CPU per child, when the child's work takes a tenth of that."""

from __future__ import annotations

from .corpus import CorpusError


def split_sizes(n_tokens: int, n_ctx: int, val_fraction: float) -> tuple[int, int]:
    """(train, validation) token counts of a corpus of `n_tokens`; CorpusError if a context cannot fit both."""
    n_val = max(int(n_tokens * val_fraction), n_ctx + 1)
    n_train = n_tokens - n_val
    if n_train < n_ctx + 1:
        raise CorpusError(f"corpus is too short: {n_tokens} tokens, but a context of {n_ctx} needs at least "
                          f"{2 * (n_ctx + 1)} (train and validation)")
    return n_train, n_val
