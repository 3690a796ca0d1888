"""A corpus made ready to train on, for a config or for a run: the one call the app makes off its GUI process
(before Train, and when the builder inspects a config) so that the trainer and the builder then find the
tokenizer and the token ids in the token cache (engine/text/encoded.py) instead of fitting and encoding again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..configs.config import DataConfig
from .corpus import load_corpus
from .encoded import fitted_tokenizer, token_ids
from .pieces import Cancel
from .split import split_sizes
from .token_cache import text_digest


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
    text = load_corpus(data.corpus)
    sha = text_digest(text)
    if run_dir is not None:
        from ..rundir.runs import Run

        tokenizer = Run(run_dir).tokenizer
    else:
        tokenizer = fitted_tokenizer(text, data, cancel, sha)
    ids = token_ids(tokenizer, text, cancel, sha)
    split_sizes(len(ids), n_ctx, data.val_fraction)
    return CorpusFacts(tokenizer.vocab_size, len(ids), tokenizer.kind)
