"""Text in the note's notation: ``n_1^{-1/2} X_1 Q_1 K_1^t X_1^t``, ``aa(S_1, …)``, ``mm(U_1, …)``."""

from __future__ import annotations

from .printer import Printer


def _power(p) -> str:
    return "" if p == 1 else "^{" + str(p) + "}"


class TextPrinter(Printer):
    def _print_Sym(self, w):
        return w.text

    def _print_T(self, w):
        return w.sym.text + "^t"

    def _print_Diff(self, w):
        return "d" + w.sym.text + ("^t" if w.transposed else "")

    def _print_Scalar(self, w):
        return w.text + _power(w.power)
