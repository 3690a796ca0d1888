"""The corpus made ready before a trainer is built, in a child process (docs/design.md#processes-threads-and-caches):
reading it, fitting a BPE or word vocabulary and encoding it are engine/text/prepared.py's `prepare_corpus`, which
leaves the tokenizer and the ids in the token cache; the trainer, built next on the app's training thread, then
reads them from the cache instead of doing that work beside the GUI thread.

Measured before this (issue 37): pressing Train on an imported GPT-2-shaped run, the training thread encoded the
whole corpus in one `tokenizers` call that held the interpreter lock, and the window's menus did not answer for
~36 s. A character vocabulary is read and encoded in ~0.03 s, so it is not worth a process (~1–2 s to start one).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

from ..configs.config import DataConfig


def corpus_preparation(data: DataConfig, n_ctx: int, run_dir: str | Path | None = None) -> Callable | None:
    """What to run in a child before training on `data`'s corpus with a context of `n_ctx`, or None when the
    trainer can do it itself at once (a character vocabulary). `run_dir`: the run being resumed, whose own
    tokenizer encodes the corpus, as Trainer.resume does."""
    from ..text.prepared import prepare_corpus

    if data.tokenizer == "char":
        return None
    return functools.partial(prepare_corpus, data, n_ctx, run_dir=None if run_dir is None else str(run_dir))
