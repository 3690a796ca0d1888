"""Numbers: every term's coefficient, route classes and the total, with plain matrix operations (no autograd).

`Bound` holds one network's numbers on one batch: the leaf values (weights, inputs, constants), the scalars,
and the forward cache computed from the definitions' own words. Words are evaluated with memoisation by node
(hash-consing, FORMS §7): forward-only sub-words and runs of forward factors inside products are computed
once per batch; route-dependent words are computed once per route prefix:

- `term_coefficients` walks the terms in Leibniz order (depth-first over the trie of route prefixes) and
  keeps one value per prefix on a stack, so each edge of the trie costs one pull-back, not each term;
- `backward` runs the local pull-back templates of every monomial (the same rules with a placeholder Ψ for
  the arriving adjoint) from the output to the inputs, adding up the partial adjoints that arrive in the
  same state of the route-class automaton: one state is the backward pass (`total`), one per class gives
  the route classes (`classes`), which cost about one backward pass per state and sum to the total.

A coefficient is reported in the weight's own shape as Σ G^t = −∂L/∂W (FORMS §1 read-out), summed over the
batch's sequences; a head's block of W_Q is placed in its columns of the full matrix.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import torch

from ..model import LN_EPS
from .derive import Forms, Term, class_key
from .network import Network, Param
from .words import (Diag, DiagOf, Diff, Fn, Num, Op, Prod, Scalar, Sum, Sym, T, Trace, Word, Zero,
                    transpose)


class DiagValue:
    """diag(v) for a row vector v (…, 1, d), applied by broadcasting instead of a d×d matrix."""

    __slots__ = ("v",)

    def __init__(self, v: torch.Tensor):
        self.v = v


def _mul(a, b):
    if isinstance(b, DiagValue):
        if isinstance(a, DiagValue):
            return DiagValue(a.v * b.v)
        return a * b.v
    if isinstance(a, DiagValue):
        return a.v.transpose(-1, -2) * b
    return a @ b


def _cost(a, b) -> float:
    if isinstance(a, DiagValue) or isinstance(b, DiagValue):
        x = b if isinstance(a, DiagValue) else a
        return float(x.numel()) if isinstance(x, torch.Tensor) else 1.0
    batch = max(math.prod(a.shape[:-2]), math.prod(b.shape[:-2]), 1)
    return float(batch * a.shape[-2] * a.shape[-1] * b.shape[-1])


def _chain(vals: list):
    """The product of matrices, multiplying the cheapest adjacent pair first."""
    vals = list(vals)
    while len(vals) > 1:
        i = min(range(len(vals) - 1), key=lambda j: _cost(vals[j], vals[j + 1]))
        vals[i:i + 2] = [_mul(vals[i], vals[i + 1])]
    return vals[0]


class Bound:
    """One network's numbers on one batch. `leaves` maps symbol names to tensors: per-sequence values
    (B, rows, cols), weights (rows, cols), constants (rows, cols); `scalars` the symbolic scalars' values."""

    def __init__(self, net: Network, leaves: dict[str, torch.Tensor], scalars: dict[str, float]):
        self.net = net
        self.values = dict(leaves)
        self.scalars = dict(scalars)
        self._cache: dict = {}
        self._derived: dict = {}
        for df in net.definitions:
            self.values[df.atom.name] = self.value(df.word)

    @property
    def dtype(self) -> torch.dtype:
        return self.values[self.net.output.name].dtype

    def value(self, w: Word, memo: dict | None = None):
        """The value of a word; `memo` binds placeholders (and already computed route words)."""
        if memo is not None:
            got = memo.get(w)
            if got is not None:
                return got
        if not w.free:
            got = self._cache.get(w)
            if got is None:
                got = self._eval(w, memo)
                if type(w) not in (Sym, T):
                    self._cache[w] = got
            return got
        got = self._eval(w, memo)
        if memo is not None:
            memo[w] = got
        return got

    # ---- one method per node ----

    def _eval(self, w, memo):
        tw = type(w)
        if tw is Sym:
            try:
                return self.values[w.name]
            except KeyError:
                raise KeyError(f"no value for {w.name!r}") from None
        if tw is T:
            return self.value(w.sym, memo).transpose(-1, -2)
        if tw is Prod:
            return self._prod(w, memo)
        if tw is Op:
            return self._op(w, memo)
        if tw is Sum:
            out = None
            for x in w.terms:
                v = self.value(x, memo)
                out = v if out is None else out + v
            return out
        if tw is Scalar:
            return self.scalars[w.name] ** float(w.power)
        if tw is Num:
            return float(w.value)
        if tw is Fn:
            return self._fn(w, memo)
        if tw is Diag:
            return DiagValue(self.value(w.arg, memo))
        if tw is DiagOf:
            return torch.diagonal(self.value(w.arg, memo), dim1=-2, dim2=-1).unsqueeze(-1)
        if tw is Trace:
            return torch.diagonal(self.value(w.arg, memo), dim1=-2, dim2=-1).sum(-1)
        if tw is Zero:
            return 0.0
        if tw is Diff:
            raise ValueError("a differential has no value: finish the term first")
        raise TypeError(f"cannot evaluate {tw.__name__}")

    def _prod(self, w: Prod, memo):
        c = float(w.coef)
        for s in w.scalars:
            c *= self.value(s)
        pieces, run = [], []
        for f in w.factors:
            if f.free:
                if run:
                    pieces.append(self._run(run))
                    run = []
                pieces.append(self.value(f, memo))
            else:
                run.append(f)
        if run:
            pieces.append(self._run(run))
        r = _chain(pieces)
        if isinstance(r, DiagValue):
            r = torch.diag_embed(r.v.squeeze(-2))
        return r if c == 1.0 else r * c

    def _run(self, run: list[Word]):
        """A run of forward-only factors, memoised by the run: the shared sub-products."""
        if len(run) == 1:
            return self.value(run[0])
        key = tuple(run)
        got = self._cache.get(key)
        if got is None:
            got = _chain([self.value(f) for f in run])
            self._cache[key] = got
        return got

    def _fn(self, w: Fn, memo):
        x = self.value(w.arg, memo)
        if w.kind == "a":
            return torch.softmax(x, dim=-1)
        if w.kind == "m":
            return torch.relu(x)
        if w.kind == "gelu":
            return torch.nn.functional.gelu(x)
        if w.kind == "N":
            mu = x.mean(-1, keepdim=True)
            var = ((x - mu) ** 2).mean(-1, keepdim=True)
            return (x - mu) / torch.sqrt(var + LN_EPS)
        raise TypeError(f"unknown function {w.kind}")

    def _base(self, kind: str, base: Word):
        key = (kind, base)
        got = self._derived.get(key)
        if got is None:
            b = self.value(base)
            if kind == "mm":
                got = (b > 0).to(b.dtype)
            elif kind == "gg":
                got = 0.5 * (1 + torch.erf(b / math.sqrt(2))) + b * torch.exp(-0.5 * b * b) / math.sqrt(2 * math.pi)
            else:  # row normalisation: (Y, 1/σ)
                mu = b.mean(-1, keepdim=True)
                var = ((b - mu) ** 2).mean(-1, keepdim=True)
                r = 1 / torch.sqrt(var + LN_EPS)
                got = ((b - mu) * r, r)
            self._derived[key] = got
        return got

    def _op(self, w: Op, memo):
        a = self.value(w.arg, memo)
        k = w.kind
        if k in ("mm", "gg"):
            return self._base(k, w.base) * a
        if k == "aa":
            s = self.value(w.base)
            return s * (a - (s * a).sum(-1, keepdim=True))
        if k == "aaC":
            b = self.value(w.base)
            return b * (a - (b * a).sum(-2, keepdim=True))
        if k == "ln":
            return _ln(self._base("ln", w.base), a)
        if k == "lnC":
            return _ln(self._base("ln", transpose(w.base)), a.transpose(-1, -2)).transpose(-1, -2)
        raise TypeError(f"unknown operator {k}")


def _ln(yr, a):
    y, r = yr
    return r * (a - a.mean(-1, keepdim=True) - y * (y * a).mean(-1, keepdim=True))


# ---- coefficients in the weights' shapes ----

def _coefficient(p_value, leaf: Word) -> torch.Tensor:
    """Σ_batch G^t from the value of P in trace(P · leaf)."""
    if type(leaf) is Diag:
        g = torch.diagonal(p_value, dim1=-2, dim2=-1).unsqueeze(-2)  # G^t as a row (…, 1, d)
    elif leaf.transposed:
        g = p_value
    else:
        g = p_value.transpose(-1, -2)
    while g.dim() > 2:
        g = g.sum(0)
    return g


def _embed(param: Param, sym: Sym, g: torch.Tensor) -> torch.Tensor:
    if sym.block is None:
        return g.reshape(param.shape)
    out = g.new_zeros(param.shape)
    axis, start, stop = sym.block
    if axis == 0:
        out[start:stop] = g
    else:
        out[:, start:stop] = g
    return out


def term_coefficients(bound: Bound, terms: Iterable[Term]) -> dict[str, torch.Tensor]:
    """term ID -> its coefficient Σ G^t in the shape of its parameter (zero outside a head's block).
    Terms are taken in the order given; Leibniz order shares the most route prefixes."""
    net = bound.net
    out: dict[str, torch.Tensor] = {}
    stack: list[tuple[Word, object]] = []
    for t in terms:
        chain = t.chain
        k = 0
        while k < len(stack) and k < len(chain) and stack[k][0] is chain[k]:
            k += 1
        del stack[k:]
        for j in range(k, len(chain)):
            memo = {chain[j - 1]: stack[j - 1][1]} if j else {}
            stack.append((chain[j], bound.value(chain[j], memo)))
        out[t.id] = _embed(net.param_of(t.symbol), t.symbol, _coefficient(stack[-1][1], t.leaf))
    return out


def word_coefficient(bound: Bound, term: Term) -> torch.Tensor:
    """A term's coefficient from its G word alone (no sharing): the check of term_coefficients."""
    g = bound.value(term.G, {}).transpose(-1, -2)  # G^t; for a gain G = diag(P) is a column
    while g.dim() > 2:
        g = g.sum(0)
    return _embed(bound.net.param_of(term.symbol), term.symbol, g)


# ---- the backward pass with route-class states ----

Decide = Callable[[object], "str | None"]


def _placeholder(atom: Sym) -> Sym:
    return Sym("Ψ_" + atom.name, "placeholder", atom.cols, atom.rows, "Ψ_" + atom.text,
               r"\Psi_{" + atom.tex + "}", "Ψ<sub>" + atom.html + "</sub>")


def backward(bound: Bound, forms: Forms, decide: Decide, weights: Iterable[str] | None = None
             ) -> dict[str, dict[str, torch.Tensor]]:
    """symbol name -> state -> Σ G^t (symbol-shaped). `decide(label)` gives the state a labelled
    occurrence sends its adjoint to (adding up everything that arrives), or None to keep each state."""
    net = forms.net
    want = None if weights is None else frozenset(weights)
    adj: dict[str, dict[str, torch.Tensor]] = {net.output.name: {"direct": bound.value(forms.seed)}}
    out: dict[str, dict[str, torch.Tensor]] = {}
    for df in reversed(net.definitions):
        states = adj.pop(df.atom.name, None)
        if not states or not df.differentiate:
            continue
        psi = _placeholder(df.atom)
        total = None
        for m in net.monomials(df.atom.name):
            lf = m.diff
            sym = lf.sym
            if want is not None:
                if sym.kind == "weight" and sym.name not in want:
                    continue
                if sym.kind != "weight" and not any(forms.counts_below(sym.name)[w] for w in want):
                    continue
            P, leaf, _ = forms.pull(psi, m)
            key = decide(lf.label) if lf.label is not None else None
            if key is not None:
                if total is None:
                    total = _sum(states.values())
                items = ((key, total),)
            else:
                items = states.items()
            target = out if sym.kind == "weight" else adj
            slot = target.setdefault(sym.name, {})
            for state, a in items:
                v = bound.value(P, {psi: a})
                if sym.kind == "weight":
                    v = _coefficient(v, leaf)
                elif lf.transposed:
                    v = v.transpose(-1, -2)
                slot[state] = v if state not in slot else slot[state] + v
    return out


def _sum(values):
    it = iter(values)
    s = next(it)
    for v in it:
        s = s + v
    return s


def _params(bound: Bound, per_symbol: dict[str, dict[str, torch.Tensor]], weights):
    net = bound.net
    out: dict[str, dict[str, torch.Tensor]] = {}
    for p in net.params:
        if weights is not None and p.name not in weights:
            continue
        classes: dict[str, torch.Tensor] = {}
        for s in p.symbols:
            for state, g in per_symbol.get(s.name, {}).items():
                e = _embed(p, s, g)
                classes[state] = e if state not in classes else classes[state] + e
        out[p.name] = classes
    return out


def _wanted(forms: Forms, weights) -> set[str] | None:
    if weights is None:
        return None
    names = set()
    for w in ([weights] if isinstance(weights, str) else weights):
        names |= {s.name for s in forms._symbols(w)}
    return names


def _param_names(forms: Forms, weights) -> set[str] | None:
    if weights is None:
        return None
    return {forms.net.find(w)[0].name for w in ([weights] if isinstance(weights, str) else weights)}


def total(bound: Bound, forms: Forms, weights=None) -> dict[str, torch.Tensor]:
    """parameter -> Σ over all terms of G^t (= −∂L/∂W), by one backward pass of the templates."""
    per = backward(bound, forms, lambda label: None, _wanted(forms, weights))
    params = _params(bound, per, _param_names(forms, weights))
    return {name: c.get("direct", torch.zeros(bound.net.param(name).shape, dtype=bound.dtype))
            for name, c in params.items()}


def classes(bound: Bound, forms: Forms, weights=None, by_head: bool = False) -> dict[str, dict[str, torch.Tensor]]:
    """parameter -> route class -> Σ G^t over the terms of that class (FORMS §7 automaton)."""
    per = backward(bound, forms, lambda label: class_key(label, by_head), _wanted(forms, weights))
    return _params(bound, per, _param_names(forms, weights))


def terms(bound: Bound, forms: Forms, weight: str | None = None, limit: int | None = 2500
          ) -> dict[str, torch.Tensor]:
    """term ID -> coefficient, for every term (of one weight) when there are at most `limit`."""
    return term_coefficients(bound, forms.terms(weight, limit))


__all__ = ["Bound", "term_coefficients", "word_coefficient", "backward", "total", "classes", "terms"]
