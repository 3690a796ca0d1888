"""LaTeX that matplotlib's mathtext renders (no matrix environments, no \\operatorname): operators are
written op_B[A] as in docs/forms.md#operators, e.g. ``\\mathrm{aa}_{S_{1}}\\left[A\\right]``."""

from __future__ import annotations

from .printer import Printer


def _sup_t(tex: str) -> str:
    return ("{" + tex + "}" if "^" in tex else tex) + "^{t}"


def _power(p) -> str:
    return "" if p == 1 else "^{" + str(p) + "}"


class LatexPrinter(Printer):
    def paren(self, s: str) -> str:
        return r"\left(" + s + r"\right)"

    def number(self, c) -> str:
        if c.denominator != 1:
            sign = "-" if c < 0 else ""
            return sign + r"\frac{" + str(abs(c.numerator)) + "}{" + str(c.denominator) + "}"
        return str(c)

    def join_factors(self, parts, words):
        return r"\,".join(parts)

    def _print_Sym(self, w):
        return w.tex

    def _print_T(self, w):
        return _sup_t(w.sym.tex)

    def _print_Diff(self, w):
        body = w.sym.tex
        return r"\mathrm{d}" + (_sup_t(body) if w.transposed else ("{" + body + "}" if "^" in body else body))

    def _print_Scalar(self, w):
        tex = w.tex
        if w.power != 1 and "^" in tex:
            tex = "{" + tex + "}"
        return tex + _power(w.power)

    def _print_Op(self, w):
        return r"\mathrm{" + w.kind + "}_{" + self.doprint(w.base) + r"}\left[" + self.doprint(w.arg) + r"\right]"

    def _print_Op2(self, w):
        return (r"\mathrm{" + w.kind + "}_{" + self.doprint(w.base) + r"}\left[" + self.doprint(w.other) + r";\,"
                + self.doprint(w.arg) + r"\right]")

    def _print_Fn(self, w):
        name = {"gelut": r"\mathrm{gelu}_{\tanh}"}.get(w.kind, r"\mathrm{" + w.kind + "}")
        return name + r"\left(" + self.doprint(w.arg) + r"\right)"

    def _print_Diag(self, w):
        return r"\mathrm{diag}\left(" + self.doprint(w.arg) + r"\right)"

    def _print_DiagOf(self, w):
        return r"\mathrm{diag}\left(" + self.doprint(w.arg) + r"\right)"

    def _print_Trace(self, w):
        return r"\mathrm{tr}\left(" + self.doprint(w.arg) + r"\right)"
