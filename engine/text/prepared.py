"""A corpus made ready to train on, for a config or for a run: the one call the app makes off its GUI process
before Train, so that the trainer then finds the tokenizer and the token ids in the token cache
(engine/text/encoded.py) instead of fitting and encoding again; and the builder's check of a corpus (its
inspection, engine/configs/inspection.py), which fits the tokenizer as Train will but encodes only as much of the
corpus as shows that it holds a context: after an import, encoding all of the bundled plays in GPT-2's tokens for
that was ~2.6 s of CPU, ~3.5 s in a 320-token BPE's, before the builder could show the parameter count.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..configs.config import DataConfig
from . import token_cache
from .corpus import CorpusError, load_corpus
from .encoded import fitted_tokenizer, token_ids
from .pieces import Cancel
from .split import split_sizes
from .token_cache import text_digest
from .tokenizer import Tokenizer, id_dtype


@dataclass(frozen=True)
class CorpusFacts:
    """What preparing a corpus learned: its vocabulary's size, its length in tokens, the tokenizer's kind."""

    vocab_size: int
    n_tokens: int
    kind: str


def prepare_corpus(data: DataConfig, n_ctx: int, *, run_dir: str | Path | None = None,
                   cancel: Cancel = None) -> CorpusFacts:
    """Read `data.corpus`, take its tokenizer — the run's own tokenizer.json when `run_dir` is given, else the one
    `data` fits — encode the corpus and check it holds a context of `n_ctx` for training and validation; both
    are kept in the token cache. CorpusError (or another UserError) in one line when it cannot be used;
    `Cancelled` once `cancel()` is true."""
    text, sha, tokenizer = _read(data, run_dir, cancel)
    ids = token_ids(tokenizer, text, cancel, sha)
    split_sizes(len(ids), n_ctx, data.val_fraction)
    return CorpusFacts(tokenizer.vocab_size, len(ids), tokenizer.kind)


def check_corpus(data: DataConfig, n_ctx: int, *, run_dir: str | Path | None = None, cancel: Cancel = None) -> int:
    """The size of the vocabulary `prepare_corpus` would take, once the corpus is known to hold a context of
    `n_ctx` for training and validation (the same CorpusError, or another UserError, when it cannot be used); the
    fitted tokenizer is kept in the token cache. A BPE's ids are counted piece by piece (`BPETokenizer.pieces`:
    a prefix's ids are the whole's first ids, so the whole has at least as many) until there are enough, and
    whether there are is monotone in the count (`_enough`); a corpus that never has enough is encoded whole,
    and its ids are kept. A character vocabulary is checked on every character (one it lacks is a CorpusError,
    and its encoding is cheap), a word vocabulary's ids are the whole's, as `prepare_corpus` takes them."""
    text, sha, tokenizer = _read(data, run_dir, cancel)
    dtype = id_dtype(tokenizer.vocab_size)
    cached = token_cache.load_ids(sha, tokenizer.digest, tokenizer.vocab_size, dtype)
    if tokenizer.kind != "bpe" or cached is not None:
        ids = cached if cached is not None else token_ids(tokenizer, text, cancel, sha)
        split_sizes(len(ids), n_ctx, data.val_fraction)
        return tokenizer.vocab_size
    parts: list[np.ndarray] = []
    for piece in tokenizer.pieces(text):
        parts.append(tokenizer.encode_corpus(piece, dtype, cancel))
        if _enough(sum(map(len, parts)), n_ctx, data.val_fraction):
            return tokenizer.vocab_size
    ids = np.concatenate(parts) if parts else np.zeros(0, dtype)  # the whole corpus: kept for Train
    token_cache.save_ids(sha, tokenizer.digest, ids)
    split_sizes(len(ids), n_ctx, data.val_fraction)
    return tokenizer.vocab_size


def _enough(n_tokens: int, n_ctx: int, val_fraction: float) -> bool:
    """Whether `n_tokens` split into parts that each hold a context; true of any larger count too (a token more
    adds at most one to the validation part, val_fraction being under 1)."""
    try:
        split_sizes(n_tokens, n_ctx, val_fraction)
    except CorpusError:
        return False
    return True


def _read(data: DataConfig, run_dir: str | Path | None, cancel: Cancel) -> tuple[str, str, Tokenizer]:
    """The corpus's text, its digest and its tokenizer: the run's own with `run_dir`, else the one `data` fits."""
    text = load_corpus(data.corpus)
    sha = text_digest(text)
    if run_dir is not None:
        from ..rundir.runs import Run

        return text, sha, Run(run_dir).tokenizer
    return text, sha, fitted_tokenizer(text, data, cancel, sha)
