"""The rewrite rules of docs/rules.md, on words: d (Leibniz), expandAll, expandmm, flatten, cycle, shift,
shiftmm and finish — the note's pipeline — plus `pull`, which runs shiftmm and cycle on one monomial so a
route's coefficient can be built factor by factor (the same rules, shared between terms).

    Leibniz: d(XY) = dX Y + X dY,  d(X^t) = (dX)^t,  d f(Y) = op_base[dY],  d of inputs, constants, E = 0
    cycle:   trace(L f R)          -> trace(R L f)            f carries the differential
    shift:   trace(P op_B[A])      -> trace(op^T_{B^t}[P] A)  (mm -> mm, aa -> aaC, ln -> lnC, gg -> gg)
    finish:  trace(P dW) -> G = P;  trace(P dW^t) -> G = P^t;  trace(P diag(dg)) -> G = diag(P)

Named intermediates are atoms: `expandAll` and `expandmm` substitute the differential of a named value by
the differential of its definition (given a network), extending the labelled path of every differential in
it; `expandAll` stays outside operator arguments, `expandmm` goes through them (operators are linear).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

from .words import (FN_DIFFERENTIAL, SHIFTED_KIND2, TRANSPOSED_KIND, ZERO, Diag, DiagOf, Diff, Fn, Label, Num, Op,
                    Op2, Prod, Scalar, Sum, Sym, T, Trace, Word, Zero, add, diag, op, prod, trace, transpose)


class RuleError(ValueError):
    """A rule applied to a word it does not fit (shown to the user by the console)."""


# ---- d: the Leibniz rule ----

LeafHook = Callable[[Sym, bool], Word]


def _plain_leaf(sym: Sym, transposed: bool) -> Word:
    return Diff(sym, transposed) if sym.differentiable else ZERO


def d(w: Word, leaf: LeafHook = _plain_leaf, fn_base: Word | None = None) -> Word:
    """The differential of w by the Leibniz rule. `leaf(sym, transposed)` makes the differential of one
    occurrence of a leaf (the network's hook labels occurrences); `fn_base` is the named value a top-level
    forward function defines (the base of its operator)."""
    tw = type(w)
    if tw is Sym:
        return leaf(w, False)
    if tw is T:
        return leaf(w.sym, True)
    if tw is Prod:
        out = []
        fs = w.factors
        for i, f in enumerate(fs):
            df = d(f, leaf)
            if type(df) is not Zero:
                out.append(prod(Num(w.coef), *w.scalars, *fs[:i], df, *fs[i + 1:]))
        return add(*out)
    if tw is Sum:
        return add(*[d(x, leaf) for x in w.terms])
    if tw is Op:
        return op(w.kind, w.base, d(w.arg, leaf))
    if tw is Fn:
        kind, where = FN_DIFFERENTIAL[w.kind]
        if where == "out":
            base = fn_base
        else:
            base = w.arg if type(w.arg) in (Sym, T) else None
        if base is None:
            raise RuleError(f"d of {w.kind}(…) needs a named value as its "
                            f"{'output' if where == 'out' else 'argument'}: define one first")
        return op(kind, base, d(w.arg, leaf))
    if tw is Diag:
        return diag(d(w.arg, leaf))
    if tw is Trace:
        return trace(d(w.arg, leaf))
    if tw in (Scalar, Num, Zero, Diff):
        return ZERO
    raise RuleError(f"cannot differentiate {tw.__name__}")


# ---- expandAll, expandmm, flatten ----

Substitute = Callable[[Diff], list[Word]]


def _summands(w: Word, subst: Substitute | None, into_ops: bool, memo: dict | None = None) -> list[Word]:
    """w as a list of summands with products distributed over sums (and, into_ops, operators over sums).
    `memo` (word -> its summands) is shared by calls with the same subst and into_ops: the words of a form
    share most of their sub-words (interned), which are then expanded once."""
    if memo is None:
        memo = {}
    got = memo.get(w)
    if got is not None:
        return got
    tw = type(w)
    out: list[Word]
    if tw is Sum:
        out = [s for x in w.terms for s in _summands(x, subst, into_ops, memo)]
    elif tw is Prod:
        parts = []
        for f in w.factors:
            p = _summands(f, subst, into_ops, memo)
            if not p:  # a zero factor: the product has no summands (the rest need not be expanded)
                break
            parts.append(p)
        head = [Num(w.coef), *w.scalars]
        if len(parts) < len(w.factors):
            out = []
        elif all(len(p) == 1 for p in parts):
            out = [prod(*head, *[p[0] for p in parts])]
        else:
            out = [prod(*head, *combo) for combo in itertools.product(*parts)]
    elif tw is Trace:
        out = [trace(s) for s in _summands(w.arg, subst, into_ops, memo)]
    elif tw is Diag:
        out = [diag(s) for s in _summands(w.arg, subst, into_ops, memo)]
    elif tw is Op and into_ops and (w.arg.has_d or type(w.arg) is Sum):
        out = [op(w.kind, w.base, s) for s in _summands(w.arg, subst, into_ops, memo)]
    elif tw is Op2 and into_ops and (w.arg.has_d or type(w.arg) is Sum):
        out = [Op2(w.kind, w.base, w.other, s) for s in _summands(w.arg, subst, into_ops, memo)]
    elif tw is Diff and subst is not None and (expansion := subst(w)) is not None:
        out = [s for m in expansion for s in _summands(m, subst, into_ops, memo)]
    elif tw is Zero:
        out = []
    else:
        out = [w]
    memo[w] = out
    return out


def summand_count(w: Word, subst: Substitute | None, into_ops: bool, memo: dict | None = None) -> int:
    """How many summands `_summands` would make, counted without making them (products multiply,
    sums add), so that an expansion of 2^40 terms is refused before it starts. `memo` (word -> count) is
    shared by calls with the same subst and into_ops."""
    memo = {} if memo is None else memo  # keyed by the word itself: substitutions are new words, kept alive

    def count(w: Word) -> int:
        got = memo.get(w)
        if got is not None:
            return got
        tw = type(w)
        if tw is Sum:
            n = sum(count(x) for x in w.terms)
        elif tw is Prod:
            n = math.prod(count(f) for f in w.factors)
        elif tw in (Trace, Diag) or (tw in (Op, Op2) and into_ops and (w.arg.has_d or type(w.arg) is Sum)):
            n = count(w.arg)
        elif tw is Diff and subst is not None and (expansion := subst(w)) is not None:
            n = sum(count(m) for m in expansion)
        else:
            n = 0 if tw is Zero else 1
        memo[w] = n
        return n
    return count(w)


def expand_all(w: Word, subst: Substitute | None = None) -> Word:
    """The note's expandAll: multiply out products over sums (in the free algebra, every sum), and with a
    network substitute each differential of a named value by its definition's differential — outside
    operator arguments."""
    return add(*_summands(w, subst, False))


def expandmm(w: Word, subst: Substitute | None = None, memo: dict | None = None) -> Word:
    """The note's expandmm: expandAll through operator arguments as well (op_B[A1 + A2] = op_B[A1] +
    op_B[A2]), so every summand carries exactly one differential of a weight: one term per path. `memo`, a
    dict shared by calls with the same subst, lets several words share the expansion of their sub-words."""
    return add(*_summands(w, subst, True, memo))


def flatten(w: Word) -> list[Word]:
    """The summands of a word, as a list (the note's flatten, which its console indexes as z[13])."""
    if type(w) is Sum:
        return list(w.terms)
    if type(w) is Zero:
        return []
    return [w]


def with_path(w: Word, prefix: tuple[Label, ...]) -> Word:
    """w with `prefix` put in front of the labelled path of every differential in it."""
    if not prefix or not w.has_d:
        return w
    tw = type(w)
    if tw is Diff:
        return Diff(w.sym, w.transposed, prefix + w.path)
    if tw is Prod:
        return prod(Num(w.coef), *w.scalars, *[with_path(f, prefix) for f in w.factors])
    if tw is Sum:
        return add(*[with_path(x, prefix) for x in w.terms])
    if tw is Op:
        return op(w.kind, w.base, with_path(w.arg, prefix))
    if tw is Diag:
        return diag(with_path(w.arg, prefix))
    if tw is Trace:
        return trace(with_path(w.arg, prefix))
    raise RuleError(f"unexpected differential inside {tw.__name__}")


# ---- cycle, shift, shiftmm, finish ----

def _parts(w: Word) -> tuple[list[Word], list[Word]]:
    """(head, factors): the coefficient and scalars of a product, and its matrix factors."""
    if type(w) is Prod:
        return [Num(w.coef), *w.scalars], list(w.factors)
    return [], [w]


def _carrier(factors: list[Word]) -> int:
    found = [i for i, f in enumerate(factors) if f.has_d]
    if len(found) != 1:
        raise RuleError("a term must carry exactly one differential factor"
                        + ("" if found else " (this one has none)"))
    return found[0]


def _term_body(term: Word) -> Word:
    if type(term) is not Trace:
        raise RuleError("the rule applies to a term trace(…): expand the form first")
    return term.arg


def cycle(term: Word) -> Word:
    """trace(L f R) -> trace(R L f), f the factor that carries the differential."""
    if type(term) is Sum:
        return add(*[cycle(t) for t in term.terms])
    head, fs = _parts(_term_body(term))
    i = _carrier(fs)
    if i == len(fs) - 1:
        return term
    return trace(prod(*head, *fs[i + 1:], *fs[:i], fs[i]))


def shift(term: Word) -> Word:
    """trace(P op_B[A]) -> trace(op^T_{B^t}[P] A), cycling first when the operator is not last."""
    if type(term) is Sum:
        return add(*[shift(t) for t in term.terms])
    term = cycle(term)
    head, fs = _parts(_term_body(term))
    f = fs[-1]
    if type(f) is not Op:
        raise RuleError("nothing to shift: the differential is not inside an operator")
    return trace(prod(op(TRANSPOSED_KIND[f.kind], transpose(f.base), prod(*head, *fs[:-1])), f.arg))


def carrier_is_op(term: Word) -> bool:
    head, fs = _parts(_term_body(term))
    return type(fs[_carrier(fs)]) is Op


def shiftmm(term: Word) -> Word:
    """Shift (cycling before each shift) until the differential is out of every operator: the note's
    shiftmm, generalised to every operator kind with the transposes of docs/rules.md#shift."""
    if type(term) is Sum:
        return add(*[shiftmm(t) for t in term.terms])
    while carrier_is_op(term):
        term = shift(term)
    return term


def shift_steps(term: Word) -> list[tuple[str, Word]]:
    """Every intermediate word of shiftmm followed by the final cycle, named by the rule that made it."""
    steps = []
    while True:
        c = cycle(term)
        if c is not term:
            steps.append(("cycle", c))
        term = c
        if not carrier_is_op(term):
            return steps
        term = shift(term)
        steps.append((f"shift {_parts(_term_body(term))[1][0].kind}", term))


def finish(term: Word) -> tuple[Diff, Word]:
    """trace(P dW) -> (dW, G = P); trace(P dW^t) -> (dW^t, G = P^t); trace(P diag(dg)) -> (dg, diag(P))."""
    term = cycle(term)
    head, fs = _parts(_term_body(term))
    f = fs[-1]
    P = prod(*head, *fs[:-1])
    if type(f) is Diff:
        return f, (transpose(P) if f.transposed else P)
    if type(f) is Diag and type(f.arg) is Diff:
        return f.arg, DiagOf(P)
    raise RuleError("not finished: shift the differential out of its operators first (shiftmm)")


def pull(P: Word, monomial: Word) -> tuple[Word, Word, int]:
    """trace(P · monomial) pulled back to its differential: shiftmm then cycle, returning (P', leaf, shifts)
    with trace(P · monomial) = trace(P' · leaf). `leaf` is a Diff, or diag(Diff) for a gain. Equal, node
    for node, to running the word-level rules on the whole term (tests check it)."""
    shifts = 0
    w = monomial
    while True:
        head, fs = _parts(w)
        i = _carrier(fs)
        f = fs[i]
        P = prod(*fs[i + 1:], P, *fs[:i], *head)
        if type(f) is Op:
            P = Op(TRANSPOSED_KIND[f.kind], transpose(f.base), P)
            shifts += 1
            w = f.arg
        elif type(f) is Op2:  # the mixed form's bilinear operators (docs/second-order.md)
            P = Op2(SHIFTED_KIND2[f.kind], transpose(f.base), transpose(f.other), P)
            shifts += 1
            w = f.arg
        elif type(f) is Diff or (type(f) is Diag and type(f.arg) is Diff):
            return P, f, shifts
        else:
            raise RuleError(f"cannot pull back through {type(f).__name__}: expand the term first")


def coefficient(P: Word, leaf: Word) -> Word:
    """G for trace(P · leaf): P, P^t or diag(P) (finish on a pulled-back term)."""
    if type(leaf) is Diag:
        return DiagOf(P)
    return transpose(P) if leaf.transposed else P


def leaf_diff(leaf: Word) -> Diff:
    return leaf.arg if type(leaf) is Diag else leaf


__all__ = ["RuleError", "d", "expand_all", "expandmm", "flatten", "with_path", "cycle", "shift", "shiftmm",
           "shift_steps", "finish", "pull", "coefficient", "leaf_diff", "carrier_is_op"]
