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


def _shape(v) -> tuple[int, int, int, bool]:
    """(batch, rows, cols, is_diag) of a factor's value, for the cost of a product order."""
    if isinstance(v, DiagValue):
        d = v.v.shape[-1]
        return math.prod(v.v.shape[:-2]), d, d, True
    if not isinstance(v, torch.Tensor):
        return 1, 1, 1, False
    return math.prod(v.shape[:-2]), v.shape[-2], v.shape[-1], False


def _plan(shapes: list[tuple[int, int, int, bool]], cached: list[bool]):
    """The cheapest order to multiply factors (matrix-chain DP). A span of forward-only factors costs
    nothing: its product is computed once per batch and kept. Returns a tree of (i, j, left, right)."""
    k = len(shapes)
    best: dict[tuple[int, int], tuple[float, object]] = {}
    for i in range(k):
        best[(i, i)] = (0.0, i)
    for length in range(2, k + 1):
        for i in range(k - length + 1):
            j = i + length - 1
            free = all(cached[i:j + 1])
            choice = None
            for m in range(i, j):
                left, right = best[(i, m)], best[(m + 1, j)]
                batch = max(s[0] for s in shapes[i:j + 1])
                diag = all(s[3] for s in shapes[i:m + 1]) or all(s[3] for s in shapes[m + 1:j + 1])
                step = batch * shapes[i][1] * shapes[j][2] * (1 if diag else shapes[m][2])
                cost = 0.0 if free else left[0] + right[0] + step
                if choice is None or cost < choice[0]:
                    choice = (cost, (i, j, left[1], right[1]))
            best[(i, j)] = choice
    return best[(0, k - 1)][1]


class Bound:
    """One network's numbers on one batch. `leaves` maps symbol names to tensors: per-sequence values
    (B, rows, cols), weights (rows, cols), constants (rows, cols); `scalars` the symbolic scalars' values."""

    def __init__(self, net: Network, leaves: dict[str, torch.Tensor], scalars: dict[str, float]):
        self.net = net
        self.values = dict(leaves)
        self.scalars = dict(scalars)
        self._cache: dict = {}
        self._derived: dict = {}
        self._plans: dict = {}
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
        for sc in w.scalars:
            c *= self.value(sc)
        fs = w.factors
        vals = [self.value(f, memo) for f in fs]
        if len(fs) == 1:
            r = vals[0]
        else:
            shapes = [_shape(v) for v in vals]
            key = (w, tuple(shapes))
            plan = self._plans.get(key)
            if plan is None:
                plan = self._plans[key] = _plan(shapes, [not f.free for f in fs])
            r = self._run(plan, fs, vals)
        if isinstance(r, DiagValue):
            r = torch.diag_embed(r.v.squeeze(-2))
        return r if c == 1.0 else r * c

    def _run(self, plan, fs, vals):
        """Multiply by the plan; products of forward-only spans are memoised (the shared sub-products)."""
        if isinstance(plan, int):
            return vals[plan]
        i, j, left, right = plan
        span = fs[i:j + 1]
        if not any(f.free for f in span):
            got = self._cache.get(span)
            if got is None:
                got = self._cache[span] = _mul(self._run(left, fs, vals), self._run(right, fs, vals))
            return got
        return _mul(self._run(left, fs, vals), self._run(right, fs, vals))

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
        return g if tuple(g.shape) == param.shape else g.reshape(param.shape)
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


# ---- the backward pass with states (FORMS §7 automaton) ----

Transition = Callable[[object, object], object]


def _placeholder(atom: Sym) -> Sym:
    return Sym("Ψ_" + atom.name, "placeholder", atom.cols, atom.rows, "Ψ_" + atom.text,
               r"\Psi_{" + atom.tex + "}", "Ψ<sub>" + atom.html + "</sub>")


def _group(keys: list, values: torch.Tensor) -> tuple[list, torch.Tensor]:
    """Add up the stacked values (leading dimension) whose keys are equal."""
    index: dict = {}
    for k in keys:
        index.setdefault(k, len(index))
    if len(index) == len(keys):
        return keys, values
    idx = torch.tensor([index[k] for k in keys])
    out = values.new_zeros((len(index),) + tuple(values.shape[1:])).index_add_(0, idx, values)
    return list(index), out


def _combine(pieces: list[tuple[list, torch.Tensor]]) -> tuple[list, torch.Tensor]:
    if len(pieces) == 1:
        return pieces[0]
    vals = torch.broadcast_tensors(*[v for _, v in pieces]) if len({v.shape[1:] for _, v in pieces}) > 1 \
        else [v for _, v in pieces]
    return _group([k for ks, _ in pieces for k in ks], torch.cat(list(vals), 0))


def propagate(bound: Bound, forms: Forms, transition: Transition, start=(), weights: Iterable[str] | None = None
              ) -> dict[str, tuple[list, torch.Tensor]]:
    """The backward pass of the pull-back templates, carrying a stack of adjoints, one per state.

    The adjoint of E^t starts in state `start`; at a labelled occurrence each state s moves to
    transition(s, label) and the adjoints arriving in the same state are added up before the occurrence's
    template runs, once, on the whole stack. Returns symbol name -> (states, Σ_batch G^t stacked as
    (states, rows, cols)). One state in all is the plain backward pass; a state per route is every term.
    """
    net = forms.net
    want = None if weights is None else frozenset(weights)
    pending: dict[str, list] = {net.output.name: [([start], bound.value(forms.seed).unsqueeze(0))]}
    out: dict[str, list] = {}
    for df in reversed(net.definitions):
        pieces = pending.pop(df.atom.name, None)
        if not pieces or not df.differentiate:
            continue
        keys, stack = _combine(pieces)
        psi = _placeholder(df.atom)
        for m in net.monomials(df.atom.name):
            lf = m.diff
            sym = lf.sym
            if want is not None:
                if sym.kind == "weight" and sym.name not in want:
                    continue
                if sym.kind != "weight" and not any(forms.counts_below(sym.name)[w] for w in want):
                    continue
            P, leaf, _ = forms.pull(psi, m)
            if lf.label is None:
                nkeys, arriving = keys, stack
            else:
                nkeys, arriving = _group([transition(k, lf.label) for k in keys], stack)
            v = bound.value(P, {psi: arriving})
            if sym.kind == "weight":
                v = _coefficient_stacked(v, leaf)
                out.setdefault(sym.name, []).append((nkeys, v))
            else:
                if lf.transposed:
                    v = v.transpose(-1, -2)
                pending.setdefault(sym.name, []).append((nkeys, v))
    return {name: _combine(pieces) for name, pieces in out.items()}


def _coefficient_stacked(v: torch.Tensor, leaf: Word) -> torch.Tensor:
    """(states, B, …) values of P -> (states, rows, cols) Σ_batch G^t."""
    if type(leaf) is Diag:
        g = torch.diagonal(v, dim1=-2, dim2=-1).unsqueeze(-2)
    elif leaf.transposed:
        g = v
    else:
        g = v.transpose(-1, -2)
    while g.dim() > 3:
        g = g.sum(1)
    return g


def backward(bound: Bound, forms: Forms, decide: Callable[[object], "str | None"],
             weights: Iterable[str] | None = None) -> dict[str, dict[str, torch.Tensor]]:
    """symbol name -> state -> Σ G^t (symbol-shaped), states given by `decide(label)`: the state a
    labelled occurrence sends its adjoint to, or None to keep it (route classes; "direct" to begin with)."""

    def transition(state, label):
        key = decide(label)
        return state if key is None else key

    per = propagate(bound, forms, transition, "direct", weights)
    return {name: dict(zip(keys, stack.unbind(0))) for name, (keys, stack) in per.items()}


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
    """term ID -> coefficient (in its parameter's shape), for every term of the form (or of one weight)
    when there are at most `limit`, in Leibniz order: the backward pass with one state per route."""
    listed = forms.terms(weight, limit)
    per = propagate(bound, forms, lambda path, label: path + (label,), (), _wanted(forms, weight))
    values = {}
    for name, (keys, stack) in per.items():
        for path, g in zip(keys, stack.unbind(0)):
            tid = name + (" via " + ", ".join(map(str, reversed(path))) if path else "")
            values[tid] = g
    net = bound.net
    return {t.id: _embed(net.param_of(t.symbol), t.symbol, values[t.id]) for t in listed}


__all__ = ["Bound", "term_coefficients", "word_coefficient", "propagate", "backward", "total", "classes", "terms"]
