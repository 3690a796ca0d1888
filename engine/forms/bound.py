"""Words evaluated on numbers: one network on one batch (docs/forms.md: its operators, shared sub-words).

`Bound` holds the leaf values (weights, inputs, constants), the scalars, and the forward cache computed
from the definitions' own words. Evaluation is memoised by node (hash-consing): forward-only sub-words, and
forward-only spans inside products, are computed once per batch; a product is multiplied in the cheapest
order (matrix-chain DP, forward spans free); `summed_coefficient` contracts the batch inside a weight's last
multiplication. Route-dependent words are evaluated afresh, with what is already known bound in `memo`.
"""

from __future__ import annotations

import math

import torch

from ..configs.config import ModelConfig
from .network import Network
from .words import Diag, DiagOf, Diff, Fn, Num, Op, Op2, Prod, Scalar, Sum, Sym, T, Trace, Word, Zero, transpose


LN_EPS = ModelConfig.ln_eps  # ε of the plain operators below; a network's own comes from its spec


def _gelu_slope(u: torch.Tensor) -> torch.Tensor:
    """d/du of u Φ(u): Φ(u) + u φ(u)."""
    return 0.5 * (1 + torch.erf(u / math.sqrt(2))) + u * torch.exp(-0.5 * u * u) / math.sqrt(2 * math.pi)


def _gelu_tanh_slope(u: torch.Tensor) -> torch.Tensor:
    """d/du of ½u(1 + t), t = tanh(k(u + c u³)): ½(1 + t) + ½u(1 − t²) k(1 + 3c u²)."""
    k, c = math.sqrt(2 / math.pi), 0.044715
    t = torch.tanh(k * (u + c * u ** 3))
    return 0.5 * (1 + t) + 0.5 * u * (1 - t * t) * k * (1 + 3 * c * u * u)


def _gelu_curvature(u: torch.Tensor) -> torch.Tensor:
    """d²/du² of u Φ(u): 2φ(u) + u φ'(u) = (2 − u²) φ(u)."""
    return (2 - u * u) * torch.exp(-0.5 * u * u) / math.sqrt(2 * math.pi)


def _gelu_tanh_curvature(u: torch.Tensor) -> torch.Tensor:
    """d²/du² of ½u(1 + t), t = tanh(k(u + c u³)): with s = 1 − t² and g = k(1 + 3c u²) (so t' = s g),
    s g − u s t g² + 3 c k u² s."""
    k, c = math.sqrt(2 / math.pi), 0.044715
    t = torch.tanh(k * (u + c * u ** 3))
    s, g = 1 - t * t, k * (1 + 3 * c * u * u)
    return s * g - u * s * t * g * g + 3 * c * k * u * u * s


# The elementwise operators: op_U[A] = slope(U) ⊙ A; their bilinear derivatives by U: op2_{U,A}[D] = curvature(U) ⊙ A ⊙ D
# (ReLU's is zero off the kink, so the mixed form has none for mm).
SLOPES = {"mm": lambda u: (u > 0).to(u.dtype), "gg": _gelu_slope, "ggt": _gelu_tanh_slope}
CURVATURES = {"gg2": _gelu_curvature, "ggt2": _gelu_tanh_curvature}


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
        self.eps = net.spec.ln_eps  # the layer norms' ε (ModelConfig or ChainSpec)
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
        if tw is Op2:
            return apply_bilinear(w.kind, self.value(w.base, memo), self.value(w.other, memo),
                                  self.value(w.arg, memo), self.eps)
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
        # the plan depends only on the factors' shapes and which are forward-only: words of one shape share it
        key = (tuple(_raw_shape(v) for v in vals), tuple(w.free and not f.free for f in fs))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = _plan([_shape(v) for v in vals], list(key[1]))
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
        if w.kind == "gelut":
            return torch.nn.functional.gelu(x, approximate="tanh")
        if w.kind == "N":
            mu = x.mean(-1, keepdim=True)
            var = ((x - mu) ** 2).mean(-1, keepdim=True)
            return (x - mu) / torch.sqrt(var + self.eps)
        raise TypeError(f"unknown function {w.kind}")

    def _base(self, kind: str, base: Word):
        key = (kind, base)
        got = self._derived.get(key)
        if got is None:
            b = self.value(base)
            if kind in SLOPES:
                got = SLOPES[kind](b)
            else:
                got = _normalised(b, self.eps)
            self._derived[key] = got
        return got

    def _op(self, w: Op, memo):
        a = self.value(w.arg, memo)
        k = w.kind
        if k in SLOPES:
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


def apply_operator(kind: str, base: torch.Tensor, a: torch.Tensor, eps: float = LN_EPS) -> torch.Tensor:
    """op_base[a] of docs/forms.md on tensors (Bound caches what depends on the base; this is the plain form)."""
    if kind in SLOPES:
        return SLOPES[kind](base).to(a.dtype) * a
    if kind == "aa":
        return base * (a - (base * a).sum(-1, keepdim=True))
    if kind == "aaC":
        return base * (a - (base * a).sum(-2, keepdim=True))
    if kind == "ln":
        return _ln(_normalised(base, eps), a)
    if kind == "lnC":
        return _ln(_normalised(base.transpose(-1, -2), eps), a.transpose(-1, -2)).transpose(-1, -2)
    raise ValueError(f"unknown operator {kind!r}")


def apply_bilinear(kind: str, base: torch.Tensor, other: torch.Tensor, a: torch.Tensor,
                   eps: float = LN_EPS) -> torch.Tensor:
    """op2_{base,other}[a] of the mixed form (words.OP2_KINDS): with r = rowsum, S the base, A the other,
    aa2_{S,A}[D] = D⊙A − D⊙r(S⊙A) − S⊙r(D⊙A) (the softmax operator aa_S[A] differentiated along dS = D)
    and its adjoint aa2A_{S,A}[Y] = Y⊙A − Y⊙r(S⊙A) − A⊙r(S⊙Y); the C kinds are the same by columns. GELU's
    gg2_{U,A}[D] = gelu''(U)⊙A⊙D (ggt2: the tanh form's) is elementwise, its own adjoint. The normalisation's
    ln2 and ln2A: see `_ln2` (ε: the network's layer norms')."""
    if kind in CURVATURES:
        return CURVATURES[kind](base).to(a.dtype) * other * a
    if kind.startswith("ln2"):
        if kind.endswith("C"):  # by columns: the row kind on the transposes
            return apply_bilinear(kind[:-1], base.transpose(-1, -2), other.transpose(-1, -2),
                                  a.transpose(-1, -2), eps).transpose(-1, -2)
        return _ln2(_normalised(base, eps), other, a, adjoint=kind == "ln2A")
    dim = -2 if kind.endswith("C") else -1
    first = (base * other).sum(dim, keepdim=True)
    if kind.startswith("aa2A"):
        return a * other - a * first - other * (base * a).sum(dim, keepdim=True)
    if kind in ("aa2", "aa2C"):
        return a * other - a * first - base * (a * other).sum(dim, keepdim=True)
    raise ValueError(f"unknown bilinear operator {kind!r}")


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


def _normalised(x: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(Y, r) of the row normalisation: r = 1/√(var(X) + ε) by rows and Y = (X − m(X))·r."""
    mu = x.mean(-1, keepdim=True)
    r = 1 / torch.sqrt(((x - mu) ** 2).mean(-1, keepdim=True) + eps)
    return (x - mu) * r, r


def _ln(yr, a):
    y, r = yr
    return r * (a - a.mean(-1, keepdim=True) - y * (y * a).mean(-1, keepdim=True))


def _ln2(yr, A, a, adjoint: bool):
    """The normalisation's operator ln_X[A] differentiated along dX = D (docs/second-order.md), rowwise, with
    m the row mean, y = (X − m(X))·r and J = ln_X[A]: since dr = −r·m(y⊙D) and dy = ln_X[D],

        ln2_{X,A}[D]  = −r·m(y⊙D)·J − r·m(y⊙A)·ln_X[D] − r·y·m(ln_X[D]⊙A)

    and, ln_X being symmetric, its adjoint ln2A_{X,A}[Y] = −r·m(Y⊙J)·y − r·m(y⊙A)·ln_X[Y] − r·m(Y⊙y)·J."""
    y, r = yr
    J, mA, La = _ln(yr, A), (y * A).mean(-1, keepdim=True), _ln(yr, a)
    if adjoint:
        return -r * ((a * J).mean(-1, keepdim=True) * y + mA * La + (a * y).mean(-1, keepdim=True) * J)
    return -r * ((y * a).mean(-1, keepdim=True) * J + mA * La + y * (La * A).mean(-1, keepdim=True))


__all__ = ["Bound", "DiagValue", "apply_operator", "apply_bilinear"]
