"""Where a corpus may be cut so that every piece tokenizes as the whole text does, and how long work on a corpus
is stopped.

GPT-2's pre-tokenizing pattern (`'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+`,
the library's ByteLevel) never joins a newline to what follows it when a letter, digit or printable ASCII
character follows it and another precedes it: there the newline is a pre-token of its own, at the end of a
piece as in the middle of the whole. A byte-level BPE merges only within a pre-token, so the ids of the pieces,
put end to end, are the ids of the whole text; the pieces can then be encoded in parallel, and a fit never sees
a pre-token longer than the text between two cuts. A newline after whitespace is not a cut: the pattern's
`\\s+(?!\\S)` gives the run of whitespace before it another split at the end of a piece. (The neighbours are
characters no definition counts as whitespace, so Python's `\\w` and the library's `\\s` cannot disagree here.)

`Cancel` is what long work on a corpus is given to stop it: a function returning True once the user asked
(the app's Stop, a closed window); `check` raises `Cancelled` then.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..errors import UserError

PIECE_CHARS = 1 << 16  # a piece is cut at the first cut point after this many characters
BATCH = 16             # pieces handed to the library per call: Stop is checked between calls
GROUPS = 8             # the pieces' share-out among the encoding threads (round robin, so each is spread over the text)
_CUT = re.compile(r"(?<=[\w!-~])\n(?=[\w!-~])")
MAX_PRETOKEN = 256      # characters of one pre-token in a fit, at most (+1: a leading space); engine/text/bpe_fit.py
FIT_CHARS = 16_000_000  # characters of text a fit sees, at most
SAMPLES = 64            # evenly spaced stretches of a longer corpus that make up its sample
_LONG = re.compile(rf"\s{{{MAX_PRETOKEN},}}|[^ \n]{{{MAX_PRETOKEN},}}")

Cancel = Callable[[], bool] | None


class Cancelled(UserError):
    """Work on a corpus stopped because it was asked to (Stop, Ctrl-C, a closed window)."""


def check(cancel: Cancel) -> None:
    if cancel is not None and cancel():
        raise Cancelled("stopped before the corpus was tokenized")


def cut_points(text: str, every: int = PIECE_CHARS) -> list[int]:
    """Offsets where `text` may be cut (see above), the first after each `every` characters."""
    cuts, at = [], every
    while at < len(text):
        m = _CUT.search(text, at)
        if m is None:
            break
        cuts.append(m.end())
        at = m.end() + every
    return cuts


def pieces(text: str, every: int = PIECE_CHARS) -> list[str]:
    """`text` cut at `cut_points`: pieces of about `every` characters whose tokens, end to end, are the text's."""
    bounds = [0, *cut_points(text, every), len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:])]


def fit_sample(text: str) -> str:
    """The text a fit sees: all of it, or `SAMPLES` evenly spaced stretches adding up to FIT_CHARS."""
    if len(text) <= FIT_CHARS:
        return text
    size, stride = FIT_CHARS // SAMPLES, len(text) // SAMPLES
    return "".join(text[i * stride: i * stride + size] for i in range(SAMPLES))


def fit_pieces(text: str) -> list[str]:
    """`text` in pieces that tokenize as the whole does (engine/text/pieces.py), further cut inside every
    stretch that could hold a pre-token longer than MAX_PRETOKEN, every MAX_PRETOKEN characters."""
    out = []
    for piece in pieces(text):
        cuts = [0]
        for m in _LONG.finditer(piece):
            cuts += range(max(m.start(), cuts[-1]) + MAX_PRETOKEN, m.end(), MAX_PRETOKEN)
        cuts.append(len(piece))
        out += [piece[a:b] for a, b in zip(cuts, cuts[1:]) if a < b]
    return out
