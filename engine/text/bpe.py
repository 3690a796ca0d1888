"""Byte-level BPE tokens (GPT-2's scheme), trained and run by Hugging Face's `tokenizers` library.

Byte-level BPE (Radford et al. 2019, §2.2) first maps every byte of the UTF-8 text to one printable
character (a space becomes 'Ġ', a newline 'Ċ'), splits the text with GPT-2's pre-tokenizing pattern and then
merges frequent pairs; any text encodes, and no token is unknown. A run keeps the tokenizer in
`tokenizer.json` in the library's own format, so the same file opens here, in `tokenizers` and in
`transformers`; a GPT-2 folder's tokenizer is the same kind of object (engine/importers/hugging_face.py).

A tokenizer file is data, not configuration: engine/text/bpe_file.py reads its vocabulary, merges and special
tokens and refuses (or, importing, leaves out) every other setting, and `BPETokenizer.from_parts` builds the
library's tokenizer from those parts alone, with our pre-tokenizer and decoder and nothing else, so nothing a
file says runs inside the library.

Token labels are the text a token stands for, not its byte-mapped spelling: 'Ġthe' reads ' the' (which
engine/model/probes.py then draws as '␣the'); a token holding part of a multi-byte character shows its bytes
as \\xNN escapes.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor

# rayon's thread pool would print a warning in every process forked after it started (the GUI's helpers)
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402

from ..training.thread_policy import usable_cores  # noqa: E402
from .bpe_file import BYTES, END_OF_TEXT, BPEParts, read_tokenizer_json, read_vocab_merges  # noqa: E402
from .corpus import CorpusError  # noqa: E402
from .pieces import BATCH, GROUPS, Cancel, check, fit_pieces, fit_sample, pieces  # noqa: E402

KIND = "bpe"
_BYTES = BYTES  # the byte-level alphabet, character → byte


def _ours(model: models.BPE) -> Tokenizer:
    """A tokenizer of `model` with our settings: GPT-2's byte-level pre-tokenizer (no prefix space) and
    decoder, and no normalizer, padding, truncation or post-processor."""
    tok = Tokenizer(model)
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    return tok


class BPETokenizer:
    """A byte-level BPE `tokenizers.Tokenizer` behind the interface of engine/text/data.py's tokenizers."""

    kind = KIND

    def __init__(self, tokenizer: Tokenizer, ignored: tuple[str, ...] = (), vocab: list[str] | None = None):
        """`vocab`: the tokens in id order, when the parts it was built from give them (the library's
        get_vocab builds GPT-2's 50k-entry table in one call that holds the interpreter lock ~30-40 ms)."""
        if not (isinstance(tokenizer.pre_tokenizer, pre_tokenizers.ByteLevel)
                and isinstance(tokenizer.model, models.BPE)):
            raise CorpusError("the tokenizer is not a byte-level BPE (GPT-2's kind)")
        self._tok = tokenizer
        if vocab is None:
            by_id = {i: t for t, i in tokenizer.get_vocab(with_added_tokens=True).items()}
            if sorted(by_id) != list(range(len(by_id))):
                raise CorpusError("the tokenizer's ids are not 0 … n−1")
            vocab = [by_id[i] for i in range(len(by_id))]
        self.vocab = vocab
        self._special = {t.content for t in tokenizer.get_added_tokens_decoder().values()}
        self.ignored = ignored  # the settings of an imported file that were left out (bpe_file.BPEParts)
        self._digest: str | None = None
        self._parts: BPEParts | None = None  # what it was built from, when it was (its digest is theirs)
        self._byte_lengths: np.ndarray | None = None
        self._cut_safe = not any("\n" in t for t in self._special)  # no special token spans a cut (`pieces`)

    @classmethod
    def fit(cls, text: str, vocab_size: int) -> BPETokenizer:
        """Train on `text` (deterministic: the same text and size give the same merges), in this process, on
        its bounded pieces (`pieces.fit_pieces`: no pre-token longer than MAX_PRETOKEN, at most FIT_CHARS
        characters); engine/text/bpe_fit.py runs a larger fit where Stop and Ctrl-C reach it."""
        tok = _ours(models.BPE())
        alphabet = pre_tokenizers.ByteLevel.alphabet()
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=alphabet,
                                      special_tokens=[], show_progress=False)
        tok.train_from_iterator(fit_pieces(fit_sample(text)), trainer=trainer)
        return cls(tok)

    @classmethod
    def from_parts(cls, parts: BPEParts) -> BPETokenizer:
        """The library's tokenizer built from a checked vocabulary, merges and special tokens alone."""
        try:
            tok = _ours(models.BPE(vocab=parts.vocab, merges=parts.merges))
        except Exception as e:  # the parts were checked; this is the library disagreeing all the same
            raise CorpusError(f"the vocabulary and merges cannot be built: {str(e).splitlines()[0][:160]}") from None
        tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for _, t in parts.special])
        built = cls(tok, parts.ignored, parts.tokens)  # check_parts made sure the ids are 0 … n−1
        built._parts = parts
        return built

    @classmethod
    def from_vocab_merges(cls, vocab, merges: list[str], where: str = "vocab.json + merges.txt",
                          vocab_size: int | None = None) -> BPETokenizer:
        """GPT-2's original files: vocab.json (token → id) and merges.txt."""
        return cls.from_parts(read_vocab_merges(vocab, merges, where, vocab_size=vocab_size))

    @classmethod
    def from_dict(cls, d: dict, where: str = "the tokenizer file", vocab_size: int | None = None,
                  lenient: bool = False) -> BPETokenizer:
        """A tokenizer.json (parsed), read as data (engine/text/bpe_file.py): strict for a run's own file,
        `lenient` for an import, whose other settings are left out and listed in `ignored`."""
        return cls.from_parts(read_tokenizer_json(d, where, vocab_size=vocab_size, lenient=lenient))

    def to_dict(self) -> dict:
        """The library's own JSON, so the run's tokenizer.json opens in `tokenizers` and `transformers`."""
        return json.loads(self._tok.to_str())

    @property
    def digest(self) -> str:
        """sha256 of what the tokenizer is (bpe_file.BPEParts.digest, of the parts its own file holds): a run's
        weights carry it (engine/rundir/runs.py)."""
        if self._digest is None:
            self._digest = (self._parts or read_tokenizer_json(self.to_dict(), "the tokenizer")).digest
        return self._digest

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def encode(self, text: str) -> list[int]:
        return self._tok.encode(text).ids

    def encode_corpus(self, text: str, dtype: np.dtype, cancel: Cancel = None) -> np.ndarray:
        """The ids of a whole corpus, in `dtype`: the same ids as `encode(text)`, computed on pieces of the text
        cut where GPT-2's pre-tokenizing pattern splits anyway (`pieces`), by the library's batch encoder on
        as many threads as there are cores (it lets go of the interpreter lock while it works). One call on
        the bundled plays' 5 MB asked the library for one Encoding of 1.3M tokens with every token's string and
        offsets (GB of memory with a small vocabulary); pieces keep that to a piece at a time."""
        chunks = self.pieces(text)
        groups = [chunks[i::GROUPS] for i in range(min(GROUPS, len(chunks)))]
        # without offsets: half the library's time (they are not needed, `char_offset` counts bytes instead)
        encode = getattr(self._tok, "encode_batch_fast", self._tok.encode_batch)

        def work(group: list[str]) -> list[np.ndarray]:
            out = []
            for i in range(0, len(group), BATCH):
                check(cancel)
                out += [np.asarray(e.ids, dtype=dtype) for e in encode(group[i:i + BATCH])]
            return out
        with ThreadPoolExecutor(min(usable_cores(), len(groups)) or 1) as pool:
            done = list(pool.map(work, groups))
        ordered = [done[i % len(groups)][i // len(groups)] for i in range(len(chunks))]
        return np.concatenate(ordered) if ordered else np.zeros(0, dtype)

    def pieces(self, text: str) -> list[str]:
        """`text` in pieces whose ids, end to end, are the whole text's (engine/text/pieces.py): the ids of its
        first pieces are the whole's first ids. One piece, the text, when a special token holds a newline (it
        could span a cut)."""
        return pieces(text) if self._cut_safe else [text]

    def char_offset(self, text: str, ids: np.ndarray, k: int) -> int:
        """The character of `text` where token k of its ids starts: from the tokens' lengths in bytes (a
        byte-level token's characters are its bytes) to the character that holds that byte."""
        if self._byte_lengths is None:
            self._byte_lengths = np.array([len(t.encode("utf-8")) if t in self._special else len(t)
                                           for t in self.vocab], dtype=np.int64)
        start = int(self._byte_lengths[ids[:k]].sum())
        return len(text.encode("utf-8")[:start].decode("utf-8", errors="ignore"))

    def decode(self, ids) -> str:
        return self._tok.decode([int(i) for i in ids], skip_special_tokens=False)

    def token_strings(self, ids) -> list[str]:
        return [self._text_of(self.vocab[int(i)]) for i in ids]

    def _text_of(self, token: str) -> str:
        if token in self._special:
            return token
        raw = bytes(_BYTES.get(c, 0x3F) for c in token)
        return raw.decode("utf-8", errors="backslashreplace")


__all__ = ["BPETokenizer", "END_OF_TEXT", "KIND"]
