"""Terms of a form: one per route from a weight to the output (docs/rules.md), derived once per network.

A term is a chain of monomials of the network's definitions, from d(F) down to one differential dW. Its
coefficient is built by `rules.pull` monomial by monomial, starting from E^t; pulls are memoised on
(adjoint word, monomial), so routes that share a prefix share its words (the trie of route prefixes of
docs/forms.md#cost-of-evaluation) and the whole derivation costs one pull per edge of that trie, not per term.

Every term has a stable ID — its weight and the labelled occurrences it passes through, weight side first,
e.g. ``K_0 via X_1@Z_1#1`` — and a route class: the first branch off the residual stream its route takes
(``L1.q``, ``L0.mlp``, ...), ``unembed`` for a tied embedding read out by the unembedding, ``direct`` when
it takes none. `forms(n)` and `forms(n, k)` are the note's functions on the chain (k counts from 0, in
Leibniz order). `stages(term)` gives the word after each step of the note's pipeline for one term.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from . import rules
from .count_text import count_text
from .network import Monomial, Network
from .words import Diag, Diff, Label, Op, Prod, Sym, Trace, Word, Num, op, prod, trace, transpose

DECIDING = ("q", "k", "v", "mlp", "unembed")
DEFAULT_LIMIT = 2500


class TooManyTerms(ValueError):
    """Enumerating the terms asked for would exceed the limit; use route classes instead."""


def class_key(label: Label, by_head: bool = False) -> str | None:
    """The route class a labelled occurrence decides, or None when it keeps the class (residual, embedding,
    an occurrence without role)."""
    role = label.role
    kind, head = role if isinstance(role, tuple) else (role, None)
    if kind not in DECIDING:
        return None
    if kind == "unembed":
        return "unembed"
    key = f"L{label.layer}.{kind}"
    return key + f".h{head}" if by_head and head is not None else key


def route_class(path: tuple[Label, ...], by_head: bool = False) -> str:
    """The class of a route given weight side first: its first deciding occurrence, else "direct"."""
    for label in path:
        key = class_key(label, by_head)
        if key is not None:
            return key
    return "direct"


@dataclass(frozen=True, eq=False)
class Term:
    """trace(P · leaf), one route of the form. The coefficient G reads trace(G dW) = the term."""

    index: int                      # position in Leibniz order among all terms of the form
    id: str                         # weight symbol + labelled occurrences, weight side first
    weight: str                     # the parameter (state-dict key for the GPT) the symbol is a block of
    symbol: Sym                     # the weight symbol (a head's block of W_Q, ...)
    path: tuple[Label, ...]         # labelled occurrences, weight side first
    route_class: str
    op_count: int                   # operators on the route = shifts it needed
    chain: tuple[Word, ...]         # adjoint words along the route: E^t, ..., P (prefixes shared by terms)
    leaf: Word                      # dW, dW^t, or diag(dg)
    monomials: tuple[Monomial, ...]  # the route: monomials from d(F) down to dW

    @property
    def operators(self) -> str:
        """"1 operator", "4 operators": the count as the app and the exports say it."""
        return f"{self.op_count} operator{'' if self.op_count == 1 else 's'}"

    @property
    def P(self) -> Word:
        return self.chain[-1]

    @property
    def G(self) -> Word:
        """The coefficient word: P, P^t or diag(P) (docs/rules.md#finish)."""
        return rules.coefficient(self.chain[-1], self.leaf)

    @property
    def transposed(self) -> bool:
        return type(self.leaf) is Diff and self.leaf.transposed


class Forms:
    """The derivation of one network's form: counts, terms, one term's stages."""

    def __init__(self, net: Network):
        self.net = net
        self._pulls: dict = {}
        self._counts: dict[str, Counter] = {}
        self._listed: dict = {}
        self._plugged: dict = {}  # (word, monomial, path so far) -> the word with the monomial plugged in
        self.seed = transpose(net.error)
        self.start = Diff(net.output)

    # ---- counting (no enumeration) ----

    def counts_below(self, name: str) -> Counter:
        """Routes from the named value down to each weight symbol: Counter(symbol name -> routes)."""
        got = self._counts.get(name)
        if got is None:
            got = Counter()
            for m in self.net.monomials(name):
                s = m.diff.sym
                if s.kind == "weight":
                    got[s.name] += 1
                else:
                    got.update(self.counts_below(s.name))
            self._counts[name] = got
        return got

    def symbol_counts(self) -> Counter:
        return self.counts_below(self.net.output.name)

    def counts(self) -> dict[str, int]:
        """Terms per parameter, in model order (per-head blocks added up)."""
        c = self.symbol_counts()
        return {p.name: sum(c[s.name] for s in p.symbols) for p in self.net.params}

    def count(self, weight: str | None = None) -> int:
        c = self.symbol_counts()
        if weight is None:
            return sum(c.values())
        return sum(c[s.name] for s in self._symbols(weight))

    def _symbols(self, weight: str) -> tuple[Sym, ...]:
        try:
            return self.net.find(weight)[1]
        except KeyError:
            raise KeyError(f"no weight {weight!r} in {self.net.title}") from None

    def _below(self, m: Monomial, want: frozenset | None) -> int:
        s = m.diff.sym
        if s.kind == "weight":
            return 1 if want is None or s.name in want else 0
        c = self.counts_below(s.name)
        return sum(c.values()) if want is None else sum(c[w] for w in want)

    # ---- terms ----

    def pull(self, P: Word, m: Monomial) -> tuple[Word, Word, int]:
        key = (P, m.word)
        got = self._pulls.get(key)
        if got is None:
            got = rules.pull(P, m.word)
            self._pulls[key] = got
        return got

    def iter_terms(self, weight: str | None = None) -> Iterator[Term]:
        """Terms in Leibniz order (of one weight: that weight's, still numbered among all terms)."""
        want = None if weight is None else frozenset(s.name for s in self._symbols(weight))
        yield from self._dfs(self.start, (self.seed,), (), (), 0, [0], want, None)

    def terms(self, weight: str | None = None, limit: int | None = DEFAULT_LIMIT) -> list[Term]:
        n = self.count(weight)
        if limit is not None and n > limit:
            what = f"{weight!r} has" if weight else "the form has"
            raise TooManyTerms(f"{what} {count_text(n)} terms, more than {count_text(limit)}: use route classes instead")
        got = self._listed.get(weight)
        if got is None:
            got = tuple(self.iter_terms(weight))
            if n <= DEFAULT_LIMIT:
                self._listed[weight] = got
        return list(got)

    def _dfs(self, diff: Diff, chain, monos, path, ops, counter, want, labels):
        for m in self.net.monomials(diff.sym.name, diff.transposed):
            below = self._below(m, want)
            lf = m.diff
            label = lf.label
            if below == 0 or (labels is not None and not _fits(label, labels)):
                counter[0] += self._below(m, None)
                continue
            P, leaf, shifts = self.pull(chain[-1], m)
            path2 = path if label is None else path + (label,)
            rest = labels if labels is None or label is None else labels[1:]
            if lf.sym.kind == "weight":
                if rest is None or not rest:
                    yield self._term(counter[0], lf.sym, path2, ops + shifts, chain + (P,), leaf, monos + (m,))
                counter[0] += 1
            else:
                yield from self._dfs(lf, chain + (P,), monos + (m,), path2, ops + shifts, counter, want, rest)

    def _term(self, index, sym, path_out, ops, chain, leaf, monos) -> Term:
        path = tuple(reversed(path_out))
        tid = sym.name + (" via " + ", ".join(map(str, path)) if path else "")
        return Term(index, tid, self.net.param_of(sym).name, sym, path, route_class(path), ops, chain, leaf,
                    monos)

    def term(self, term_id: str) -> Term:
        """The term with this ID (found by following its labels, not by enumerating every term)."""
        name, _, rest = term_id.partition(" via ")
        labels = tuple(reversed(_labels(rest)))
        try:
            want = frozenset(s.name for s in self._symbols(name.strip()))
        except KeyError:
            raise KeyError(f"no term {term_id!r}: unknown weight {name.strip()!r}") from None
        for t in self._dfs(self.start, (self.seed,), (), (), 0, [0], want, labels):
            if t.id == term_id.strip() or t.id == _normal(term_id):
                return t
        raise KeyError(f"no term {term_id!r} in {self.net.title}")

    def term_at(self, k: int) -> Term:
        """The k-th term in Leibniz order (from 0), found by counting, not by enumerating."""
        n = self.count()
        if not 0 <= k < n:
            raise IndexError(f"term {k} out of range: the form has {n} terms (0 … {n - 1})")
        diff, chain, monos, path, ops, base = self.start, (self.seed,), (), (), 0, 0
        while True:
            for m in self.net.monomials(diff.sym.name, diff.transposed):
                below = self._below(m, None)
                if k >= base + below:
                    base += below
                    continue
                P, leaf, shifts = self.pull(chain[-1], m)
                lf = m.diff
                path = path if lf.label is None else path + (lf.label,)
                chain, monos, ops = chain + (P,), monos + (m,), ops + shifts
                if lf.sym.kind == "weight":
                    return self._term(base, lf.sym, path, ops, chain, leaf, monos)
                diff = lf
                break

    # ---- one term, step by step ----

    def term_word(self, term: Term, until_op: bool = False) -> Word:
        """The term as the expansion writes it: trace(E^t · m_1[m_2[…]]) with labelled differentials.
        until_op stops at the first differential inside an operator (what expandAll leaves)."""
        word = trace(prod(self.seed, self.start))
        prefix: tuple[Label, ...] = ()
        for m in term.monomials:
            if until_op and _inside_op(word):
                break
            label = m.diff.label
            key = (word, m.word, prefix)  # terms share their route prefixes: each plug is made once
            got = self._plugged.get(key)
            if got is None:
                got = self._plugged[key] = _plug(word, rules.with_path(m.word, prefix))
            word = got
            prefix = prefix if label is None else prefix + (label,)
        return word

    def form_stages(self, limit: int | None = DEFAULT_LIMIT) -> list[tuple[str, Word]]:
        """(stage, word) for the note's pipeline on the whole form: form, expandAll, expandmm, shiftmm,
        cycle (a sum of traces, one per term in Leibniz order); finish each summand for its G."""
        n = self.count()
        if limit is not None and n > limit:
            raise TooManyTerms(f"the form has {count_text(n)} terms, more than {count_text(limit)}: step through one term instead")
        net = self.net
        expanded = rules.expandmm(net.form, net.substitute)  # once: shiftmm starts from the stage it shows
        shifted = rules.shiftmm(expanded)
        return [("form", net.form), ("expandAll", rules.expand_all(net.form, net.substitute)),
                ("expandmm", expanded), ("shiftmm", shifted), ("cycle", rules.cycle(shifted))]

    def stages(self, term: Term) -> list[tuple[str, Word]]:
        """(stage, word) for the note's pipeline on one term: form, expandAll, expandmm, every shift and
        cycle, and the finished coefficient G."""
        out = [("form", self.net.form), ("expandAll", self.term_word(term, until_op=True))]
        word = self.term_word(term)
        out.append(("expandmm", word))
        out += rules.shift_steps(word)
        leaf, G = rules.finish(out[-1][1])
        out.append(("finish", G))
        return out


def _fits(label: Label | None, labels: tuple[str, ...]) -> bool:
    if label is None:
        return True
    return bool(labels) and str(label) == labels[0]


def _labels(rest: str) -> list[str]:
    """The labels of an ID after " via ", split at commas outside braces (a head's Z_{1,0} has one)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(rest):
        depth += (ch == "{") - (ch == "}")
        if ch == "," and depth == 0:
            parts.append(rest[start:i])
            start = i + 1
    parts.append(rest[start:])
    return [p.strip() for p in parts if p.strip()]


def _normal(term_id: str) -> str:
    name, _, rest = term_id.partition(" via ")
    parts = _labels(rest)
    return name.strip() + (" via " + ", ".join(parts) if parts else "")


def _inside_op(w: Word) -> bool:
    while True:
        tw = type(w)
        if tw is Op:
            return True
        if tw is Diff or (tw is Diag and type(w.arg) is Diff):
            return False
        w = next(f for f in w.factors if f.has_d) if tw is Prod else w.arg


def _plug(w: Word, repl: Word) -> Word:
    """w with its one differential replaced by `repl`."""
    tw = type(w)
    if tw is Diff or (tw is Diag and type(w.arg) is Diff):
        return repl
    if tw is Prod:
        fs = list(w.factors)
        i = next(i for i, f in enumerate(fs) if f.has_d)
        fs[i] = _plug(fs[i], repl)
        return prod(Num(w.coef), *w.scalars, *fs)
    if tw is Op:
        return op(w.kind, w.base, _plug(w.arg, repl))
    if tw is Trace:
        return trace(_plug(w.arg, repl))
    raise rules.RuleError(f"cannot plug into {tw.__name__}")


def forms(n: int, k: int | None = None, **options):
    """The note's forms(n): every finished term of encoder(n); forms(n, k): the k-th (from 0)."""
    from .chain import encoder
    f = Forms(encoder(n, **options))
    return f.terms(limit=None) if k is None else f.term_at(k)


__all__ = ["Term", "Forms", "TooManyTerms", "route_class", "class_key", "forms", "DEFAULT_LIMIT"]
