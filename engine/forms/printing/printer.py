"""The printer base: one ``_print_<Node>`` method per word node (sympy's printing design), memoised per node
so that sub-words shared between thousands of terms are printed once."""

from __future__ import annotations

import weakref
from fractions import Fraction

from ..words import Num, Prod, Sum, Word


class Printer:
    """Subclasses define _print_Sym, _print_T, ... and the few strings below."""

    minus = "-"
    plus = " + "

    def __init__(self):
        self._memo: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def doprint(self, w: Word) -> str:
        r = self._memo.get(w)
        if r is None:
            method = getattr(self, "_print_" + type(w).__name__, None)
            if method is None:
                raise TypeError(f"{type(self).__name__} cannot print {type(w).__name__}")
            r = method(w)
            self._memo[w] = r
        return r

    __call__ = doprint

    def factor(self, w: Word) -> str:
        """A product's factor: sums (and signed products) in parentheses."""
        s = self.doprint(w)
        if type(w) is Sum or (type(w) is Prod and w.coef < 0) or (type(w) is Num and w.value < 0):
            return self.paren(s)
        return s

    def paren(self, s: str) -> str:
        return f"({s})"

    def coefficient(self, c: Fraction) -> str:
        if c == 1:
            return ""
        if c == -1:
            return self.minus
        return self.number(c)

    def number(self, c: Fraction) -> str:
        return str(c).replace("-", self.minus)

    def join_factors(self, parts: list[str], words: list[Word]) -> str:
        return " ".join(parts)

    def _print_Prod(self, w: Prod) -> str:
        parts = [self.doprint(s) for s in w.scalars] + [self.factor(f) for f in w.factors]
        body = self.join_factors(parts, list(w.scalars) + list(w.factors))
        c = self.coefficient(w.coef)
        if c in ("", self.minus):
            return c + body
        return c + " " + body

    def _print_Sum(self, w: Sum) -> str:
        out = []
        for i, x in enumerate(w.terms):
            neg = (type(x) is Prod and x.coef < 0) or (type(x) is Num and x.value < 0)
            if neg:
                s = self.doprint(x)[len(self.minus):]
                if s.startswith(" "):
                    s = s[1:]
                if type(x) is Prod and x.coef != -1:
                    s = self.doprint(Prod(-x.coef, x.scalars, x.factors))
                out.append((self.minus if i == 0 else f" {self.minus} ") + s)
            else:
                out.append(s if (s := self.doprint(x)) and i == 0 else (self.plus + s if i else s))
        return "".join(out)

    def _print_Zero(self, w) -> str:
        return "0"

    # operators and functions read as applications, name(args), unless a printer has a notation for them
    def _print_Op(self, w):
        return f"{w.kind}({self.doprint(w.base)}, {self.doprint(w.arg)})"

    def _print_Op2(self, w):
        return f"{w.kind}({self.doprint(w.base)}, {self.doprint(w.other)}, {self.doprint(w.arg)})"

    def _print_Fn(self, w):
        return f"{w.kind}({self.doprint(w.arg)})"

    def _print_Diag(self, w):
        return f"diag({self.doprint(w.arg)})"

    def _print_DiagOf(self, w):
        return f"diag({self.doprint(w.arg)})"

    def _print_Trace(self, w):
        return f"trace({self.doprint(w.arg)})"

    def _print_Num(self, w: Num) -> str:
        return self.number(w.value)
