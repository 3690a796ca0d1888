"""A network as the forms engine sees it: named forward values defined by words (docs/forms.md).

`Network` holds the definitions in forward order (X_1 = R_0 W_0 + C f_0, ...), the output F and error E of
the form ω = trace(E^t dF), the weights, and the dimensions. It differentiates each definition once by the
Leibniz rule, labelling every occurrence of a symbol that occurs more than once in the whole network (a
branch: ``X_1@Z_1#1``), and keeps the resulting monomials — each carries exactly one differential, possibly
inside operators. Every route of the form is a chain of such monomials, so terms, counts, route classes and
the backward pass are all read off these monomials (derive.py, evaluate.py).

Builders: chain.py (the note's encoder chain) and gpt.py (the GPT of any ModelConfig).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from . import rules
from .words import ZERO, Diag, Diff, Label, Op, Prod, Sym, Word, prod, trace, transpose


@dataclass(frozen=True)
class Definition:
    """atom = word. `roles` names the branch each occurrence of a symbol is, in Leibniz order:
    ((name, (role of occurrence 0, role of occurrence 1, ...)), ...); see Label."""

    atom: Sym
    word: Word
    layer: int | None = None
    roles: tuple[tuple[str, tuple], ...] = ()
    differentiate: bool = True  # False for the error E, which the form holds fixed

    def role(self, name: str, index: int):
        for n, rs in self.roles:
            if n == name:
                return rs[index] if index < len(rs) else None
        return None


@dataclass(frozen=True)
class Monomial:
    """One summand of d(definition): `word` carries the differential `leaf` (a Diff, or diag(Diff) for a
    gain), possibly inside operators."""

    word: Word
    leaf: Word

    @property
    def diff(self) -> Diff:
        return rules.leaf_diff(self.leaf)


@dataclass(frozen=True)
class Param:
    """A model parameter (a state-dict key for the GPT, a weight of the note for the chain) and the
    symbols that are blocks of it (one per head for W_Q, W_K, W_V, W_O)."""

    name: str
    shape: tuple[int, ...]
    symbols: tuple[Sym, ...]
    text: str
    tex: str


class Network:
    def __init__(self, title: str, definitions: list[Definition], output: Sym, error: Sym,
                 params: list[Param], dims: dict[str, int | None], scalars: dict[str, float | str],
                 spec=None):
        self.title = title
        self.definitions = tuple(definitions)
        self.output, self.error = output, error
        self.params = tuple(params)
        self.dims = dict(dims)
        self.scalars = dict(scalars)  # name -> value, or the name of a dimension / "positions"
        self.spec = spec              # ChainSpec or ModelConfig: what the network was built from
        self._defs = {df.atom.name: df for df in self.definitions}
        if len(self._defs) != len(self.definitions):
            raise ValueError("a name is defined twice")
        self.weights = tuple(s for p in self.params for s in p.symbols)
        self._param_of = {s.name: p for p in self.params for s in p.symbols}
        self._weight = {s.name: s for s in self.weights}
        self.uses = self._count_uses()
        self._mono: dict[tuple[str, bool], tuple[Monomial, ...]] = {}
        self._subst: dict[Diff, tuple[Word, ...] | None] = {}

    # ---- lookup ----

    def definition(self, name: str) -> Definition | None:
        return self._defs.get(name)

    def weight(self, name: str) -> Sym:
        return self._weight[name]

    def param_of(self, sym: Sym | str) -> Param:
        return self._param_of[sym if isinstance(sym, str) else sym.name]

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def find(self, name: str) -> tuple[Param, tuple[Sym, ...]]:
        """A parameter or one of its blocks by name (state-dict key, symbol name or display text)."""
        for p in self.params:
            if name in (p.name, p.text):
                return p, p.symbols
            for s in p.symbols:
                if name in (s.name, s.text):
                    return p, (s,)
        raise KeyError(name)

    def scalar_values(self, positions: int) -> dict[str, float]:
        """Numbers for the symbolic scalars: a dimension's size, or the batch's B·n positions."""
        out = {}
        for name, ref in self.scalars.items():
            if ref == "positions":
                out[name] = float(positions)
            elif isinstance(ref, str):
                out[name] = float(self.dims[ref])
            else:
                out[name] = float(ref)
        return out

    @property
    def form(self) -> Word:
        """ω = trace(E^t dF)."""
        return trace(prod(transpose(self.error), Diff(self.output)))

    def equations(self) -> list[tuple[Sym, Word]]:
        return [(df.atom, df.word) for df in self.definitions]

    # ---- differentiation ----

    def _leaves_in_order(self, df: Definition) -> list[tuple[Sym, bool]]:
        seen: list[tuple[Sym, bool]] = []

        def hook(sym, t):
            if sym.differentiable:
                seen.append((sym, t))
                return Diff(sym, t)
            return ZERO

        rules.d(df.word, hook, fn_base=df.atom)
        return seen

    def _count_uses(self) -> Counter:
        uses: Counter = Counter({self.output.name: 1})
        for df in self.definitions:
            if df.differentiate:
                for sym, _ in self._leaves_in_order(df):
                    uses[sym.name] += 1
        return uses

    def branched(self, sym: Sym) -> bool:
        return self.uses[sym.name] > 1

    def differential(self, df: Definition) -> Word:
        """d(definition) by the Leibniz rule, every occurrence of a branched symbol labelled."""
        index: Counter = Counter()

        def hook(sym, t):
            if not sym.differentiable:
                return ZERO
            k = index[sym.name]
            index[sym.name] += 1
            if not self.branched(sym):
                return Diff(sym, t)
            return Diff(sym, t, (Label(sym.name, df.atom.name, k, df.role(sym.name, k), df.layer),))

        return rules.d(df.word, hook, fn_base=df.atom)

    def monomials(self, name: str, transposed: bool = False) -> tuple[Monomial, ...]:
        """The summands of d(definition of `name`) (transposed: of its transpose), in Leibniz order."""
        key = (name, transposed)
        got = self._mono.get(key)
        if got is None:
            if transposed:
                got = tuple(Monomial(transpose(m.word), transpose(m.leaf)) for m in self.monomials(name))
            else:
                df = self._defs[name]
                got = tuple(Monomial(m, _leaf(m)) for m in rules.flatten(rules.expandmm(self.differential(df))))
            self._mono[key] = got
        return got

    def substitute(self, diff: Diff) -> list[Word] | None:
        """The Leibniz expansion of a named value's differential, paths extended: for expandAll/expandmm."""
        if diff in self._subst:  # memoised: an expansion meets the same differential many times
            got = self._subst[diff]
            return None if got is None else list(got)
        df = self._defs.get(diff.sym.name)
        if df is None or not df.differentiate or diff.sym.kind != "atom":
            got = None
        else:
            got = tuple(rules.with_path(m.word, diff.path) for m in self.monomials(diff.sym.name, diff.transposed))
        self._subst[diff] = got
        return None if got is None else list(got)


def _leaf(m: Word) -> Word:
    """The differential factor of a monomial, found by descending through its carrier factors."""
    w = m
    while True:
        fs = w.factors if type(w) is Prod else (w,)
        f = next(f for f in fs if f.has_d)
        if type(f) is Diff or (type(f) is Diag and type(f.arg) is Diff):
            return f
        if type(f) is Op:
            w = f.arg
        else:
            raise rules.RuleError(f"unexpected {type(f).__name__} in a monomial")


def named(name: str, kind: str, rows: str, cols: str, base: str, sub: str = "", sup: str = "",
          tex_base: str | None = None, **meta) -> Sym:
    """A symbol with display names made from a base letter, a subscript and a superscript:
    named("Q_{0,1}", "weight", "d", "d_k", "Q", "0,1") is shown Q_{0,1}, $Q_{0,1}$, Q<sub>0,1</sub>."""
    tb = base if tex_base is None else tex_base
    text = base + sup + (("_" + sub if "," not in sub and len(sub) <= 2 else "_{" + sub + "}") if sub else "")
    tex = tb + (f"^{{{sup}}}" if sup else "") + (f"_{{{sub}}}" if sub else "")
    html = base + (f"<sup>{sup}</sup>" if sup else "") + (f"<sub>{sub}</sub>" if sub else "")
    return Sym(name, kind, rows, cols, text, tex, html, **meta)


__all__ = ["Definition", "Monomial", "Param", "Network", "named"]
