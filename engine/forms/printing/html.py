"""HTML for rich-text widgets: sub- and superscripts as tags, products juxtaposed (the note's
``AAAA + AABA + BAAA + BABA``), operators as in the text notation."""

from __future__ import annotations

import re

from .printer import Printer

_GLYPH = re.compile(r"^[A-Za-zΑ-ω](<|$)")


class HtmlPrinter(Printer):
    minus = "\u2212"

    def join_factors(self, parts, words):
        out = parts[:1]
        for left, right in zip(parts, parts[1:]):
            tight = _GLYPH.match(left) and _GLYPH.match(right)
            out.append(("" if tight else "\u2009") + right)
        return "".join(out)

    def _print_Sym(self, w):
        return w.html

    def _print_T(self, w):
        return w.sym.html + "<sup>t</sup>"

    def _print_Diff(self, w):
        return "d" + w.sym.html + ("<sup>t</sup>" if w.transposed else "")

    def _print_Scalar(self, w):
        return w.html + ("" if w.power == 1 else "<sup>" + str(w.power).replace("-", self.minus) + "</sup>")
