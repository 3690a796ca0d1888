"""The rules of docs/rules.md: Leibniz order, expandAll in the free algebra, shift with its transposes, and the
note's staged pipeline giving, node for node, the terms the derivation builds route by route."""

import pytest
import torch

from engine.forms import rules
from engine.forms.chain import encoder
from engine.forms.derive import Forms
from engine.forms.evaluate import apply_operator
from engine.forms.printing import text
from engine.forms.words import TRANSPOSED_KIND, Diff, Sym, T, add, fn, op, prod, trace, transpose

from .helpers import CHAIN_VARIANTS

A, B = Sym("A"), Sym("B")


def test_leibniz_rule_keeps_factor_order():
    w = rules.d(prod(A, transpose(B), A))
    assert rules.flatten(w) == [prod(Diff(A), T(B), A), prod(A, Diff(B, True), A), prod(A, T(B), Diff(A))]


def test_inputs_and_constants_have_no_differential():
    X = Sym("X", "input")
    assert rules.flatten(rules.d(prod(X, A, Sym("C", "const")))) == [prod(X, Diff(A), Sym("C", "const"))]


def test_a_function_needs_a_named_value_to_be_differentiated():
    with pytest.raises(rules.RuleError, match="named value"):
        rules.d(fn("a", prod(A, B)))


def test_expand_all_multiplies_out_the_free_algebra_in_order():
    # the note's example: Y = (A + B) A, Z = Y Y
    Y = prod(add(A, B), A)
    assert [text(w) for w in rules.flatten(rules.expand_all(prod(Y, Y)))] == \
        ["A A A A", "A A B A", "B A A A", "B A B A"]


def test_expand_all_stays_outside_operators_and_expandmm_goes_through():
    S = Sym("S", "atom")
    w = trace(prod(A, op("aa", S, add(Diff(A), Diff(B)))))
    assert len(rules.flatten(rules.expand_all(w))) == 1
    assert rules.flatten(rules.expandmm(w)) == [trace(prod(A, op("aa", S, Diff(A)))),
                                                trace(prod(A, op("aa", S, Diff(B))))]


def test_cycle_moves_the_differential_factor_last():
    P, R = Sym("P"), Sym("R")
    assert rules.cycle(trace(prod(P, Diff(A), R))) is trace(prod(R, P, Diff(A)))


@pytest.mark.parametrize("kind", sorted(TRANSPOSED_KIND))
def test_shift_uses_the_transposed_kind_and_base(kind):
    S, P = Sym("S", "atom"), Sym("P")
    shifted = rules.shift(trace(prod(P, op(kind, S, prod(A, Diff(B))))))
    assert shifted is trace(prod(op(TRANSPOSED_KIND[kind], T(S), P), A, Diff(B)))


def _operator_case(kind, n=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    P, A = torch.randn(n, n, generator=g, dtype=torch.float64), torch.randn(n, n, generator=g, dtype=torch.float64)
    base = torch.randn(n, n, generator=g, dtype=torch.float64)
    if kind == "aa":
        base = torch.softmax(base, -1)
    if kind == "aaC":
        base = torch.softmax(base, -1).t()
    return P, A, base


@pytest.mark.parametrize("kind", sorted(TRANSPOSED_KIND))
def test_shift_is_exact_for_every_operator_kind(kind):
    # trace(P op_B[A]) = trace(op^T_{B^t}[P] A), docs/rules.md#shift
    P, A, base = _operator_case(kind)
    lhs = torch.trace(P @ apply_operator(kind, base, A))
    rhs = torch.trace(apply_operator(TRANSPOSED_KIND[kind], base.t(), P) @ A)
    assert torch.isclose(lhs, rhs, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", ["aa", "aaC", "ln", "lnC"])
def test_shift_without_the_transposes_is_wrong(kind):
    # docs/rules.md#shift: without its transposes a shift is wrong by the coefficient's own size
    P, A, base = _operator_case(kind)
    lhs = torch.trace(P @ apply_operator(kind, base, A))
    naive = torch.trace(apply_operator(kind, base, P) @ A)
    assert abs(float(lhs - naive)) > 1e-3 * max(1.0, abs(float(lhs)))


def test_finish_reads_the_coefficient_with_its_transpose():
    P = Sym("P")
    assert rules.finish(trace(prod(P, Diff(A)))) == (Diff(A), P)
    assert rules.finish(trace(prod(P, Diff(A, True)))) == (Diff(A, True), T(P))


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("variant", sorted(CHAIN_VARIANTS))
def test_the_staged_pipeline_gives_the_terms_of_the_derivation(depth, variant):
    # expandmm(form) -> flatten -> shiftmm -> cycle -> finish, on whole words, equals the route-by-route
    # derivation node for node, in Leibniz order, with the same labelled paths.
    net = encoder(depth, **CHAIN_VARIANTS[variant])
    f = Forms(net)
    staged = rules.flatten(rules.expandmm(net.form, net.substitute))
    terms = f.terms(limit=None)
    assert len(staged) == len(terms)
    for word, term in zip(staged, terms):
        assert word is f.term_word(term)
        leaf, G = rules.finish(rules.cycle(rules.shiftmm(word)))
        assert G is term.G
        assert leaf.sym is term.symbol
        assert tuple(reversed(leaf.path)) == term.path


def test_stages_of_one_term_end_with_its_coefficient():
    f = Forms(encoder(2))
    t = f.term("K_0 via X_1@Z_1#1")
    stages = f.stages(t)
    names = [s for s, _ in stages]
    assert names[:3] == ["form", "expandAll", "expandmm"] and names[-1] == "finish"
    assert names.count("shift mm") + names.count("shift aa") + names.count("shift aaC") == t.op_count
    assert stages[-1][1] is t.G
    assert text(stages[1][1]) == "trace(E^t mm(U_1, dU_1) W_1)"


def test_the_whole_form_steps_through_the_notes_pipeline():
    f = Forms(encoder(2, residual=True))
    stages = dict(f.form_stages())
    assert list(stages) == ["form", "expandAll", "expandmm", "shiftmm", "cycle"]
    # dR_1 W_1, R_1 dW_1, C df_1, and through the residual dX_1 the same three of layer 0
    assert [text(t) for t in rules.flatten(stages["expandAll"])][3:] == \
        ["trace(E^t mm(U_1, dU_1) W_1)", "trace(E^t R_1 dW_1)", "trace(E^t C df_1)"]
    finished = [rules.finish(t)[1] for t in rules.flatten(stages["cycle"])]
    assert finished == [t.G for t in f.terms()]
    with pytest.raises(Exception, match="more than"):
        Forms(encoder(6, residual=True)).form_stages()


@pytest.mark.parametrize("kind, fn", [("gg", lambda u: torch.nn.functional.gelu(u)),
                                      ("ggt", lambda u: torch.nn.functional.gelu(u, approximate="tanh"))])
def test_a_gelu_operator_multiplies_by_the_slope_torch_differentiates(kind, fn):
    u = torch.linspace(-6, 6, 97, dtype=torch.float64).reshape(1, -1).requires_grad_(True)
    a = torch.randn(1, 97, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    (grad,) = torch.autograd.grad(fn(u), u, a)
    assert torch.allclose(apply_operator(kind, u.detach(), a), grad, rtol=1e-13, atol=1e-15)
