"""Words (docs/forms.md): interned nodes, transposes on leaves, flattened products, operator transposes."""

from fractions import Fraction

import pytest

from engine.forms.words import (ZERO, Diag, Diff, Num, Op, Prod, Scalar, Sum, Sym, T, add, op, prod, trace,
                                transpose)

A, B, C = Sym("A", "var", "n", "n"), Sym("B", "var", "n", "n"), Sym("C", "var", "n", "n")
S = Sym("S", "atom", "n", "n")


def test_building_the_same_word_twice_gives_the_same_node():
    assert prod(A, B, C) is prod(prod(A, B), C) is prod(A, prod(B, C))
    assert add(A, B) is add(A, B)
    assert op("aa", S, prod(A, B)) is op("aa", S, prod(A, B))


def test_products_flatten_and_put_scalars_in_front_merging_powers():
    n = Scalar("n_1", Fraction(-1, 2))
    w = prod(A, n, B, n, Num(3))
    assert type(w) is Prod and w.factors == (A, B)
    assert w.coef == 3 and w.scalars == (Scalar("n_1", -1),)


def test_zero_absorbs_products_and_vanishes_from_sums():
    assert prod(A, ZERO, B) is ZERO
    assert add(ZERO, A, ZERO) is A
    assert op("mm", S, ZERO) is ZERO


def test_transpose_reverses_products_and_lives_on_leaves():
    w = prod(A, transpose(B), C)
    t = transpose(w)
    assert t.factors == (T(C), B, T(A))
    assert transpose(t) is w


@pytest.mark.parametrize("kind, transposed", [("mm", "mm"), ("gg", "gg"), ("aa", "aaC"), ("aaC", "aa"),
                                              ("ln", "lnC"), ("lnC", "ln")])
def test_operator_transpose_swaps_the_kind_and_transposes_base_and_argument(kind, transposed):
    # docs/forms.md#operators: op_B[A]^t = op^T_{B^t}[A^t]
    w = op(kind, S, prod(A, B))
    t = transpose(w)
    assert type(t) is Op and t.kind == transposed and t.base is T(S) and t.arg is prod(T(B), T(A))
    assert transpose(t) is w


def test_differentials_and_traces():
    dA = Diff(A)
    assert transpose(dA) is Diff(A, True)
    assert prod(A, dA).has_d and not prod(A, B).has_d
    assert transpose(trace(prod(A, B))) is trace(prod(A, B))
    assert transpose(Diag(Sym("g", "weight", "1", "n"))) is Diag(Sym("g", "weight", "1", "n"))


def test_sums_keep_their_order():
    assert type(add(A, B)) is Sum and add(A, B).terms == (A, B) and add(B, A).terms == (B, A)
