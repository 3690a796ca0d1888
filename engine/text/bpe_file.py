"""A byte-level BPE's files read as data: its vocabulary, its merges and its special tokens, nothing else.

A `tokenizer.json` in the `tokenizers` library's format also carries configuration — a normalizer, a
pre-tokenizer, padding, truncation, a post-processor, a decoder, model options — and the library carries out
whatever it says, inside its own code: padding to 10⁹ tokens or a normalizer that multiplies the text
asks for gigabytes and aborts the process before any handler of ours can name the file. So the file is
never handed to the library. It is parsed here as plain JSON; every setting is compared with the one
byte-level BPE we build (GPT-2's: Radford et al. 2019, §2.2) and a different one is refused in one line
naming the file and the setting — or, for a model being imported (`lenient`), left out and named in
`BPEParts.ignored`, so the import can say so. The vocabulary is checked before anything is built: its
size against the model's, its ids 0 … n−1 each used once, every token spelled in the byte-level alphabet,
all 256 bytes present (any text encodes), and every merge joining two tokens into a third. engine/text/bpe.py
builds the library's tokenizer from these parts alone, with our own pre-tokenizer and decoder.

Settings that change no token id are accepted as ours: the pre-tokenizer's `trim_offsets`, a ByteLevel
post-processor (it trims offsets only) and the ByteLevel decoder's flags (its decoding ignores them),
which is what GPT-2's own `tokenizer.json` carries.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from ..errors import shown
from .corpus import CorpusError

END_OF_TEXT = "<|endoftext|>"  # GPT-2's document separator, one token, never split
_TOP = ("version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer", "post_processor",
        "decoder", "model")
# the model's options and the values ours has (GPT-2's file writes "" for the two affixes)
_MODEL_OPTIONS = {"dropout": (None,), "unk_token": (None,), "continuing_subword_prefix": (None, ""),
                  "end_of_word_suffix": (None, ""), "fuse_unk": (False,), "byte_fallback": (False,),
                  "ignore_merges": (False,)}
_ADDED_KEYS = {"id", "content", "single_word", "lstrip", "rstrip", "normalized", "special"}
_ADDED_PLAIN = ("single_word", "lstrip", "rstrip")  # each changes how text around the token splits
_BYTE_LEVEL_FLAGS = {"type", "add_prefix_space", "trim_offsets", "use_regex"}


def byte_alphabet() -> dict[str, int]:
    """GPT-2's byte-to-character table inverted: the printable character that stands for each byte (the
    library's ByteLevel alphabet, in byte order)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[chr(b)] = b
        else:  # bytes without a printable look-alike take the characters from U+0100 on, in order
            chars[chr(256 + extra)] = b
            extra += 1
    return chars


BYTES = byte_alphabet()


@dataclass(frozen=True)
class BPEParts:
    """What a byte-level BPE is: token → id, the merges in rank order and the special tokens (id, text)."""

    vocab: dict[str, int]
    merges: list[tuple[str, str]]
    special: list[tuple[int, str]]
    ignored: tuple[str, ...] = ()  # settings an import left out, each as "setting (value)"

    kind = "bpe"

    @property
    def size(self) -> int:
        return len(self.vocab) + sum(1 for _, t in self.special if t not in self.vocab)

    @property
    def tokens(self) -> list[str]:
        """Every token's text in id order, the special tokens among them."""
        tokens = [""] * self.size
        for t, i in self.vocab.items():
            tokens[i] = t
        for i, t in self.special:
            tokens[i] = t
        return tokens

    @property
    def digest(self) -> str:
        """sha256 of what the tokenizer is — its tokens in id order, its special tokens and merges — whatever the
        file's format (merges as "a b" strings or [a, b] lists): a run's weights carry it (engine/rundir/runs.py).
        It hashes the text of json.dumps({"kind", "vocab", "special", "merges"}, ensure_ascii=False), written
        `DIGEST_ITEMS` list items at a time: one json.dumps of GPT-2's 50k merges held the interpreter lock
        ~0.1 s (a trainer's thread starting beside the GUI thread; issue 37)."""
        h = hashlib.sha256()
        h.update(f'{{"kind": {json.dumps(self.kind)}, "vocab": '.encode())
        _hash_list(h, self.tokens)
        h.update(b', "special": ')
        _hash_list(h, [[i, t] for i, t in self.special])
        h.update(b', "merges": ')
        _hash_list(h, self.merges)  # a pair is written as json writes a list
        h.update(b"}")
        return h.hexdigest()


DIGEST_ITEMS = 2048  # list items per json.dumps in BPEParts.digest: a few ms each


def _hash_list(h, items: list) -> None:
    """Feed `h` the text json.dumps(items, ensure_ascii=False) is, encoded as UTF-8, a slice at a time."""
    h.update(b"[")
    for i in range(0, len(items), DIGEST_ITEMS):
        text = json.dumps(items[i:i + DIGEST_ITEMS], ensure_ascii=False)[1:-1]
        h.update(((", " if i else "") + text).encode("utf-8"))
    h.update(b"]")


def _short(value) -> str:
    if isinstance(value, dict) and isinstance(value.get("type"), str):
        return f"{value['type']} {json.dumps(value, ensure_ascii=False)[:60]}"
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return shown(value)
    return text if len(text) <= 60 else text[:57] + "…"


def _byte_level(value, *, pre: bool) -> bool:
    """A ByteLevel component that encodes as ours: any flags for a post-processor or decoder; for the
    pre-tokenizer no prefix space and GPT-2's splitting pattern."""
    if not (isinstance(value, dict) and value.get("type") == "ByteLevel" and set(value) <= _BYTE_LEVEL_FLAGS
            and all(type(value.get(k, False)) is bool for k in _BYTE_LEVEL_FLAGS - {"type"})):
        return False
    return not pre or (value.get("add_prefix_space", False) is False and value.get("use_regex", True) is True)


def _settings(d: dict) -> list[tuple[str, object]]:
    """Every setting of a tokenizer.json that is not ours, as (name, value)."""
    found = [(k, d[k]) for k in d if k not in _TOP]
    found += [(k, d[k]) for k in ("truncation", "padding", "normalizer") if d.get(k) is not None]
    if not _byte_level(d.get("pre_tokenizer"), pre=True):
        found.append(("pre_tokenizer", d.get("pre_tokenizer")))
    for k in ("post_processor", "decoder"):
        if d.get(k) is not None and not _byte_level(d[k], pre=False):
            found.append((k, d[k]))
    model = d["model"]
    for k, v in model.items():
        if k in ("type", "vocab", "merges"):
            continue
        allowed = _MODEL_OPTIONS.get(k)
        if allowed is None or not any(v is a or (type(v) is type(a) and v == a) for a in allowed):
            found.append((f"model.{k}", v))
    return found


def read_tokenizer_json(d, where: str, *, vocab_size: int | None = None, lenient: bool = False) -> BPEParts:
    """The parts of a `tokenizers` tokenizer.json (already parsed JSON), checked; `where` names the file in
    every message. Strict (a run's own file): any setting but ours is refused. `lenient` (an import): such
    settings are left out and named in `ignored`."""
    if not isinstance(d, dict):
        raise CorpusError(f"{where} is not a tokenizer file (not a JSON object)")
    model = d.get("model")
    if not isinstance(model, dict):
        raise CorpusError(f"{where} has no model")
    if model.get("type", "BPE") != "BPE":
        raise CorpusError(f"{where}: model.type is {_short(model.get('type'))}; only a byte-level BPE can be read")
    settings = _settings(d)
    if settings and not lenient:
        _refuse(where, *settings[0])
    special, odd = _added_tokens(d.get("added_tokens", []), where, lenient)
    ignored = tuple(f"{name} ({_short(v)})" for name, v in settings) + odd
    return check_parts(_vocab(model.get("vocab"), where), _merges(model.get("merges"), where), special, where,
                       vocab_size, ignored)


def _refuse(where: str, setting: str, value) -> None:
    raise CorpusError(f"{where}: the setting {setting} = {_short(value)} is refused; a run's tokenizer holds only "
                      "a byte-level BPE's vocabulary, merges and special tokens")


def read_vocab_merges(vocab, merges_lines: list[str], where: str, *, vocab_size: int | None = None) -> BPEParts:
    """GPT-2's original files: vocab.json (token → id) and merges.txt (a '#version' line, then one
    'left right' pair per line, in rank order). GPT-2's `<|endoftext|>`, when listed, is a special token."""
    lines = [ln for ln in merges_lines if ln and not ln.startswith("#version")]
    table = _vocab(vocab, where)
    special = [(table[END_OF_TEXT], END_OF_TEXT)] if END_OF_TEXT in table else []
    return check_parts(table, _merges(lines, where), special, where, vocab_size, ())


def _vocab(vocab, where: str) -> dict[str, int]:
    if not isinstance(vocab, dict) or not all(isinstance(t, str) and t and type(i) is int
                                              for t, i in vocab.items()):
        raise CorpusError(f"{where}: the vocabulary is not a table of token → id")
    return vocab


def _merges(merges, where: str) -> list[tuple[str, str]]:
    if not isinstance(merges, list):
        raise CorpusError(f"{where}: the merges are not a list")
    out = []
    for m in merges:
        pair = tuple(m.split(" ")) if isinstance(m, str) else tuple(m) if isinstance(m, list) else ()
        if len(pair) != 2 or not all(isinstance(p, str) and p for p in pair):
            raise CorpusError(f"{where}: the merge {_short(m)} is not two tokens")
        out.append(pair)
    return out


def _added_tokens(added, where: str, lenient: bool) -> tuple[list[tuple[int, str]], tuple[str, ...]]:
    """(id, text) of each added token, and what an import leaves out of them (a token that strips the
    spaces beside it, or matches whole words only, becomes a plain special token)."""
    if not isinstance(added, list) or not all(isinstance(a, dict) for a in added):
        raise CorpusError(f"{where}: added_tokens is not a list of tokens")
    out, ignored = [], []
    for a in added:
        i, text = a.get("id"), a.get("content")
        if type(i) is not int or not isinstance(text, str) or not text:
            raise CorpusError(f"{where}: an added token has no id or no text ({_short(a)})")
        odd = sorted(set(a) - _ADDED_KEYS) + [k for k in _ADDED_PLAIN if a.get(k, False) is not False]
        odd += [k for k in ("normalized", "special") if type(a.get(k, True)) is not bool]
        if odd and not lenient:
            _refuse(where, f"added_tokens[{text[:20]!r}].{odd[0]}", a.get(odd[0]))
        ignored += [f"added_tokens[{text[:20]!r}].{k} ({_short(a.get(k))})" for k in odd]
        out.append((i, text))
    return out, tuple(ignored)


def check_parts(vocab: dict[str, int], merges: list[tuple[str, str]], special: list[tuple[int, str]], where: str,
                vocab_size: int | None, ignored: tuple[str, ...] = ()) -> BPEParts:
    """Refuse, before anything is built, a vocabulary that cannot be the model's or cannot encode every
    text: the wrong size, ids not 0 … n−1 each once, tokens outside the byte alphabet, missing bytes,
    merges that do not join two tokens into a third."""
    parts = BPEParts(vocab, merges, sorted(special), ignored)
    n = parts.size
    if vocab_size is not None and n != vocab_size:
        raise CorpusError(f"{where} has {n:,} tokens but the model has {vocab_size:,}; they must belong together")
    ids = sorted(vocab.values())
    if ids != list(range(len(ids))):
        twice = next((a for a, b in zip(ids, ids[1:]) if a == b), None)
        raise CorpusError(f"{where}: " + (f"two tokens have the id {twice}" if twice is not None
                                          else f"the vocabulary's ids are not 0 … {len(ids) - 1}"))
    extra = 0
    for i, text in parts.special:
        if text in vocab:
            if vocab[text] != i:
                raise CorpusError(f"{where}: the special token {text[:20]!r} has the id {i}, but {vocab[text]} "
                                  "in the vocabulary")
        elif i != len(vocab) + extra:
            raise CorpusError(f"{where}: the special token {text[:20]!r} has the id {i}, where {len(vocab) + extra} "
                              "comes next")
        else:
            extra += 1
    if len({t for _, t in parts.special}) != len(parts.special):
        raise CorpusError(f"{where}: a special token is listed twice")
    odd = next((t for t in vocab if not set(t) <= BYTES.keys()), None)
    if odd is not None and odd not in {t for _, t in parts.special}:
        raise CorpusError(f"{where}: the token {odd[:20]!r} is not spelled in the byte-level alphabet; this is "
                          "not a byte-level BPE")
    missing = sorted(BYTES[c] for c in BYTES.keys() - vocab.keys())
    if missing:
        raise CorpusError(f"{where}: the vocabulary lacks the byte 0x{missing[0]:02x}"
                          f"{f' and {len(missing) - 1} more' if len(missing) > 1 else ''}, so some text "
                          "could not be encoded")
    if len(merges) >= len(vocab):
        raise CorpusError(f"{where} has {len(merges):,} merges for {len(vocab):,} tokens; each merge makes one token")
    seen = set()
    for a, b in merges:
        if a not in vocab or b not in vocab or a + b not in vocab:
            gone = next(t for t in (a, b, a + b) if t not in vocab)
            raise CorpusError(f"{where}: the merge {a[:20]!r} {b[:20]!r} uses or makes {gone[:20]!r}, which is "
                              "not in the vocabulary")
        if (a, b) in seen:
            raise CorpusError(f"{where}: the merge {a[:20]!r} {b[:20]!r} is listed twice")
        seen.add((a, b))
    return parts
