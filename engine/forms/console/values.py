"""The console's values: outputs, words with their network, the note's array-words, built-in functions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..derive import Term
from ..mixed import MixedTerm
from ..network import Network
from ..words import Word


@dataclass(frozen=True)
class Output:
    kind: str      # "text" | "html" | "latex"
    content: str
    # the value as mathematics, when it is a word, a term, a network or a list of them: one
    # (label, LaTeX for mathtext, no dollars) per row, so a GUI can render what `content` spells as text
    rows: tuple[tuple[str, str], ...] = ()


class Html(str):
    """A string the console made with html(x): show() displays it as HTML, not as its source."""


class Latex(str):
    """A string the console made with latex(x): show() displays it as mathematics."""


@dataclass(frozen=True)
class Form:
    """A word and the network whose named values it mentions (None in the free algebra)."""

    word: Word
    net: Network | None = None


class NoteList(list):
    """The note's array-words: A = ["A"]; A.op = "" makes the symbol A; [X, Y] with .op = "otimes" a
    product, "oplus" a sum, "transpose", "d"."""

    op: str | None = None


NOTE_OPS = ("", "otimes", "oplus", "transpose", "d")


@dataclass(frozen=True)
class Builtin:
    fn: Callable
    args: str          # signature for help and errors
    doc: str
    lo: int
    hi: int


def kind_of(v) -> str:
    if isinstance(v, Form):
        return "a word"
    if isinstance(v, (Term, MixedTerm)):
        return "a term"
    if isinstance(v, Network):
        return "a network"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, int):
        return "a number"
    return type(v).__name__


# ---- the functions ----
