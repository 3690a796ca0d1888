"""sympy cross-checks of the rules (docs/forms.md): sympy differentiates small trace expressions itself — with
its matrix calculus where it can, entry by entry on explicit matrices where operators are involved — and
the engine's coefficients agree."""

import random

import pytest
import sympy as sp
import torch

from engine.forms import chain, evaluate, rules
from engine.forms.derive import Forms
from engine.forms.sympy_bridge import apply_function, apply_operator, explicit, to_sympy
from engine.forms.words import Diff, Sym, T, op, prod, transpose

DIMS = {"n": 3, "d": 2, "k": 2}


def _rand(r, c, seed, rational=True):
    rng = random.Random(seed)
    if rational:
        return sp.Matrix(r, c, lambda i, j: sp.Rational(rng.randint(-9, 9), rng.randint(1, 5)))
    return sp.Matrix(r, c, lambda i, j: sp.Float(rng.uniform(-2, 2), 30))


def _values(syms, seed=0, rational=True):
    return {s.text: _rand(DIMS[s.rows] if s.rows != "1" else 1, DIMS[s.cols] if s.cols != "1" else 1, seed + k,
                          rational) for k, s in enumerate(syms)}


def _coefficients(form, weight: Sym):
    """The coefficient G of `weight` in d(form), summed over its monomials, by the engine's rules."""
    out = None
    for m in rules.flatten(rules.expandmm(rules.d(form))):
        P, leaf, _ = rules.pull(prod(), m.arg)  # trace(1 · body)
        if rules.leaf_diff(leaf).sym is not weight:
            continue
        G = rules.coefficient(P, leaf)
        out = G if out is None else out + G
    return out


E = Sym("E", "input", "n", "d")
X = Sym("X", "input", "n", "d")
Q = Sym("Q", "weight", "d", "k")
K = Sym("K", "weight", "d", "k")
W = Sym("W", "weight", "d", "d")


@pytest.mark.parametrize("word, weight", [
    (prod(T(E), X, Q, T(K), T(X), X), Q),
    (prod(T(E), X, Q, T(K), T(X), X), K),
    (prod(T(E), X, W, W), W),
    (prod(T(E), X, T(W), W, T(X), X), W),
])
def test_leibniz_cycle_and_finish_agree_with_sympys_matrix_derivative(word, weight):
    from sympy import Trace
    G = _coefficients(rules.trace(word), weight)
    ours = to_sympy(transpose(G), DIMS)
    theirs = Trace(to_sympy(word, DIMS)).diff(to_sympy(weight, DIMS))
    vals = _values([E, X, Q, K, W])
    assert sp.simplify(explicit(ours, vals) - explicit(theirs, vals)) == sp.zeros(*explicit(ours, vals).shape)


@pytest.mark.parametrize("kind", ["mm", "aa", "aaC", "gg", "ggt", "ln", "lnC"])
def test_shift_agrees_with_sympy_differentiating_entry_by_entry(kind):
    # trace(P op_B[A W]) differentiated by sympy in every entry of W, against the engine's shift + finish
    n, m = 3, 2
    c = n if kind in ("aa", "aaC") else 2
    rational = kind in ("mm", "aa", "aaC")
    P, B = Sym("P", "input", "c", "n"), Sym("B", "atom", "n", "c")
    A, Wd = Sym("A", "input", "n", "m"), Sym("W", "weight", "m", "c")
    vals = {"P": _rand(c, n, 1, rational), "A": _rand(n, m, 2, rational), "B": _rand(n, c, 3, rational)}
    if kind in ("aa", "aaC"):  # a softmax output (rows, or columns for aaC, of positive weights)
        vals["B"] = vals["B"].applyfunc(lambda v: abs(v) + 1) / 10
    w = sp.Matrix(m, c, lambda i, j: sp.Symbol(f"w{i}{j}"))
    f = (vals["P"] * apply_operator(kind, vals["B"], vals["A"] * w)).trace()
    grad = sp.Matrix(m, c, lambda i, j: sp.diff(f, w[i, j]))
    Pw, leaf, shifts = rules.pull(P, op(kind, B, prod(A, Diff(Wd))))
    assert shifts == 1
    ours = explicit(to_sympy(transpose(rules.coefficient(Pw, leaf))), vals)
    assert max((ours - grad).applyfunc(lambda v: abs(sp.N(v)))) < 1e-20


@pytest.mark.parametrize("fn_kind, op_kind", [("a", "aa"), ("N", "ln"), ("gelu", "gg"), ("gelut", "ggt"),
                                              ("m", "mm")])
def test_the_differential_of_each_function_is_its_operator(fn_kind, op_kind):
    # docs/forms.md: d a(Z) = aa_{a(Z)}[dZ], d N(X) = ln_X[dX], d gelu(U) = gg_U[dU], d m(U) = mm_U[dU]; and
    # GELU's tanh form, d gelut(U) = ggt_U[dU]
    t = sp.Symbol("t")
    Z, A = _rand(2, 3, 5, rational=False), _rand(2, 3, 6, rational=False)
    moved = apply_function(fn_kind, Z + t * A)
    derivative = moved.diff(t).subs(t, 0)
    base = apply_function("a", Z) if fn_kind == "a" else Z
    expected = apply_operator(op_kind, base, A)
    assert max((derivative - expected).applyfunc(lambda v: abs(sp.N(v, 30)))) < 1e-20


def test_a_chain_coefficient_evaluated_by_sympy_equals_the_engines():
    net = chain.encoder(1, d=2, d_k=2, d_v=2)
    f = Forms(net)
    w = chain.random_weights(net, 0)
    x0, target = chain.random_batch(net, batch=1, n=3, seed=1)
    bound = evaluate.Bound(net, *chain.leaves(net, w, x0, target))
    vals = {}
    for s in f.net.weights:
        vals[s.text] = sp.Matrix(w[s.name].tolist())
    for a in ("X_0", "Z_0", "S_0", "U_0", "R_0", "X_1", "E"):
        vals[a] = sp.Matrix(bound.values[a][0].tolist())
    vals["C"] = sp.ones(3, 1)
    vals["n_0"] = 2
    for t in f.terms():
        ours = evaluate.word_coefficient(bound, t)
        G = explicit(to_sympy(t.G), vals)
        theirs = torch.tensor([[float(v) for v in row] for row in G.T.tolist()], dtype=torch.float64)
        assert torch.allclose(ours.reshape(theirs.shape), theirs, rtol=1e-12, atol=1e-14), t.id


def test_to_sympy_keeps_operators_and_their_transposes():
    f = Forms(chain.encoder(2))
    e = to_sympy(f.term("K_0 via X_1@Z_1#1").G)
    assert "aaC(S_1.T" in str(e) and "mm(U_0," in str(e)
    assert "aa(S_0" in str(e.T) or "aaC(S_0.T" in str(e.T)
    assert e.shape == (sp.Symbol("d_k", integer=True, positive=True), sp.Symbol("d", integer=True, positive=True))
    assert r"\mathrm{aaC}_{S_{1}^{T}}" in sp.latex(e)
