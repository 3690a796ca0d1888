"""Byte-level BPE tokens (GPT-2's scheme), trained and run by Hugging Face's `tokenizers` library.

Byte-level BPE (Radford et al. 2019, §2.2) first maps every byte of the UTF-8 text to one printable
character (a space becomes 'Ġ', a newline 'Ċ'), splits the text with GPT-2's pre-tokenizing pattern and then
merges frequent pairs; any text encodes, and no token is unknown. A run keeps the whole tokenizer in
`tokenizer.json` in the library's own format, so the same file opens here, in `tokenizers` and in
`transformers`; a GPT-2 folder's tokenizer is the same kind of object (engine/importers/hugging_face.py).

Token labels are the text a token stands for, not its byte-mapped spelling: 'Ġthe' reads ' the' (which
engine/model/probes.py then draws as '␣the'); a token holding part of a multi-byte character shows its bytes
as \\xNN escapes.
"""

from __future__ import annotations

import json
import os

# rayon's thread pool would print a warning in every process forked after it started (the GUI's helpers)
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402

from .corpus import CorpusError  # noqa: E402

KIND = "bpe"
END_OF_TEXT = "<|endoftext|>"


def _byte_decoder() -> dict[str, int]:
    """The inverse of GPT-2's byte-to-character table (the library's ByteLevel alphabet, in byte order)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[chr(b)] = b
        else:  # bytes without a printable look-alike take the characters from U+0100 on, in order
            chars[chr(256 + extra)] = b
            extra += 1
    return chars


_BYTES = _byte_decoder()


class BPETokenizer:
    """A byte-level BPE `tokenizers.Tokenizer` behind the interface of engine/text/data.py's tokenizers."""

    kind = KIND

    def __init__(self, tokenizer: Tokenizer):
        if not (isinstance(tokenizer.pre_tokenizer, pre_tokenizers.ByteLevel)
                and isinstance(tokenizer.model, models.BPE)):
            raise CorpusError("the tokenizer is not a byte-level BPE (GPT-2's kind)")
        self._tok = tokenizer
        by_id = {i: t for t, i in tokenizer.get_vocab(with_added_tokens=True).items()}
        if sorted(by_id) != list(range(len(by_id))):
            raise CorpusError("the tokenizer's ids are not 0 … n−1")
        self.vocab = [by_id[i] for i in range(len(by_id))]
        self._special = {t.content for t in tokenizer.get_added_tokens_decoder().values()}

    @classmethod
    def fit(cls, text: str, vocab_size: int) -> BPETokenizer:
        """Train on `text` (deterministic: the same text and size give the same merges)."""
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        alphabet = pre_tokenizers.ByteLevel.alphabet()
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=alphabet,
                                      special_tokens=[], show_progress=False)
        tok.train_from_iterator([text], trainer=trainer)
        return cls(tok)

    @classmethod
    def from_vocab_merges(cls, vocab: dict, merges: list[str]) -> BPETokenizer:
        """GPT-2's original files: vocab.json (token → id) and merges.txt (a '#version' line, then one
        'left right' pair per line, in merge order)."""
        if not isinstance(vocab, dict) or not all(type(i) is int for i in vocab.values()):
            raise CorpusError("vocab.json is not a table of token → id")
        pairs = [tuple(line.split(" ")) for line in merges if line and not line.startswith("#version")]
        bad = next((p for p in pairs if len(p) != 2), None)
        if bad is not None:
            raise CorpusError(f"merges.txt has a line that is not two tokens: {' '.join(bad)[:40]!r}")
        try:
            tok = Tokenizer(models.BPE(vocab=vocab, merges=pairs))
        except Exception as e:  # the library's own error for merges of unknown tokens
            raise CorpusError(f"vocab.json and merges.txt do not agree: {str(e).splitlines()[0][:160]}") from None
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        if END_OF_TEXT in vocab:  # GPT-2's document separator, one token, never split
            tok.add_special_tokens([END_OF_TEXT])
        return cls(tok)

    @classmethod
    def from_dict(cls, d: dict) -> BPETokenizer:
        try:
            return cls(Tokenizer.from_str(json.dumps(d)))
        except Exception as e:  # the library's parse errors have no common type
            raise CorpusError(f"not a tokenizer file: {str(e).splitlines()[0][:160]}") from None

    def to_dict(self) -> dict:
        """The library's own JSON, so the run's tokenizer.json opens in `tokenizers` and `transformers`."""
        return json.loads(self._tok.to_str())

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def encode(self, text: str) -> list[int]:
        return self._tok.encode(text).ids

    def encode_array(self, text: str) -> np.ndarray:
        return np.asarray(self._tok.encode(text).ids, dtype=np.int64)

    def encode_with_starts(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Token ids and the character offset where each token starts (bits per character need them)."""
        enc = self._tok.encode(text)
        starts = np.asarray(enc.offsets, dtype=np.int64).reshape(-1, 2)[:, 0]
        return np.asarray(enc.ids, dtype=np.int64), starts

    def count_tokens(self, text: str) -> int:
        return len(self._tok.encode(text).ids)

    def decode(self, ids) -> str:
        return self._tok.decode([int(i) for i in ids], skip_special_tokens=False)

    def token_strings(self, ids) -> list[str]:
        return [self._text_of(self.vocab[int(i)]) for i in ids]

    def _text_of(self, token: str) -> str:
        if token in self._special:
            return token
        raw = bytes(_BYTES.get(c, 0x3F) for c in token)
        return raw.decode("utf-8", errors="backslashreplace")

