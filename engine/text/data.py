"""The deterministic train/validation split (its sizes: engine/text/split.py) and seeded random batches of a
tokenized corpus.

The split is the first (1 − val_fraction) of the token stream for training and the rest for validation, as
nanoGPT does; batches are random windows drawn from a seeded ``torch.Generator`` so a run is reproducible and
resumable. Loss per token is not comparable across tokenizers, so a dataset also knows how many characters
each split's tokens cover on average, which turns a loss into bits per character. The tokenizer and the ids
come from the token cache when this corpus met this tokenizer before (engine/text/encoded.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..configs.config import DataConfig
from .corpus import load_corpus
from .encoded import fitted_tokenizer, token_ids
from .pieces import Cancel
from .split import split_sizes
from .token_cache import text_digest
from .tokenizer import Tokenizer


@dataclass
class Dataset:
    """A tokenized corpus split into train and validation streams (integer tensors on the CPU, int16 or int32 by
    the vocabulary: `id_dtype`); its batches are int64."""

    tokenizer: Tokenizer
    train: torch.Tensor
    val: torch.Tensor
    text_head: str  # the corpus's first lines: the default heatmap prompt
    chars_per_token: tuple[float, float] = (1.0, 1.0)  # (train, val): characters of text per token

    @classmethod
    def build(cls, cfg: DataConfig, n_ctx: int, text: str | None = None,
              tokenizer: Tokenizer | None = None, cancel: Cancel = None) -> Dataset:
        """Load, tokenize and split; a corpus too short for the context raises CorpusError. With
        `tokenizer` (a saved run's, or a pretrained model's) the text is encoded with it, not fitted;
        `cancel()` true stops the work (Cancelled)."""
        text = load_corpus(cfg.corpus) if text is None else text
        sha = text_digest(text)
        tok = fitted_tokenizer(text, cfg, cancel, sha) if tokenizer is None else tokenizer
        ids = token_ids(tok, text, cancel, sha)
        n_train, n_val = split_sizes(len(ids), n_ctx, cfg.val_fraction)
        cut = tok.char_offset(text, ids, n_train)  # the character where validation begins
        ratio = (cut / n_train, (len(text) - cut) / n_val)
        ids = torch.from_numpy(ids)
        return cls(tok, ids[:n_train], ids[n_train:], _first_line(text), ratio)

    def bits_per_char(self, loss: float, split: str) -> float:
        """A cross-entropy loss (nats per token) of `split` as bits per character of its text."""
        return loss / math.log(2) / self.chars_per_token[0 if split == "train" else 1]

    def get_batch(self, split: str, batch_size: int, n_ctx: int,
                  generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """Random windows: x (B, T) and the next-token targets y (B, T)."""
        data = self.train if split == "train" else self.val
        ix = torch.randint(len(data) - n_ctx, (batch_size,), generator=generator)
        offsets = torch.arange(n_ctx + 1)
        windows = data[ix[:, None] + offsets].long()  # (B, T+1), int64 as embeddings and losses take them
        return windows[:, :-1], windows[:, 1:]

    def fixed_batch(self, batch_size: int, n_ctx: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """A reproducible validation batch (the run's probe batch), as numpy arrays."""
        g = torch.Generator().manual_seed(seed)
        x, y = self.get_batch("val", batch_size, n_ctx, g)
        return x.numpy().copy(), y.numpy().copy()


def corpus_vocabulary(cfg: DataConfig, n_ctx: int, text: str) -> int:
    """The vocabulary size `text` gives under `cfg`, or CorpusError as Dataset.build would raise it; the fit
    and the ids are kept in the token cache, so the training that follows reads them back."""
    sha = text_digest(text)
    tok = fitted_tokenizer(text, cfg, None, sha)
    split_sizes(len(token_ids(tok, text, None, sha)), n_ctx, cfg.val_fraction)
    return tok.vocab_size


def _first_line(text: str, max_chars: int = 48) -> str:
    """The first line of speech (after a ``SPEAKER:`` line) or else the first non-trivial line."""
    lines = [ln.strip() for ln in text[:200_000].splitlines()]
    for prev, line in zip(lines, lines[1:]):
        if prev.endswith(":") and len(line) >= 8:
            return line[:max_chars]
    for line in lines:
        if len(line) >= 8:
            return line[:max_chars]
    return text.strip()[:max_chars]
