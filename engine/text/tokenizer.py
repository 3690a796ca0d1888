"""Tokenizers: text to integer ids and back, and a tokenizer file read back as data.

A run saves its tokenizer in `tokenizer.json` so it samples without its corpus: characters and words as our
small {"kind", "vocab"} dict, a byte-level BPE (engine/text/bpe.py) as the `tokenizers` library's own JSON.
Reading one is reading data (`tokenizer_from_dict`): its kind and size are checked against the run's config
before anything is built. Ids are kept in the narrowest integer type that holds the vocabulary (`id_dtype`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from typing import Protocol

import numpy as np

from ..configs.config import DataConfig
from ..errors import shown
from .corpus import CorpusError
from .pieces import Cancel

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
    def encode_corpus(self, text: str, dtype: np.dtype, cancel: Cancel = None) -> np.ndarray: ...
    def char_offset(self, text: str, ids: np.ndarray, k: int) -> int: ...
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
        return self.encode_corpus(text, id_dtype(len(self.vocab))).tolist()

    def encode_corpus(self, text: str, dtype: np.dtype, cancel: Cancel = None) -> np.ndarray:
        """Vectorised encode, in `dtype`: a table from code point to id, read at every character (the
        bundled plays in 0.03 s, holding their UTF-32 bytes and the ids at once, 33 MB at the peak)."""
        points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        alphabet = np.array([ord(c) for c in self.vocab], dtype=np.int64)
        table = np.full(int(max(alphabet.max(initial=0), points.max(initial=0))) + 1, -1, dtype)
        table[alphabet] = np.arange(len(alphabet))
        ids = table[points]
        unknown = ids < 0
        if unknown.any():
            missing = sorted({chr(c) for c in points[unknown][:1000]})
            raise CorpusError(f"characters not in the vocabulary: {''.join(missing)[:20]!r}")
        return ids

    def char_offset(self, text: str, ids: np.ndarray, k: int) -> int:
        """Token k starts at character k."""
        return k


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

    def encode_corpus(self, text: str, dtype: np.dtype, cancel: Cancel = None) -> np.ndarray:
        return np.fromiter((self._index.get(w, 0) for w in _WORD.findall(text)), dtype=dtype)

    def char_offset(self, text: str, ids: np.ndarray, k: int) -> int:
        """Where the k-th word (or run of spaces, or mark) starts."""
        return next((m.start() for i, m in enumerate(_WORD.finditer(text)) if i == k), len(text))


def tokenizer_from_dict(d, where: str = "the tokenizer file", *, kind: str | None = None,
                        vocab_size: int | None = None, lenient: bool = False, build: bool = True) -> Tokenizer:
    """The tokenizer a tokenizer file holds, read as data: a byte-level BPE in the `tokenizers` library's JSON
    (engine/text/bpe_file.py), or our {"kind", "vocab"} for characters and words. `where` names the file in
    every refusal; `kind` (the run's data.tokenizer) and `vocab_size` (its model's) are checked before
    anything is built; `lenient` lets an import leave out a BPE file's other settings. `build=False` checks a
    BPE's file without building it (the run list's way) and returns its parts, which have `kind`, `size` and
    `digest`."""
    if not isinstance(d, dict):
        raise CorpusError(f"{where} is not a tokenizer file (not a JSON object)")
    found = "bpe" if "model" in d else d.get("kind")
    if found not in ("char", "word", "bpe"):
        raise CorpusError(f"{where}: unknown tokenizer kind {shown(found)}")
    if kind is not None and found != kind:
        raise CorpusError(f"{where} holds a {_KIND_NAMES[found]} vocabulary, but the run's data.tokenizer is "
                          f"{kind!r}")
    if found == "bpe" and not build:
        from .bpe_file import read_tokenizer_json

        return read_tokenizer_json(d, where, vocab_size=vocab_size, lenient=lenient)
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


def fit_tokenizer(text: str, cfg: DataConfig, cancel: Cancel = None) -> Tokenizer:
    """The tokenizer `cfg` asks for, fitted on `text` (uncached: engine/text/encoded.py keeps fits)."""
    if cfg.tokenizer == "word":
        return WordTokenizer.fit(text, cfg.max_vocab)
    if cfg.tokenizer == "bpe":  # bounded, and where Stop and Ctrl-C reach it
        from .bpe import BPETokenizer
        from .bpe_fit import fit

        return BPETokenizer.from_dict(fit(text, cfg.max_vocab, cancel), "the fitted tokenizer")
    return CharTokenizer.fit(text)


def id_dtype(vocab_size: int) -> np.dtype:
    """The narrowest signed integer that holds every token id: a corpus is kept in it and its batches widened to
    int64 as they are drawn (the same numbers), so the bundled plays' 5.0M characters take 9 MB, not 38."""
    return np.dtype(np.int16 if vocab_size <= np.iinfo(np.int16).max + 1 else np.int32)
