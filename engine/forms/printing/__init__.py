"""Printing words as text (the note's notation), LaTeX (for matplotlib's mathtext) and HTML.

`text(w)`, `latex(w)`, `html(w)` share one memoised printer each, so printing every term of a form prints
each shared sub-word once. `latex` returns the formula without dollar signs; `mathtext(w)` wraps it.
"""

from __future__ import annotations

from ..words import Word
from .html import HtmlPrinter
from .latex import LatexPrinter
from .text import TextPrinter

_TEXT, _LATEX, _HTML = TextPrinter(), LatexPrinter(), HtmlPrinter()
FORMATS = ("text", "latex", "html")


def text(w: Word) -> str:
    return _TEXT.doprint(w)


def latex(w: Word) -> str:
    return _LATEX.doprint(w)


def html(w: Word) -> str:
    return _HTML.doprint(w)


def mathtext(w: Word) -> str:
    """The LaTeX string as matplotlib's mathtext wants it: $…$."""
    return "$" + latex(w) + "$"


def render(w: Word, fmt: str) -> str:
    if fmt == "text":
        return text(w)
    if fmt == "latex":
        return latex(w)
    if fmt == "html":
        return html(w)
    raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")


__all__ = ["text", "latex", "html", "mathtext", "render", "FORMATS", "TextPrinter", "LatexPrinter",
           "HtmlPrinter"]
