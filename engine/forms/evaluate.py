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


def _raw_shape(v):
    if isinstance(v, torch.Tensor):
        return v.shape
    if isinstance(v, DiagValue):
        return ("diag", v.v.shape)
    return ()


def _shape(v) -> tuple[int, int, int, bool]:
    """(batch, rows, cols, is_diag) of a factor's value, for the cost of a product order."""
    if isinstance(v, DiagValue):
        d = v.v.shape[-1]
        return math.prod(v.v.shape[:-2]), d, d, True
    if not isinstance(v, torch.Tensor):
        return 1, 1, 1, False
    return math.prod(v.shape[:-2]), v.shape[-2], v.shape[-1], False


def _plan(shapes: list[tuple[int, int, int, bool]], cached: list[bool]):
    """The cheapest order to multiply factors (matrix-chain DP). A span of forward-only factors (cached)
    costs nothing — its product is computed once per batch and kept — and is itself multiplied in its
    cheapest order. Returns a tree of (i, j, left, right) with leaves the factor indices."""
    k = len(shapes)
    true: dict[tuple[int, int], tuple[float, object]] = {}
    amort: dict[tuple[int, int], tuple[float, object]] = {}
    for i in range(k):
        true[(i, i)] = amort[(i, i)] = (0.0, i)
    for length in range(2, k + 1):
        for i in range(k - length + 1):
            j = i + length - 1
            batch = max(s[0] for s in shapes[i:j + 1])
            best_t = best_a = None
            for m in range(i, j):
                diag = all(s[3] for s in shapes[i:m + 1]) or all(s[3] for s in shapes[m + 1:j + 1])
                step = batch * shapes[i][1] * shapes[j][2] * (1 if diag else shapes[m][2])
                t = true[(i, m)][0] + true[(m + 1, j)][0] + step
                if best_t is None or t < best_t[0]:
                    best_t = (t, (i, j, true[(i, m)][1], true[(m + 1, j)][1]))
                a = amort[(i, m)][0] + amort[(m + 1, j)][0] + step
                if best_a is None or a < best_a[0]:
                    best_a = (a, (i, j, amort[(i, m)][1], amort[(m + 1, j)][1]))
            true[(i, j)] = best_t
            amort[(i, j)] = (0.0, best_t[1]) if all(cached[i:j + 1]) else best_a
    return amort[(0, k - 1)][1]


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
        c, left, right = self._root(w, memo)
        r = left if right is None else _mul(left, right)
        if isinstance(r, DiagValue):
            r = torch.diag_embed(r.v.squeeze(-2))
        return r if c == 1.0 else r * c

    def _root(self, w: Prod, memo):
        """(scalar, left, right): the product's value as its last multiplication (right None for one
        factor), so callers can contract the batch inside that multiplication."""
        c = float(w.coef)
        for sc in w.scalars:
            c *= self.value(sc)
        fs = w.factors
        vals = [self.value(f, memo) for f in fs]
        if len(fs) == 1:
            return c, vals[0], None
        key = (w, tuple(_raw_shape(v) for v in vals))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = _plan([_shape(v) for v in vals], [w.free and not f.free for f in fs])
        i, j, left, right = plan
        return c, self._run(left, fs, vals), self._run(right, fs, vals)

    def summed_coefficient(self, w: Word, leaf: Word, memo) -> torch.Tensor:
        """Σ_batch G^t for trace(w · leaf), keeping leading state dimensions: the batch is contracted
        inside the last multiplication instead of materialising one coefficient per sequence."""
        if type(w) is Prod and len(w.factors) > 1:
            c, left, right = self._root(w, memo)
            if not isinstance(left, DiagValue) and not isinstance(right, DiagValue):
                if type(leaf) is Diag:  # diag(L R)_i = Σ_k L_ik R_ki
                    g = (left * right.transpose(-1, -2)).sum(-1).unsqueeze(-2)
                    return _sum_batch(g) * c
                g = _contract(left, right)
                g = g if leaf.transposed else g.transpose(-1, -2)
                return g * c if c != 1.0 else g
        v = self.value(w, memo)
        if type(leaf) is Diag:
            g = torch.diagonal(v, dim1=-2, dim2=-1).unsqueeze(-2)
        else:
            g = v if leaf.transposed else v.transpose(-1, -2)
        return _sum_batch(g)

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


def apply_operator(kind: str, base: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """op_base[a] of FORMS §2 on tensors (Bound caches what depends on the base; this is the plain form)."""
    if kind == "mm":
        return (base > 0).to(a.dtype) * a
    if kind == "gg":
        return (0.5 * (1 + torch.erf(base / math.sqrt(2)))
                + base * torch.exp(-0.5 * base * base) / math.sqrt(2 * math.pi)) * a
    if kind == "aa":
        return base * (a - (base * a).sum(-1, keepdim=True))
    if kind == "aaC":
        return base * (a - (base * a).sum(-2, keepdim=True))
    if kind in ("ln", "lnC"):
        x = base if kind == "ln" else base.transpose(-1, -2)
        mu = x.mean(-1, keepdim=True)
        r = 1 / torch.sqrt(((x - mu) ** 2).mean(-1, keepdim=True) + LN_EPS)
        if kind == "ln":
            return _ln(((x - mu) * r, r), a)
        return _ln(((x - mu) * r, r), a.transpose(-1, -2)).transpose(-1, -2)
    raise ValueError(f"unknown operator {kind!r}")


def _sum(values):
    it = iter(values)
    out = next(it)
    for v in it:
        out = out + v
    return out


def _sum_batch(g: torch.Tensor) -> torch.Tensor:
    """Sum the batch dimension (-3) of a per-sequence value; weights and constants have none."""
    return g.sum(-3) if g.dim() >= 3 else g


def _contract(left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """Σ_b left_b @ right_b over the batch dimension (-3), leading state dimensions broadcast."""
    lb, rb = left.dim() >= 3, right.dim() >= 3
    if lb and rb:
        B, r, k = left.shape[-3:]
        c = right.shape[-1]
        L = left.transpose(-3, -2).reshape(*left.shape[:-3], r, B * k)
        R = right.reshape(*right.shape[:-3], B * k, c)
        return L @ R
    if lb:
        return left.sum(-3) @ right
    if rb:
        return left @ right.sum(-3)
    return left @ right


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
    if len(keys) > 1 and keys.count(keys[0]) == len(keys):
        return [keys[0]], values.sum(0, keepdim=True)
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
    first = pieces[0][0]
    if len(first) == 1 and all(ks == first for ks, _ in pieces):  # one state: just add
        return first, _sum(v for _, v in pieces)
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
            if sym.kind == "weight":
                v = bound.summed_coefficient(P, leaf, {psi: arriving})
                out.setdefault(sym.name, []).append((nkeys, v))
            else:
                v = bound.value(P, {psi: arriving})
                if lf.transposed:
                    v = v.transpose(-1, -2)
                pending.setdefault(sym.name, []).append((nkeys, v))
    return {name: _combine(pieces) for name, pieces in out.items()}


def backward(bound: Bound, forms: Forms, decide: Callable[[object], "str | None"],
             weights: Iterable[str] | None = None) -> dict[str, tuple[list, torch.Tensor]]:
    """symbol name -> (states, Σ G^t stacked by state), states given by `decide(label)`: the state a
    labelled occurrence sends its adjoint to, or None to keep it (route classes; "direct" to begin with)."""

    def transition(state, label):
        key = decide(label)
        return state if key is None else key

    return propagate(bound, forms, transition, "direct", weights)


def _params(bound: Bound, per_symbol: dict[str, tuple[list, torch.Tensor]], weights):
    """Per-symbol stacked coefficients -> parameter -> state -> coefficient in the parameter's shape."""
    net = bound.net
    out: dict[str, dict[str, torch.Tensor]] = {}
    for p in net.params:
        if weights is not None and p.name not in weights:
            continue
        classes: dict[str, torch.Tensor] = {}
        for s in p.symbols:
            keys, stack = per_symbol.get(s.name, ([], None))
            for state, g in zip(keys, stack.unbind(0) if stack is not None else ()):
                if s.block is None:
                    classes[state] = g.reshape(p.shape) + classes[state] if state in classes else g.reshape(p.shape)
                    continue
                full = classes.get(state)
                if full is None:
                    full = classes[state] = g.new_zeros(p.shape)
                axis, a, b = s.block
                if axis == 0:
                    full[a:b] += g
                else:
                    full[:, a:b] += g
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


def classes_summed(bound: Bound, forms: Forms, weights=None) -> dict[str, torch.Tensor]:
    """parameter -> Σ over route classes (what must equal the total), without materialising each class
    in the parameter's shape (for large models)."""
    per = backward(bound, forms, lambda label: class_key(label), _wanted(forms, weights))
    summed = {name: (["sum"], stack.sum(0, keepdim=True)) for name, (keys, stack) in per.items()}
    return {name: c["sum"] for name, c in _params(bound, summed, _param_names(forms, weights)).items()}


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


__all__ = ["apply_operator", "Bound", "term_coefficients", "word_coefficient", "propagate", "backward", "total", "classes",
           "classes_summed", "terms"]
