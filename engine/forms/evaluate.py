"""Numbers: every term's coefficient, route classes and the total, with plain matrix operations (no autograd).

A `Bound` (bound.py) holds one network's numbers on one batch and evaluates words with memoisation by node
(hash-consing, docs/forms.md); forward-only sub-words are computed once per batch, route-dependent words once
per route prefix:

- `term_coefficients` walks the terms in Leibniz order (depth-first over the trie of route prefixes) and
  keeps one value per prefix on a stack, so each edge of the trie costs one pull-back, not each term;
- `backward` runs the local pull-back templates of every monomial (the same rules with a placeholder Ψ for
  the arriving adjoint) from the output to the inputs, adding up the partial adjoints that arrive in the
  same state of the route-class automaton: one state is the backward pass (`total`), one per class gives
  the route classes (`classes`), which cost about one backward pass per state and sum to the total.

A coefficient is reported in the weight's own shape as Σ G^t = −∂L/∂W (docs/forms.md#read-out), summed over the
batch's sequences; a head's block of W_Q is placed in its columns of the full matrix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import torch

from .bound import Bound, apply_operator
from .derive import Forms, Term, class_key
from .network import Param
from .words import Diag, Sym, Word


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


def block_of(full: torch.Tensor, block: tuple[int, int, int]) -> torch.Tensor:
    """The view of a parameter that a head's symbol is: rows (axis 0) or columns (axis 1, the last axis,
    so a bias vector's entries) start … stop − 1."""
    axis, start, stop = block
    return full[start:stop] if axis == 0 else full[..., start:stop]


def _embed(param: Param, sym: Sym, g: torch.Tensor) -> torch.Tensor:
    if sym.block is None:
        return g if tuple(g.shape) == param.shape else g.reshape(param.shape)
    out = g.new_zeros(param.shape)
    view = block_of(out, sym.block)
    view += g.reshape(view.shape)
    return out


def term_coefficients(bound: Bound, terms: Iterable[Term]) -> dict[str, torch.Tensor]:
    """term ID -> its coefficient Σ G^t in the shape of its parameter (zero outside a head's block).
    Terms are taken in the order given; Leibniz order shares the most route prefixes."""
    return dict(iter_term_coefficients(bound, terms))


def iter_term_coefficients(bound: Bound, terms: Iterable[Term]) -> Iterator[tuple[str, torch.Tensor]]:
    """(term ID, coefficient) one term at a time, as `term_coefficients` computes them: a caller that keeps
    only a few (the largest terms) holds one route prefix's values at a time, not every term's matrix."""
    net = bound.net
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
        yield t.id, _embed(net.param_of(t.symbol), t.symbol, _coefficient(stack[-1][1], t.leaf))


def word_coefficient(bound: Bound, term: Term) -> torch.Tensor:
    """A term's coefficient from its G word alone (no sharing): the check of term_coefficients."""
    g = bound.value(term.G, {}).transpose(-1, -2)  # G^t; for a gain G = diag(P) is a column
    while g.dim() > 2:
        g = g.sum(0)
    return _embed(bound.net.param_of(term.symbol), term.symbol, g)


# ---- the backward pass with states (docs/route-classes.md#the-automaton) ----

Transition = Callable[[object, object], object]


def _placeholder(atom: Sym) -> Sym:
    return Sym("Ψ_" + atom.name, "placeholder", atom.cols, atom.rows, "Ψ_" + atom.text,
               r"\Psi_{" + atom.tex + "}", "Ψ<sub>" + atom.html + "</sub>")


def _sum(values):
    it = iter(values)
    out = next(it)
    for v in it:
        out = out + v
    return out


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


def propagate(bound: Bound, forms: Forms, transition: Transition, start=(), weights: Iterable[str] | None = None,
              merge: Callable[[str], bool] | None = None) -> dict[str, tuple[list, torch.Tensor]]:
    """The backward pass of the pull-back templates, carrying a stack of adjoints, one per state.

    The adjoint of E^t starts in state `start`; at a labelled occurrence each state s moves to
    transition(s, label) and the adjoints arriving in the same state are added up before the occurrence's
    template runs, once, on the whole stack. Returns symbol name -> (states, Σ_batch G^t stacked as
    (states, rows, cols)). One state in all is the plain backward pass; a state per route is every term.
    `merge(atom)`: the states arriving at that value may be added up into one, because every route from it
    to the weights asked for passes an occurrence that sets the state anew (route classes, `backward`).
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
        if len(keys) > 1 and merge is not None and merge(df.atom.name):
            keys, stack = keys[:1], stack.sum(0, keepdim=True)
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
    labelled occurrence sends its adjoint to, or None to keep it (route classes; "direct" to begin with).

    A deciding occurrence replaces the state, so where every route down to the weights asked for still
    passes one, the states arriving are added up into one (`_set_again_below`): inside the attention and MLP
    branches of the layers above a weight only one adjoint then flows instead of one per class. On GPT-2
    small's shape this took blocks.0.W_Q's classes from 187 s and a 9.8 GB peak to seconds
    (docs/route-classes.md)."""

    def transition(state, label):
        key = decide(label)
        return state if key is None else key

    want = None if weights is None else frozenset(weights)
    merge = None if want is None else _set_again_below(forms, want, lambda label: decide(label) is not None)
    return propagate(bound, forms, transition, "direct", weights, merge)


def _set_again_below(forms: Forms, want: frozenset, decides: Callable[[object], bool]) -> Callable[[str], bool]:
    """atom name -> whether every route from that value down to a symbol in `want` passes an occurrence
    that `decides` (the state it arrives in then does not matter)."""
    net, memo = forms.net, {}

    def below(name: str) -> bool:
        got = memo.get(name)
        if got is None:
            got = True
            for m in net.monomials(name):
                lf, sym = m.diff, m.diff.sym
                if lf.label is not None and decides(lf.label):
                    continue
                if sym.kind == "weight":
                    if sym.name in want:
                        got = False
                        break
                elif any(forms.counts_below(sym.name)[w] for w in want) and not below(sym.name):
                    got = False
                    break
            memo[name] = got
        return got

    return below


def class_names(forms: Forms, weight: str, by_head: bool = False) -> list[str]:
    """The route classes `classes` splits `weight` into, found from the network alone (no numbers): a budget
    can then be checked before a class is computed (engine/coefficients)."""
    net = forms.net
    want = frozenset(s.name for s in forms._symbols(weight))
    pending: dict[str, set] = {net.output.name: {"direct"}}
    found: dict[str, None] = {}
    for df in reversed(net.definitions):
        states = pending.pop(df.atom.name, None)
        if not states or not df.differentiate:
            continue
        for m in net.monomials(df.atom.name):
            lf, sym = m.diff, m.diff.sym
            if sym.kind == "weight" and sym.name not in want:
                continue
            if sym.kind != "weight" and not any(forms.counts_below(sym.name)[w] for w in want):
                continue
            key = None if lf.label is None else class_key(lf.label, by_head)
            arriving = states if key is None else {key}
            if sym.kind == "weight":
                found.update(dict.fromkeys(sorted(arriving)))
            else:
                pending.setdefault(sym.name, set()).update(arriving)
    return list(found)


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
                view = block_of(full, s.block)
                view += g.reshape(view.shape)
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
    """parameter -> route class -> Σ G^t over the terms of that class (docs/route-classes.md#the-automaton)."""
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


__all__ = ["apply_operator", "Bound", "term_coefficients", "iter_term_coefficients", "word_coefficient", "propagate", "backward", "total",
           "classes", "class_names", "classes_summed", "terms"]
