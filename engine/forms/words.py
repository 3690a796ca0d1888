"""Words: the interned expression DAG of the forms engine (docs/forms.md#representation).

A word is built from leaves (`Sym`, a transposed leaf `T`, a differential `Diff`, symbolic scalars like
n_1^{-1/2}, numbers) and nodes: flattened products `Prod`, sums `Sum`, linear operators `Op(kind, base, arg)`
on a cached forward value (docs/forms.md), non-linearities `Fn` (only ever the whole definition of a named
value), `Diag`/`DiagOf` for layer-norm gains, and `Trace`.

Every node is interned (hash-consed): building the same word twice returns the same object, so equality is
identity, sub-words are shared between terms, and evaluation can memoise by node. Transposes live on leaves
only — (XY)^t = Y^t X^t, (X^t)^t = X, op_B[A]^t = op^T_{B^t}[A^t] — so `transpose` is an involution on words
and is memoised both ways. Scalars commute and sit in front of a product, sorted, so products are canonical.

Path labels (`Label`) are attached to differentials by the Leibniz step: the labelled occurrence
``X_1@Z_1#1`` is the second occurrence of X_1 in the definition of Z_1 (the key side of layer 1).
"""

from __future__ import annotations

import threading
import weakref
from _weakref import _remove_dead_weakref  # what weakref.WeakValueDictionary drops a dead entry with
from dataclasses import dataclass
from fractions import Fraction

# Operator kinds (docs/forms.md#operators) and the kind their transpose has: op_B[A]^t = op^T_{B^t}[A^t]. The elementwise
# ones (mm, gg, ggt) multiply A by the slope of their function at the base: ReLU's, GELU's, GELU's tanh form's.
OP_KINDS = ("mm", "gg", "ggt", "aa", "aaC", "ln", "lnC")
TRANSPOSED_KIND = {"mm": "mm", "gg": "gg", "ggt": "ggt", "aa": "aaC", "aaC": "aa", "ln": "lnC", "lnC": "ln"}

# Bilinear operators of the mixed form (docs/second-order.md, engine/forms/mixed.py): the softmax operator's
# derivative by its base, aa2_{S,A}[D] = d(aa_S[A]) along dS = D, linear in D with S and A fixed; "A" marks
# the adjoint, "C" the column version (op2_{B,C}[D]^t = op2C_{B^t,C^t}[D^t]). Shifting one out of a trace
# takes the transpose of the adjoint: trace(P op2_{B,C}[D]) = trace(SHIFTED_KIND2[op2]_{B^t,C^t}[P] D).
# GELU's gg and ggt differentiated by their base U are elementwise, gg2_{U,A}[D] = gelu''(U) ⊙ A ⊙ D (ggt2 with
# the tanh form's second derivative): their own transpose and their own adjoint. The normalisation's ln_X[A]
# differentiated by X is ln2_{X,A}[D], rowwise like aa2, with its adjoint ln2A and column kinds ln2C, ln2AC.
OP2_KINDS = ("aa2", "aa2C", "aa2A", "aa2AC", "gg2", "ggt2", "ln2", "ln2C", "ln2A", "ln2AC")
TRANSPOSED_KIND2 = {"aa2": "aa2C", "aa2C": "aa2", "aa2A": "aa2AC", "aa2AC": "aa2A", "gg2": "gg2", "ggt2": "ggt2",
                    "ln2": "ln2C", "ln2C": "ln2", "ln2A": "ln2AC", "ln2AC": "ln2A"}
SHIFTED_KIND2 = {"aa2": "aa2AC", "aa2C": "aa2A", "aa2A": "aa2C", "aa2AC": "aa2", "gg2": "gg2", "ggt2": "ggt2",
                 "ln2": "ln2AC", "ln2C": "ln2A", "ln2A": "ln2C", "ln2AC": "ln2"}

# Forward non-linearities and their differential: d f(Y) = op_base[dY] where the base is the function's
# output ("out": the softmax S for a) or its input ("in": U for m, gelu and gelut, X for the normalisation N).
# gelut is GELU's tanh form, GPT-2's gelu_new: ½u(1 + tanh(√(2/π)(u + 0.044715u³))).
FN_KINDS = ("a", "m", "gelu", "gelut", "N")
FN_DIFFERENTIAL = {"a": ("aa", "out"), "m": ("mm", "in"), "gelu": ("gg", "in"), "gelut": ("ggt", "in"),
                   "N": ("ln", "in")}

# Kinds of leaf symbol. Only weights, named intermediates ("atom") and free-algebra variables ("var") have a
# differential; the error E and placeholders Ψ seed adjoints (their words are route-dependent).
SYM_KINDS = ("weight", "atom", "input", "const", "error", "placeholder", "var")
_DIFFERENTIABLE = ("weight", "atom", "var")
_SEEDS = ("error", "placeholder")

# key -> weak reference to the node: a plain dict read without a lock (a node enters only once filled), as
# weakref.WeakValueDictionary is but without its Python-level get, which was a third of the cost of building words
_TABLE: dict = {}
_LOCK = threading.Lock()  # a pane may derive on a worker thread while another prints: one node per word
_EMPTY: frozenset = frozenset()
# Slots a repr leaves out: how a leaf is shown and where it comes from, not what the word is.
_NOT_IN_REPR = frozenset({"rows", "cols", "text", "tex", "html", "param", "block", "layer", "path"})


@dataclass(frozen=True)
class Label:
    """One labelled occurrence: the `index`-th occurrence of `atom` in the definition of `definer`.

    `role` says which branch the occurrence is — ("q", h), ("k", h), ("v", h), "res", "mlp", "embed",
    "unembed" or None — and `layer` which layer the definer belongs to; route classes read both.
    """

    atom: str
    definer: str
    index: int
    role: object = None
    layer: int | None = None

    def __str__(self) -> str:
        return f"{self.atom}@{self.definer}#{self.index}"


class Word:
    """Base of every node. Nodes are immutable and interned; never build one with object.__new__."""

    __slots__ = ("__weakref__", "has_d", "free", "_t")

    def children(self) -> tuple[Word, ...]:
        return ()

    def __repr__(self) -> str:
        """The node and its parts, e.g. <Prod 2 <Sym X_1 weight> <T <Sym K_1 weight>>>: the structure only, as
        words sit below the printers that write the note's notation (engine.forms.printing.text)."""
        parts = [type(self).__name__]
        for name in type(self).__slots__:
            if name not in _NOT_IN_REPR:
                value = getattr(self, name)
                parts += map(repr, value) if isinstance(value, tuple) else [
                    repr(value) if isinstance(value, Word) else str(value)]
        return "<" + " ".join(parts) + ">"

    # Python operators for convenience in tests and the sympy bridge; the console has its own language.
    def __add__(self, other: Word) -> Word:
        return add(self, other)

    def __mul__(self, other: Word) -> Word:
        return prod(self, other)

    @property
    def t(self) -> Word:
        return transpose(self)


def _intern(cls, key, fill):
    ref = _TABLE.get(key)
    if ref is not None:
        w = ref()
        if w is not None:
            return w
    with _LOCK:
        ref = _TABLE.get(key)
        w = None if ref is None else ref()
        if w is None:
            w = object.__new__(cls)
            w._t = None
            fill(w)
            # when the node dies its entry goes, unless a new node has taken the key since (atomically); the
            # table and the function are bound now, as WeakValueDictionary binds them, for nodes that die as
            # the interpreter shuts down
            _TABLE[key] = weakref.ref(w, lambda _, key=key, table=_TABLE, drop=_remove_dead_weakref: drop(table, key))
        return w


def _inherit(w: Word, parts) -> None:
    has_d = False
    free = _EMPTY
    for p in parts:
        if p.has_d:
            has_d = True
        if p.free:
            free = free | p.free if free else p.free
    w.has_d = has_d
    w.free = free


class Sym(Word):
    """A leaf: a weight, a named forward value, an input or constant, the error E, a placeholder Ψ, or a
    free-algebra variable. `rows`/`cols` name its dimensions ("n", "d", "1", ...). `text`, `tex` and `html`
    are its display names; `param` and `block` say which slice of which model parameter a weight is
    (a head's columns of W_Q, say: block = (axis, start, stop))."""

    __slots__ = ("name", "kind", "rows", "cols", "text", "tex", "html", "param", "block", "layer")

    def __new__(cls, name: str, kind: str = "var", rows: str = "?", cols: str = "?", text: str | None = None,
                tex: str | None = None, html: str | None = None, param: str | None = None,
                block: tuple | None = None, layer: int | None = None) -> Sym:
        if kind not in SYM_KINDS:
            raise ValueError(f"unknown symbol kind {kind!r}")
        text = name if text is None else text
        tex = text if tex is None else tex
        html = text if html is None else html
        key = (cls, name, kind, rows, cols, text, tex, html, param, block, layer)

        def fill(w):
            w.name, w.kind, w.rows, w.cols = name, kind, rows, cols
            w.text, w.tex, w.html, w.param, w.block, w.layer = text, tex, html, param, block, layer
            w.has_d = False
            w.free = frozenset((w,)) if kind in _SEEDS else _EMPTY

        return _intern(cls, key, fill)

    @property
    def differentiable(self) -> bool:
        return self.kind in _DIFFERENTIABLE


class T(Word):
    """The transpose of a leaf symbol (transposes live on leaves only)."""

    __slots__ = ("sym",)

    def __new__(cls, sym: Sym) -> T:
        def fill(w):
            w.sym = sym
            w.has_d = False
            w.free = sym.free

        return _intern(cls, (cls, sym), fill)

    def children(self):
        return (self.sym,)


class Diff(Word):
    """The differential dX of a leaf (transposed: dX^t). `path` holds the labelled occurrences this
    differential was reached through, output side first; its last element is its own label, if any."""

    __slots__ = ("sym", "transposed", "path")

    def __new__(cls, sym: Sym, transposed: bool = False, path: tuple[Label, ...] = ()) -> Diff:
        def fill(w):
            w.sym, w.transposed, w.path = sym, transposed, path
            w.has_d = True
            w.free = _EMPTY

        return _intern(cls, (cls, sym, transposed, path), fill)

    @property
    def label(self) -> Label | None:
        return self.path[-1] if self.path else None


class Scalar(Word):
    """A symbolic scalar base^power, e.g. n_1^{-1/2}; its value is looked up by `name` at evaluation."""

    __slots__ = ("name", "power", "text", "tex", "html")

    def __new__(cls, name: str, power: Fraction | int = 1, text: str | None = None, tex: str | None = None,
                html: str | None = None) -> Scalar:
        power = Fraction(power)
        text = name if text is None else text
        tex = text if tex is None else tex
        html = text if html is None else html

        def fill(w):
            w.name, w.power, w.text, w.tex, w.html = name, power, text, tex, html
            w.has_d = False
            w.free = _EMPTY

        return _intern(cls, (cls, name, power, text, tex, html), fill)

    def base_key(self):
        return (self.name, self.text, self.tex, self.html)


class Num(Word):
    """An exact rational number."""

    __slots__ = ("value",)

    def __new__(cls, value) -> Num:
        if type(value) is not Fraction:
            value = ONE if type(value) is int and value == 1 else Fraction(value)

        def fill(w):
            w.value = value
            w.has_d = False
            w.free = _EMPTY

        # 1 hashes and compares as Fraction(1) does, without Fraction.__hash__'s modular inverse
        return _intern(cls, (cls, 1 if value is ONE else value), fill)


class Zero(Word):
    """The zero word (an empty sum)."""

    __slots__ = ()

    def __new__(cls) -> Zero:
        def fill(w):
            w.has_d = False
            w.free = _EMPTY

        return _intern(cls, (cls,), fill)


ZERO = Zero()
ONE = Fraction(1)  # the coefficient of a product that has none: prod() uses this one object for every 1
_NUM_ONE = Num(ONE)  # kept, so that every Num(1) is this node, whose value is ONE


class Prod(Word):
    """coef · scalars · factors: a flattened product with a rational coefficient, sorted commuting
    scalars and at least one matrix factor (or several scalars)."""

    __slots__ = ("coef", "scalars", "factors")

    def __new__(cls, coef: Fraction, scalars: tuple[Scalar, ...], factors: tuple[Word, ...]) -> Prod:
        def fill(w):
            w.coef, w.scalars, w.factors = coef, scalars, factors
            _inherit(w, factors)

        return _intern(cls, (cls, 1 if coef is ONE else coef, scalars, factors), fill)

    def children(self):
        return self.scalars + self.factors


class Sum(Word):
    """A flattened sum; the order of its terms is kept (it is the Leibniz order)."""

    __slots__ = ("terms",)

    def __new__(cls, terms: tuple[Word, ...]) -> Sum:
        def fill(w):
            w.terms = terms
            _inherit(w, terms)

        return _intern(cls, (cls, terms), fill)

    def children(self):
        return self.terms


class Op(Word):
    """op_base[arg]: a linear operator of kind mm, gg, ggt, aa, aaC, ln or lnC (docs/forms.md), linear in `arg` and
    depending on the cached forward value `base` (a leaf, never expanded or differentiated)."""

    __slots__ = ("kind", "base", "arg")

    def __new__(cls, kind: str, base: Word, arg: Word) -> Op:
        def fill(w):
            w.kind, w.base, w.arg = kind, base, arg
            _inherit(w, (arg,))

        return _intern(cls, (cls, kind, base, arg), fill)

    def children(self):
        return (self.base, self.arg)


class Op2(Word):
    """op2_{base,other}[arg]: a bilinear operator of the mixed form (OP2_KINDS), linear in `arg`, with the
    cached forward value `base` (a leaf) and the word `other` (no differential) held fixed."""

    __slots__ = ("kind", "base", "other", "arg")

    def __new__(cls, kind: str, base: Word, other: Word, arg: Word) -> Op2:
        if kind not in OP2_KINDS:
            raise ValueError(f"unknown bilinear operator kind {kind!r}")
        if other.has_d:
            raise ValueError("a bilinear operator carries its differential in its argument only")

        def fill(w):
            w.kind, w.base, w.other, w.arg = kind, base, other, arg
            _inherit(w, (other, arg))

        return _intern(cls, (cls, kind, base, other, arg), fill)

    def children(self):
        return (self.base, self.other, self.arg)


class Fn(Word):
    """A forward non-linearity a (row softmax), m (ReLU), gelu, gelut or N (row normalisation); only ever the
    whole definition of a named value, so its differential has a named base."""

    __slots__ = ("kind", "arg")

    def __new__(cls, kind: str, arg: Word) -> Fn:
        def fill(w):
            w.kind, w.arg = kind, arg
            _inherit(w, (arg,))

        return _intern(cls, (cls, kind, arg), fill)

    def children(self):
        return (self.arg,)


class Diag(Word):
    """diag(g): the diagonal matrix of a row vector (a layer norm's gain, or its differential)."""

    __slots__ = ("arg",)

    def __new__(cls, arg: Word) -> Diag:
        def fill(w):
            w.arg = arg
            _inherit(w, (arg,))

        return _intern(cls, (cls, arg), fill)

    def children(self):
        return (self.arg,)


class DiagOf(Word):
    """The column of diagonal entries of a square word: the coefficient G of a gain, from
    trace(P diag(dg)) = Σ_j P_jj dg_j."""

    __slots__ = ("arg",)

    def __new__(cls, arg: Word) -> DiagOf:
        def fill(w):
            w.arg = arg
            _inherit(w, (arg,))

        return _intern(cls, (cls, arg), fill)

    def children(self):
        return (self.arg,)


class Trace(Word):
    __slots__ = ("arg",)

    def __new__(cls, arg: Word) -> Trace:
        def fill(w):
            w.arg = arg
            _inherit(w, (arg,))

        return _intern(cls, (cls, arg), fill)

    def children(self):
        return (self.arg,)


# ---- constructors that keep words canonical ----

def prod(*xs: Word) -> Word:
    """The flattened product; scalars and numbers go in front, a zero factor gives zero."""
    coef = ONE
    scalars: list[Scalar] = []
    factors: list[Word] = []
    for x in xs:
        tx = type(x)
        if tx is Prod:
            if x.coef is not ONE:
                coef *= x.coef
            scalars += x.scalars
            factors += x.factors
        elif tx is Num:
            if x.value is not ONE:
                coef *= x.value
        elif tx is Scalar:
            scalars.append(x)
        elif tx is Zero:
            return ZERO
        else:
            factors.append(x)
    if coef is not ONE:
        if coef == 0:
            return ZERO
        if coef == 1:
            coef = ONE
    if len(scalars) > 1:
        scalars = _merge_scalars(scalars)
    if not scalars and coef is ONE:
        if len(factors) == 1:
            return factors[0]
        if not factors:
            return Num(1)
    if not factors and coef is ONE and len(scalars) == 1:
        return scalars[0]
    if not factors and not scalars:
        return Num(coef)
    return Prod(coef, tuple(scalars), tuple(factors))


def _merge_scalars(scalars: list[Scalar]) -> list[Scalar]:
    powers: dict = {}
    for s in scalars:
        k = s.base_key()
        powers[k] = powers.get(k, 0) + s.power
    return [Scalar(k[0], p, k[1], k[2], k[3]) for k, p in sorted(powers.items()) if p != 0]


def add(*xs: Word) -> Word:
    """The flattened sum, zeros dropped, order kept."""
    terms: list[Word] = []
    for x in xs:
        tx = type(x)
        if tx is Sum:
            terms += x.terms
        elif tx is not Zero:
            terms.append(x)
    if not terms:
        return ZERO
    if len(terms) == 1:
        return terms[0]
    return Sum(tuple(terms))


def neg(x: Word) -> Word:
    return prod(Num(-1), x)


def op(kind: str, base: Word, arg: Word) -> Word:
    if kind not in TRANSPOSED_KIND:
        raise ValueError(f"unknown operator kind {kind!r}")
    if type(base) not in (Sym, T):
        raise ValueError("an operator's base must be a (possibly transposed) symbol")
    if type(arg) is Zero:
        return ZERO
    return Op(kind, base, arg)


def fn(kind: str, arg: Word) -> Word:
    if kind not in FN_DIFFERENTIAL:
        raise ValueError(f"unknown function {kind!r}")
    return Fn(kind, arg)


def diag(arg: Word) -> Word:
    return ZERO if type(arg) is Zero else Diag(arg)


def trace(arg: Word) -> Word:
    return ZERO if type(arg) is Zero else Trace(arg)


def transpose(w: Word) -> Word:
    """w^t with transposes pushed onto the leaves; memoised both ways (an involution)."""
    r = w._t
    if r is not None:
        return r
    tw = type(w)
    if tw is Sym:
        r = T(w) if w.rows != "1" or w.cols != "1" else w
    elif tw is T:
        r = w.sym
    elif tw is Diff:
        r = Diff(w.sym, not w.transposed, w.path)
    elif tw is Prod:
        r = prod(Num(w.coef), *w.scalars, *[transpose(f) for f in reversed(w.factors)])
    elif tw is Sum:
        r = add(*[transpose(x) for x in w.terms])
    elif tw is Op:
        r = Op(TRANSPOSED_KIND[w.kind], transpose(w.base), transpose(w.arg))
    elif tw is Op2:
        r = Op2(TRANSPOSED_KIND2[w.kind], transpose(w.base), transpose(w.other), transpose(w.arg))
    elif tw in (Scalar, Num, Zero, Trace, Diag):
        r = w
    else:
        raise ValueError(f"cannot transpose {type(w).__name__} words")
    w._t = r
    if r._t is None:
        r._t = w
    return r


def leaf_sym(w: Word) -> Sym | None:
    """The symbol under a leaf, a transposed leaf, a differential or diag(differential)."""
    tw = type(w)
    if tw is Sym:
        return w
    if tw in (T, Diff):
        return w.sym
    if tw is Diag:
        return leaf_sym(w.arg)
    return None


def walk(w: Word):
    """Every distinct node of the DAG under w (each once)."""
    seen = set()
    stack = [w]
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        yield x
        stack.extend(x.children())


def count_ops(w: Word) -> int:
    """Operators in the word read as a tree (the shifts its term needed)."""
    memo: dict[int, int] = {}

    def go(x):
        r = memo.get(id(x))
        if r is None:
            r = sum(go(c) for c in x.children()) + (type(x) is Op)
            memo[id(x)] = r
        return r

    return go(w)
