"""Words as sympy expressions, for a user to take into Python and for independent checks (docs/forms.md).

`to_sympy(word)` gives a sympy matrix expression: MatrixSymbols with the symbols' dimensions (symbolic, or
numbers when `dims` gives them), Transpose, MatMul, MatAdd, Trace, DiagMatrix and DiagonalOf, and the
operators as `FormOperator(kind, base, arg)` (forward functions as `FormFunction(kind, arg)`).
`explicit(expr, values)` evaluates such an expression on explicit sympy matrices — with the operators'
definitions of docs/forms.md#operators written again here in sympy — so tests can differentiate entry by entry.
"""

from __future__ import annotations

import functools
import operator

import sympy as sp
from sympy.core.symbol import Str
from sympy.matrices.expressions.diagonal import DiagMatrix, DiagonalOf
from sympy.matrices.expressions.matexpr import MatrixExpr

from .bound import LN_EPS  # explicit matrices use the default ε (the sympy checks build no GPT)
from .words import (TRANSPOSED_KIND, Diag, DiagOf, Diff, Fn, Num, Op, Prod, Scalar, Sum, Sym, T, Trace, Word,
                    Zero)


class FormOperator(MatrixExpr):
    """op_base[arg], linear in arg (mm, gg, ggt, aa, aaC, ln, lnC)."""

    def __new__(cls, kind: str, base, arg):
        return MatrixExpr.__new__(cls, kind if isinstance(kind, Str) else Str(kind), base, arg)

    @property
    def kind(self) -> str:
        return self.args[0].name

    @property
    def shape(self):
        return self.args[2].shape

    def _eval_transpose(self):
        return FormOperator(TRANSPOSED_KIND[self.kind], self.args[1].T, self.args[2].T)

    def _sympystr(self, printer):
        return f"{self.kind}({printer._print(self.args[1])}, {printer._print(self.args[2])})"

    def _latex(self, printer):
        return (r"\mathrm{" + self.kind + "}_{" + printer._print(self.args[1]) + r"}\left["
                + printer._print(self.args[2]) + r"\right]")


class FormFunction(MatrixExpr):
    """A forward non-linearity: a (row softmax), m (ReLU), gelu or N (row normalisation)."""

    def __new__(cls, kind: str, arg):
        return MatrixExpr.__new__(cls, kind if isinstance(kind, Str) else Str(kind), arg)

    @property
    def kind(self) -> str:
        return self.args[0].name

    @property
    def shape(self):
        return self.args[1].shape

    def _sympystr(self, printer):
        return f"{self.kind}({printer._print(self.args[1])})"

    def _latex(self, printer):
        return r"\mathrm{" + self.kind + r"}\left(" + printer._print(self.args[1]) + r"\right)"


def _dim(name: str, dims: dict | None):
    if name == "1":
        return sp.Integer(1)
    if dims is not None and dims.get(name) is not None:
        return sp.Integer(dims[name])
    return sp.Symbol(name, integer=True, positive=True)


def to_sympy(w: Word, dims: dict | None = None):
    """The sympy expression of a word; `dims` maps dimension names (n, d, d_k, ...) to sizes."""
    memo: dict = {}

    def go(x):
        got = memo.get(x)
        if got is None:
            got = memo[x] = convert(x)
        return got

    def symbol(s: Sym, prefix=""):
        return sp.MatrixSymbol(prefix + s.text, _dim(s.rows, dims), _dim(s.cols, dims))

    def convert(x):
        tx = type(x)
        if tx is Sym:
            return symbol(x)
        if tx is T:
            return symbol(x.sym).T
        if tx is Diff:
            m = symbol(x.sym, "d")
            return m.T if x.transposed else m
        if tx is Scalar:
            return sp.Symbol(x.text, positive=True) ** sp.Rational(x.power.numerator, x.power.denominator)
        if tx is Num:
            return sp.Rational(x.value.numerator, x.value.denominator)
        if tx is Prod:
            parts = [go(s) for s in x.scalars] + [go(f) for f in x.factors]
            coef = sp.Rational(x.coef.numerator, x.coef.denominator)
            return functools.reduce(operator.mul, parts, coef) if coef != 1 else functools.reduce(operator.mul, parts)
        if tx is Sum:
            return functools.reduce(operator.add, [go(t) for t in x.terms])
        if tx is Op:
            return FormOperator(x.kind, go(x.base), go(x.arg))
        if tx is Fn:
            return FormFunction(x.kind, go(x.arg))
        if tx is Diag:
            return DiagMatrix(go(x.arg))
        if tx is DiagOf:
            return DiagonalOf(go(x.arg))
        if tx is Trace:
            return sp.Trace(go(x.arg))
        if tx is Zero:
            return sp.Integer(0)
        raise TypeError(f"cannot convert {tx.__name__}")

    return go(w)


# ---- explicit evaluation (the operators of docs/forms.md#operators written once more, in sympy) ----

def _ones(r, c):
    return sp.ones(r, c)


def apply_operator(kind: str, B: sp.Matrix, A: sp.Matrix) -> sp.Matrix:
    """op_B[A] on explicit matrices, from the definitions of docs/forms.md#operators."""
    r, c = A.shape
    if kind == "mm":
        return B.applyfunc(lambda u: 1 if u > 0 else 0).multiply_elementwise(A)
    if kind == "gg":
        return B.applyfunc(_gelu_prime).multiply_elementwise(A)
    if kind == "ggt":
        return B.applyfunc(_gelu_tanh_prime).multiply_elementwise(A)
    if kind == "aa":
        SA = B.multiply_elementwise(A)
        return B.multiply_elementwise(A - SA * _ones(c, 1) * _ones(1, c))
    if kind == "aaC":
        SA = B.multiply_elementwise(A)
        return B.multiply_elementwise(A - _ones(r, 1) * _ones(1, r) * SA)
    if kind == "ln":
        return _ln(B, A)
    if kind == "lnC":
        return _ln(B.T, A.T).T
    raise ValueError(kind)


def _gelu_prime(u):
    return (1 + sp.erf(u / sp.sqrt(2))) / 2 + u * sp.exp(-u ** 2 / 2) / sp.sqrt(2 * sp.pi)


def _gelu_tanh(u):
    return u * (1 + sp.tanh(sp.sqrt(2 / sp.pi) * (u + sp.Rational(44715, 10 ** 6) * u ** 3))) / 2


def _gelu_tanh_prime(u):
    x = sp.Symbol("x")
    return sp.diff(_gelu_tanh(x), x).subs(x, u)


def _ln(X: sp.Matrix, A: sp.Matrix) -> sp.Matrix:
    n, d = X.shape
    out = sp.zeros(n, d)
    for i in range(n):
        row = X[i, :]
        mu = sum(row) / d
        sigma = sp.sqrt(sum((v - mu) ** 2 for v in row) / d + sp.Float(LN_EPS))
        y = (row - mu * _ones(1, d)) / sigma
        a = A[i, :]
        out[i, :] = (a - (sum(a) / d) * _ones(1, d) - (sum(y.multiply_elementwise(a)) / d) * y) / sigma
    return out


def apply_function(kind: str, Z: sp.Matrix) -> sp.Matrix:
    """The forward non-linearities on explicit matrices."""
    if kind == "a":
        out = Z.applyfunc(sp.exp)
        for i in range(Z.rows):
            s = sum(out[i, :])
            out[i, :] = out[i, :] / s
        return out
    if kind == "m":
        return Z.applyfunc(lambda u: sp.Max(u, 0))
    if kind == "gelu":
        return Z.applyfunc(lambda u: u * (1 + sp.erf(u / sp.sqrt(2))) / 2)
    if kind == "gelut":
        return Z.applyfunc(_gelu_tanh)
    if kind == "N":
        n, d = Z.shape
        out = sp.zeros(n, d)
        for i in range(n):
            row = Z[i, :]
            mu = sum(row) / d
            out[i, :] = (row - mu * _ones(1, d)) / sp.sqrt(sum((v - mu) ** 2 for v in row) / d + sp.Float(LN_EPS))
        return out
    raise ValueError(kind)


def explicit(expr, values: dict):
    """Evaluate a to_sympy expression with explicit matrices: `values` maps MatrixSymbol names (and
    scalar symbol names) to sympy Matrices (numbers)."""
    if isinstance(expr, sp.MatrixSymbol):
        return values[expr.name]
    if isinstance(expr, sp.Transpose):
        return explicit(expr.arg, values).T
    if isinstance(expr, sp.MatMul):
        parts = [explicit(a, values) for a in expr.args]
        return functools.reduce(lambda a, b: a * b, parts)
    if isinstance(expr, sp.MatAdd):
        return functools.reduce(lambda a, b: a + b, [explicit(a, values) for a in expr.args])
    if isinstance(expr, FormOperator):
        return apply_operator(expr.kind, explicit(expr.args[1], values), explicit(expr.args[2], values))
    if isinstance(expr, FormFunction):
        return apply_function(expr.kind, explicit(expr.args[1], values))
    if isinstance(expr, DiagMatrix):
        v = explicit(expr.args[0], values)
        return sp.diag(*list(v))
    if isinstance(expr, DiagonalOf):
        m = explicit(expr.args[0], values)
        return sp.Matrix([m[i, i] for i in range(m.rows)])
    if isinstance(expr, sp.Trace):
        return explicit(expr.arg, values).trace()
    if isinstance(expr, sp.Symbol):
        return values.get(expr.name, expr)
    if isinstance(expr, sp.Pow):
        return explicit(expr.base, values) ** expr.exp
    if isinstance(expr, sp.Mul):
        return functools.reduce(operator.mul, [explicit(a, values) for a in expr.args])
    if isinstance(expr, sp.Add):
        return functools.reduce(operator.add, [explicit(a, values) for a in expr.args])
    if expr.is_number:
        return expr
    raise TypeError(f"cannot evaluate {type(expr).__name__} explicitly")


__all__ = ["to_sympy", "explicit", "FormOperator", "FormFunction", "apply_operator", "apply_function"]
