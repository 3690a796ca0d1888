"""Tokenizers, the deterministic train/validation split and seeded random batches.

A tokenizer turns text into integer ids and back; it is saved in the run directory as a small dict so a
run can be sampled without its corpus (byte-level BPE, engine/text/bpe.py, as the `tokenizers` library's own
JSON). The split is the first (1 − val_fraction) of the token stream for training and the rest for
validation, as nanoGPT does; batches are random windows drawn from a seeded ``torch.Generator`` so a run
is reproducible and resumable. Loss per token is not comparable across tokenizers, so a dataset also knows
how many characters each split's tokens cover on average, which turns a loss into bits per character.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from ..configs.config import DataConfig
from ..errors import shown
from .corpus import CorpusError, load_corpus

UNK = "<unk>"
_WORD = re.compile(r"\w+|[^\w\s]|\n| +")


class Tokenizer(Protocol):
    kind: str
    vocab: list[str]

    @property
    def vocab_size(self) -> int: ...
    @property
    def digest(self) -> str: ...
    def encode(self, text: str) -> list[int]: ...
    def encode_array(self, text: str) -> np.ndarray: ...
    def encode_with_starts(self, text: str) -> tuple[np.ndarray, np.ndarray | None]: ...
    def count_tokens(self, text: str) -> int: ...
    def decode(self, ids) -> str: ...
    def token_strings(self, ids) -> list[str]: ...
    def to_dict(self) -> dict: ...


class _Vocabulary:
    """What every tokenizer does with its list of token strings: decode, name tokens, save."""

    kind: str
    vocab: list[str]

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def decode(self, ids) -> str:
        return "".join(self.vocab[int(i)] for i in ids)

    def token_strings(self, ids) -> list[str]:
        return [self.vocab[int(i)] for i in ids]

    def to_dict(self) -> dict:
        return {"kind": self.kind, "vocab": self.vocab}

    @property
    def digest(self) -> str:
        """sha256 of the kind and the vocabulary: a run's weights carry it (engine/rundir/runs.py)."""
        return hashlib.sha256(json.dumps(self.to_dict(), ensure_ascii=False).encode("utf-8")).hexdigest()


class CharTokenizer(_Vocabulary):
    """One token per character of the corpus's alphabet (sorted, as nanoGPT's Shakespeare-char)."""

    kind = "char"

    def __init__(self, vocab: list[str]):
        self.vocab = list(vocab)
        self._index = {c: i for i, c in enumerate(self.vocab)}

    @classmethod
    def fit(cls, text: str) -> CharTokenizer:
        return cls(sorted(set(text)))

    def encode(self, text: str) -> list[int]:
        return self.encode_array(text).tolist()

    def encode_array(self, text: str) -> np.ndarray:
        """Vectorised encode, in `id_dtype`: a table from code point to id, read at every character (the
        bundled plays in 0.03 s, holding their UTF-32 bytes and the ids at once, 33 MB at the peak)."""
        points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        alphabet = np.array([ord(c) for c in self.vocab], dtype=np.int64)
        table = np.full(int(max(alphabet.max(initial=0), points.max(initial=0))) + 1, -1, id_dtype(len(self.vocab)))
        table[alphabet] = np.arange(len(alphabet))
        ids = table[points]
        unknown = ids < 0
        if unknown.any():
            missing = sorted({chr(c) for c in points[unknown][:1000]})
            raise CorpusError(f"characters not in the vocabulary: {''.join(missing)[:20]!r}")
        return ids

    def encode_with_starts(self, text: str) -> tuple[np.ndarray, None]:
        """The ids, and None for their starts: token i starts at character i."""
        return self.encode_array(text), None

    def count_tokens(self, text: str) -> int:
        return len(text)


class WordTokenizer(_Vocabulary):
    """Words, punctuation, runs of spaces and newlines; the `max_vocab` most frequent, the rest <unk>."""

    kind = "word"

    def __init__(self, vocab: list[str]):
        if not vocab or vocab[0] != UNK:
            raise CorpusError("a word vocabulary must start with <unk>")
        self.vocab = list(vocab)
        self._index = {w: i for i, w in enumerate(self.vocab)}

    @classmethod
    def fit(cls, text: str, max_vocab: int) -> WordTokenizer:
        counts = Counter(_WORD.findall(text))
        # ties broken alphabetically so the vocabulary does not depend on dict order
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        return cls([UNK] + [w for w, _ in ranked[: max(max_vocab - 1, 1)]])

    def encode(self, text: str) -> list[int]:
        return [self._index.get(w, 0) for w in _WORD.findall(text)]

    def encode_array(self, text: str) -> np.ndarray:
        return np.array(self.encode(text), dtype=np.int64)

    def encode_with_starts(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        found = list(_WORD.finditer(text))
        ids = np.array([self._index.get(m.group(), 0) for m in found], dtype=np.int64)
        return ids, np.array([m.start() for m in found], dtype=np.int64)

    def count_tokens(self, text: str) -> int:
        return sum(1 for _ in _WORD.finditer(text))


def tokenizer_from_dict(d, where: str = "the tokenizer file", *, kind: str | None = None,
                        vocab_size: int | None = None, lenient: bool = False) -> Tokenizer:
    """The tokenizer a tokenizer file holds, read as data: a byte-level BPE in the `tokenizers` library's JSON
    (engine/text/bpe_file.py), or our {"kind", "vocab"} for characters and words. `where` names the file in
    every refusal; `kind` (the run's data.tokenizer) and `vocab_size` (its model's) are checked before
    anything is built; `lenient` lets an import leave out a BPE file's other settings."""
    if not isinstance(d, dict):
        raise CorpusError(f"{where} is not a tokenizer file (not a JSON object)")
    found = "bpe" if "model" in d else d.get("kind")
    if found not in ("char", "word", "bpe"):
        raise CorpusError(f"{where}: unknown tokenizer kind {shown(found)}")
    if kind is not None and found != kind:
        raise CorpusError(f"{where} holds a {_KIND_NAMES[found]} vocabulary, but the run's data.tokenizer is "
                          f"{kind!r}")
    if found == "bpe":
        from .bpe import BPETokenizer  # the library loads only for runs that use it

        return BPETokenizer.from_dict(d, where, vocab_size, lenient)
    other = sorted(set(d) - {"kind", "vocab"})
    if other:
        raise CorpusError(f"{where}: the setting {other[0]} is refused; a {found} tokenizer file holds its kind and "
                          "vocabulary only")
    vocab = d.get("vocab")
    if not isinstance(vocab, list) or not all(isinstance(v, str) for v in vocab):
        raise CorpusError(f"{where} has no vocabulary")
    if vocab_size is not None and len(vocab) != vocab_size:
        raise CorpusError(f"{where} has {len(vocab):,} tokens but the model has {vocab_size:,}; they must belong "
                          "together")
    if len(set(vocab)) != len(vocab):
        raise CorpusError(f"{where}: the vocabulary lists a token twice")
    if found == "char" and not all(len(v) == 1 for v in vocab):
        raise CorpusError(f"{where}: a character vocabulary holds an entry that is not one character")
    if found == "word" and (not vocab or vocab[0] != UNK or not all(vocab)):
        raise CorpusError(f"{where}: a word vocabulary starts with {UNK} and holds no empty word")
    return CharTokenizer(vocab) if found == "char" else WordTokenizer(vocab)


_KIND_NAMES = {"char": "character", "word": "word", "bpe": "byte-level BPE"}


def fit_tokenizer(text: str, cfg: DataConfig) -> Tokenizer:
    if cfg.tokenizer == "word":
        return WordTokenizer.fit(text, cfg.max_vocab)
    if cfg.tokenizer == "bpe":
        from .bpe import BPETokenizer

        return BPETokenizer.fit(text, cfg.max_vocab)
    return CharTokenizer.fit(text)


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
              tokenizer: Tokenizer | None = None) -> Dataset:
        """Load, tokenize and split; a corpus too short for the context raises CorpusError. With
        `tokenizer` (a saved run's, or a pretrained model's) the text is encoded with it, not fitted."""
        text = load_corpus(cfg.corpus) if text is None else text
        tok = fit_tokenizer(text, cfg) if tokenizer is None else tokenizer
        ids, starts = tok.encode_with_starts(text)
        n_train, n_val = split_sizes(len(ids), n_ctx, cfg.val_fraction)
        cut = n_train if starts is None else int(starts[n_train])  # the character where validation begins
        ratio = (cut / n_train, (len(text) - cut) / n_val)
        ids = torch.from_numpy(ids.astype(id_dtype(tok.vocab_size), copy=False))
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


def id_dtype(vocab_size: int) -> np.dtype:
    """The narrowest signed integer that holds every token id: a corpus is kept in it and its batches widened to
    int64 as they are drawn (the same numbers), so the bundled plays' 5.0M characters take 9 MB, not 38."""
    return np.dtype(np.int16 if vocab_size <= np.iinfo(np.int16).max + 1 else np.int32)


def split_sizes(n_tokens: int, n_ctx: int, val_fraction: float) -> tuple[int, int]:
    """(train, validation) token counts of a corpus of `n_tokens`; CorpusError if a context cannot fit both."""
    n_val = max(int(n_tokens * val_fraction), n_ctx + 1)
    n_train = n_tokens - n_val
    if n_train < n_ctx + 1:
        raise CorpusError(f"corpus is too short: {n_tokens} tokens, but a context of {n_ctx} needs at least "
                          f"{2 * (n_ctx + 1)} (train and validation)")
    return n_train, n_val


def corpus_vocabulary(cfg: DataConfig, n_ctx: int, text: str) -> int:
    """The vocabulary size `text` gives under `cfg`, or CorpusError as Dataset.build would raise it, without
    encoding the corpus into arrays (the builder asks at every edit; encoding the 5 MB of the bundled plays
    peaks at 33 MB)."""
    tok = fit_tokenizer(text, cfg)
    split_sizes(tok.count_tokens(text), n_ctx, cfg.val_fraction)
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
