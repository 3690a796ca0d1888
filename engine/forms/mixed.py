"""The mixed form (docs/second-order.md): how A's differential moves B's coefficient, in symbols.

The note's method applied once more. Fix a direction V on B (a matrix symbol of B's shape, held fixed like
E). Every first-order term t of B reads trace(P_t dB), so σ = ⟨G_B, V⟩ = Σ_t trace(P_t V) (V^t, diag(V) for
the leaf's other forms) is a sum of traces of words whose factors are all known. Its differential, by the
Leibniz rule on those words, is again a sum of words with one differential each:

    d(atom)       the Leibniz expansion of its definition (network.substitute), as for the first order
    d(E)          d of E's definition: −dF for the squared error, −N^{-1} dP for the cross-entropy head
    d(op_B[X])    op_B[dX] + the operator differentiated by its base: for ReLU's mm zero (m'' = 0 off the
                  kink), for the softmax's aa/aaC the bilinear aa2_{S,X}[dS], for GELU's gg/ggt the elementwise
                  gg2_{U,X}[dU] = gelu''(U) ⊙ X ⊙ dU, for the normalisation's ln/lnC the rowwise ln2_{X,A}[dX]
                  (words.Op2, bound.apply_bilinear)

Expanded through every operator (expandmm) and pulled back with shiftmm and cycle (rules.pull, which shifts
the bilinear operators too), each summand ending in dA is one *mixed term* trace(M dA). The read-out is the
first order's: Σ M^t = ∂σ/∂A = −H_AB V, so ⟨Σ M^t, ΔA⟩ at V = ΔB is −⟨ΔB, H_BA ΔA⟩, minus twice the pair's
share of the curvature term (engine/analysis/interaction.py). Every operator of the first-order forms has its
second derivative here, so any network's mixed form can be written; a large one's is refused only for its term
count (TooManyTerms), as its first-order forms are.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import rules
from .count_text import count_text
from .derive import DEFAULT_LIMIT, Forms, Term, TooManyTerms
from .words import ZERO, Diag, Diff, Num, Op, Op2, Prod, Scalar, Sum, Sym, T, Trace, Word, Zero, add, diag, op, \
    prod, trace, transpose

if TYPE_CHECKING:  # the values import torch where they are made: the words load without it (the console)
    import torch

BASE_DERIVATIVE = {"aa": "aa2", "aaC": "aa2C", "gg": "gg2", "ggt": "ggt2",  # operators whose base's
                   "ln": "ln2", "lnC": "ln2C"}                           # differential contributes
FLAT = ("mm",)                                   # operators whose base's differential contributes nothing


class MixedFormError(ValueError):
    """A coefficient's word holds something the mixed form cannot differentiate (one clear line)."""


@dataclass(frozen=True, eq=False)
class MixedTerm:
    """trace(M · dA): one summand of d⟨G_B, V⟩ that ends in A's differential."""

    index: int
    id: str             # "<B's term ID> | <A's symbol> via <labelled occurrences, output side first>"
    weight: str         # A's parameter
    symbol: Sym         # A's symbol (a head's block, say)
    source: Term        # the first-order term of B whose coefficient was differentiated
    P: Word             # trace(P · leaf)
    leaf: Word          # dA, dA^t or diag(dg)
    op_count: int       # shifts the pull-back needed

    @property
    def route_class(self) -> str:
        """The route class of B's term it came from."""
        return self.source.route_class

    @property
    def G(self) -> Word:
        """The coefficient word M: P, P^t or diag(P) (docs/rules.md#finish)."""
        return rules.coefficient(self.P, self.leaf)


def direction(sym: Sym) -> Sym:
    """V on the block `sym` of B: a placeholder symbol of its shape (bound to a value at evaluation)."""
    return Sym("V:" + sym.name, "placeholder", sym.rows, sym.cols, f"V[{sym.text}]",
               r"V_{\left[" + sym.tex + r"\right]}", f"V<sub>[{sym.html}]</sub>")


def _v_leaf(leaf: Word, V: Sym) -> Word:
    if type(leaf) is Diag:
        return diag(V)
    return transpose(V) if leaf.transposed else V


def differential(w: Word, net) -> Word:
    """d(w) by the Leibniz rule with E expanded and operators differentiated by their bases too."""
    tw = type(w)
    if tw is Sym:
        if w.kind == "error":
            return rules.d(net.definition(w.name).word)
        return Diff(w) if w.differentiable else ZERO
    if tw is T:
        return transpose(differential(w.sym, net))
    if tw is Prod:
        fs = w.factors
        return add(*[prod(Num(w.coef), *w.scalars, *fs[:i], df, *fs[i + 1:])
                     for i, f in enumerate(fs) if type(df := differential(f, net)) is not Zero])
    if tw is Sum:
        return add(*[differential(x, net) for x in w.terms])
    if tw is Op:
        inner = op(w.kind, w.base, differential(w.arg, net))
        if w.kind in FLAT:
            return inner
        return add(inner, Op2(BASE_DERIVATIVE[w.kind], w.base, w.arg, differential(w.base, net)))
    if tw is Diag:
        return diag(differential(w.arg, net))
    if tw is Trace:
        return trace(differential(w.arg, net))
    if tw in (Scalar, Num, Zero):
        return ZERO
    raise MixedFormError(f"cannot differentiate {tw.__name__} in a coefficient")


class MixedForm:
    """d⟨G_B, V⟩ pulled back to A: `terms` (MixedTerm, in the order of B's terms), `V` per block of B."""

    def __init__(self, forms: Forms, weight: str, other: str, limit: int | None = DEFAULT_LIMIT):
        self.forms, self.net = forms, forms.net
        self.weight, self.other = forms.net.find(weight)[0].name, forms.net.find(other)[0].name
        self._want = frozenset(s.name for s in forms.net.find(other)[1])
        b_terms = forms.terms(weight, limit)
        self.V = {s.name: direction(s) for s in forms.net.find(weight)[1]}
        self.seeds = [trace(prod(t.P, _v_leaf(t.leaf, self.V[t.symbol.name]))) for t in b_terms]
        self.differentials = [differential(s, self.net) for s in self.seeds]
        self._expansions: dict[Diff, list[Word] | None] = {}
        counted: dict = {}
        n = sum(rules.summand_count(w, self._substitute, True, counted) for w in self.differentials)
        if limit is not None and n > limit:
            raise TooManyTerms(f"the mixed form of {self.weight} by {self.other} has {count_text(n)} terms, more than "
                               f"{count_text(limit)}: a run gives its route classes and numbers (the Weight pane's "
                               "Interaction tab, export --what interaction)")
        self.terms: list[MixedTerm] = []
        self.summands: list[Word] = []  # the expanded summands, one per mixed term, in the terms' order
        self._seen: Counter = Counter()
        memo: dict = {}  # the differentials share most sub-words: each is expanded once
        for t, w in zip(b_terms, self.differentials):
            for summand in rules.flatten(rules.expandmm(w, self._substitute, memo)):
                self.summands.append(summand)
                self._add(t, summand)

    def _substitute(self, diff: Diff):
        """Expand a named value's differential only where A lies below it; drop every other weight's."""
        if diff in self._expansions:
            return self._expansions[diff]
        s = diff.sym
        if s.kind == "weight":
            got = None if s.name in self._want else []
        elif s.kind == "atom" and not any(self.forms.counts_below(s.name)[w] for w in self._want):
            got = []
        else:
            got = self.net.substitute(diff)
        self._expansions[diff] = got
        return got

    def _add(self, source: Term, summand: Word) -> None:
        P, leaf, shifts = rules.pull(Num(1), summand.arg)
        d = rules.leaf_diff(leaf)
        labels = ", ".join(map(str, d.path))
        tid = f"{source.id} | {d.sym.name}" + (f" via {labels}" if labels else "")
        # differentials reached at different places of one word share their labels: number the repeats
        self._seen[tid] += 1
        tid = tid if self._seen[tid] == 1 else f"{tid} #{self._seen[tid]}"
        self.terms.append(MixedTerm(len(self.terms), tid, self.other, d.sym, source, P, leaf, shifts))

    def count(self) -> int:
        return len(self.terms)

    def stages(self) -> list[tuple[str, list[Word]]]:
        """(stage, words) of the note's method applied once more, as the walkthrough shows it: σ = ⟨G_B, V⟩
        as a sum of traces (one per term of B), its differential (Leibniz, operators by their bases too),
        expanded to one summand per mixed term, each pulled back to trace(M dA), and the coefficients M."""
        return [("seed", list(self.seeds)), ("differentiate", list(self.differentials)),
                ("expandmm", list(self.summands)),
                ("pull back", [trace(prod(t.P, t.leaf)) for t in self.terms]),
                ("mixed terms", [t.G for t in self.terms])]

    def values(self, bound, V: torch.Tensor) -> dict[str, torch.Tensor]:
        """term ID -> Σ_batch M^t in A's shape, with V (B's shape) bound to the direction."""
        from .evaluate import _coefficient, _embed

        memo = {self.V[s.name]: _block(s, V) for s in self.net.find(self.weight)[1]}
        param = self.net.param(self.other)
        out = {}
        for t in self.terms:  # one memo: terms of one B term share their route prefixes
            g = _coefficient(bound.value(t.P, memo), t.leaf)
            out[t.id] = _embed(param, t.symbol, g)
        return out

    def total(self, bound, V: torch.Tensor) -> torch.Tensor:
        """Σ over the mixed terms of M^t = ∂⟨G_B, V⟩/∂A = −H_AB V."""
        import torch

        param = self.net.param(self.other)
        out = torch.zeros(param.shape, dtype=bound.dtype)
        for g in self.values(bound, V).values():
            out = out + g
        return out


def _block(sym: Sym, V: torch.Tensor) -> torch.Tensor:
    """The part of V on the block `sym` (a head's columns of W_Q, ...), shaped as the symbol."""
    from .evaluate import block_of

    v = V if sym.block is None else block_of(V, sym.block)  # a bias's head: its entries, the last axis
    return v.reshape(1, -1) if V.dim() == 1 else v


def notes_question(net) -> tuple[str, str]:
    """(B, A) of the note's question on a network: the key weight of the last layer by the query weight two
    layers below (K_5 by Q_3 on the chain of six layers), or layer 0's when there are fewer."""
    depth = getattr(net.spec, "depth", None)
    if depth is not None:  # the note's chain; with heads, head 0's blocks

        def name(kind: str, layer: int) -> str:
            return f"{kind}_{{{layer},0}}" if net.spec.heads > 1 else f"{kind}_{layer}"

        return name("K", depth - 1), name("Q", max(0, depth - 3))
    last = net.spec.n_layer - 1
    return f"blocks.{last}.W_K", f"blocks.{max(0, last - 2)}.W_Q"


def mixed(forms: Forms, weight: str, other: str, limit: int | None = DEFAULT_LIMIT) -> MixedForm:
    """The mixed form of `weight` (B) by `other` (A): the note's `forms2("K_5", "Q_3")`."""
    return MixedForm(forms, weight, other, limit)


__all__ = ["MixedFormError", "MixedTerm", "MixedForm", "direction", "differential", "mixed", "notes_question"]
