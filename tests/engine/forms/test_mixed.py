"""The mixed form d⟨G_B, V⟩ pulled back to dA (engine/forms/mixed.py, docs/second-order.md) against autograd's mixed
second derivative in float64, on chains of depth 1–3 (with and without layer norm) and six small GPT configs (ReLU,
the seed chain's switches, GELU and its tanh form, pre-LN with GELU, post-LN); the bilinear operators' derivatives
and shift rules on their own; printing; the refusals."""

from __future__ import annotations

import pytest
import torch

from engine.forms import chain, gpt
from engine.forms.bound import apply_bilinear, apply_operator
from engine.forms.derive import Forms, TooManyTerms
from engine.forms.mixed import BASE_DERIVATIVE, FLAT, MixedForm
from engine.forms.words import OP_KINDS
from engine.forms.mixed_verify import TOLERANCE, check_chain, check_gpt
from engine.forms.printing import latex, text
from tests.engine.forms.helpers import small_config

CHAIN_PAIRS = [
    (1, {}, "K_0", "Q_0"), (1, {}, "Q_0", "Q_0"), (1, {"cross_entropy": True}, "V_0", "U_o"),
    (2, {}, "K_1", "Q_0"), (2, {}, "Q_0", "K_1"), (2, {"causal": True}, "W_1", "V_0"),
    (2, {"residual": True}, "K_1", "Q_0"), (2, {"heads": 2, "cross_entropy": True}, "Q_{1,0}", "V_{0,1}"),
    (3, {}, "K_2", "Q_0"), (3, {}, "b_0", "f_2"),
    (3, {"residual": True, "causal": True, "cross_entropy": True}, "K_2", "Q_1"),
    (2, {"layer_norm": True}, "K_1", "Q_0"),  # a layer norm below B's coefficient: its word holds no ln
    (2, {"layer_norm": True}, "K_0", "Q_1"),  # K_0's coefficient passes ln_{X_1}, which Q_1's move leaves
    (2, {"layer_norm": True}, "K_0", "Q_0"),  # ... and Q_0's bends: ln2 terms
    (2, {"layer_norm": True, "residual": True}, "V_0", "V_0"),
]


@pytest.mark.parametrize("depth, options, B, A", CHAIN_PAIRS)
def test_mixed_form_of_the_chain_equals_autograds_mixed_second_derivative(depth, options, B, A):
    form = MixedForm(Forms(chain.encoder(depth, **options)), B, A)
    got = check_chain(form)
    assert got.terms > 0 and got.error <= TOLERANCE, got


def test_the_notes_question_on_the_collapsed_chain_is_judged_by_the_models_scale():
    # the plain chain collapses at depth ≥ 4 (docs/verification.md): K_5's gradient, and its whole Hessian row, is round-off
    got = check_chain(MixedForm(Forms(chain.encoder(6)), "K_5", "Q_3"))
    assert got.degenerate and got.terms == 24 and got.error <= TOLERANCE, got
    assert not check_chain(MixedForm(Forms(chain.encoder(6)), "V_5", "Q_3")).degenerate


GPT_CONFIGS = {
    "relu, two heads, residual, cross-entropy": small_config(norm="none", activation="relu"),
    "the seed chain's switches, learned positions, tied": small_config(
        n_head=1, norm="none", activation="relu", residual=False, loss="squared_error", pos_encoding="learned",
        tied=True),
    "exact GELU, biases on the attention": small_config(norm="none", activation="gelu", attn_bias=True),
    "GELU's tanh form (GPT-2's gelu_new)": small_config(norm="none", activation="gelu_tanh"),
    "pre-LN and GELU (GPT-2's block)": small_config(norm="pre", activation="gelu", n_layer=2),
    "post-LN, ReLU, tied": small_config(norm="post", activation="relu", tied=True),
}


@pytest.mark.parametrize("label", list(GPT_CONFIGS))
@pytest.mark.parametrize("B, A", [("blocks.1.W_K", "blocks.0.W_Q"), ("blocks.1.W_in", "W_E"),
                                  ("b_U", "blocks.1.W_V"), ("blocks.1.W_O", "blocks.1.W_O"),
                                  ("blocks.0.W_out", "blocks.0.W_in")])
def test_mixed_form_of_a_gpt_equals_autograds_mixed_second_derivative(label, B, A):
    form = MixedForm(Forms(gpt.network(GPT_CONFIGS[label])), B, A)
    got = check_gpt(form)
    assert got.terms > 0 and got.error <= TOLERANCE, got
    if "GELU" in label and A == "blocks.0.W_in":  # W_in's move bends the GELU that W_out's coefficient reads
        assert any(k in text(t.G) for t in form.terms for k in ("gg2(", "ggt2(")), label
    if "LN" in label and A == "blocks.0.W_Q":  # Q_0's move bends layer 1's normalisations, which K_1's reads
        assert any("ln2" in text(t.G) for t in form.terms), label


BIAS_CONFIGS = {"two heads, post-LN, GELU": small_config(norm="post", activation="gelu", attn_bias=True),
                "three heads, ReLU": small_config(norm="none", activation="relu", attn_bias=True, n_head=3,
                                                  d_model=12)}


@pytest.mark.parametrize("label, layer", [("two heads, post-LN, GELU", 0), ("two heads, post-LN, GELU", 1),
                                          ("three heads, ReLU", 0)])
@pytest.mark.parametrize("bias", ["b_Q", "b_K", "b_V"])
def test_mixed_form_of_every_per_head_bias_slice_equals_autograds(label, layer, bias):
    # issue 43: the direction V on a head's slice of a bias was cut by the wrong axis (an IndexError). V spans
    # every head's slice of the bias at once; the bias is B by the other block's W_Q and A under it (A's
    # coefficient a head's slice too), and B by the last block's W_O
    forms = Forms(gpt.network(BIAS_CONFIGS[label]))
    B, other = f"blocks.{layer}.{bias}", f"blocks.{1 - layer}.W_Q"
    checks = [check_gpt(MixedForm(forms, b, a)) for b, a in ((B, other), (other, B), (B, "blocks.1.W_O"))]
    assert all(c.terms > 0 and c.error <= TOLERANCE for c in checks), checks
    # b_K's gradient is identically zero (a constant added to a row of scores leaves the softmax as it was), and
    # so is its whole Hessian row: judged by the model's scale, on either side, and said why
    assert all(bool(c.degenerate) == (bias == "b_K") for c in checks), checks


@pytest.mark.parametrize("kind, adjoint", [("aa2", "aa2A"), ("aa2C", "aa2AC")])
def test_bilinear_operator_and_its_adjoint_satisfy_the_shift_identity(kind, adjoint):
    # <Y, op2_{S,A}[D]> = <op2A_{S,A}[Y], D>: the identity rules.pull relies on (docs/second-order.md)
    g = torch.Generator().manual_seed(0)
    S = torch.softmax(torch.randn(5, 5, generator=g, dtype=torch.float64), -1)
    S = S.t() if kind.endswith("C") else S
    A, D, Y = (torch.randn(5, 5, generator=g, dtype=torch.float64) for _ in range(3))
    lhs = (Y * apply_bilinear(kind, S, A, D)).sum()
    rhs = (apply_bilinear(adjoint, S, A, Y) * D).sum()
    assert float(abs(lhs - rhs)) <= 1e-12 * float(abs(lhs))


def test_bilinear_operator_is_the_softmax_operators_derivative_by_its_base():
    g = torch.Generator().manual_seed(1)
    Z, dZ, A = (torch.randn(4, 4, generator=g, dtype=torch.float64) for _ in range(3))
    def aa(S):
        return S * (A - (S * A).sum(-1, keepdim=True))
    eps = 1e-6
    dS = (torch.softmax(Z + eps * dZ, -1) - torch.softmax(Z - eps * dZ, -1)) / (2 * eps)
    fd = (aa(torch.softmax(Z + eps * dZ, -1)) - aa(torch.softmax(Z - eps * dZ, -1))) / (2 * eps)
    # aa_S[A] moves with S; A fixed: the whole change is aa2_{S,A}[dS]
    assert torch.allclose(apply_bilinear("aa2", torch.softmax(Z, -1), A, dS), fd, atol=1e-8)


@pytest.mark.parametrize("kind, approximate", [("gg2", "none"), ("ggt2", "tanh")])
def test_gelus_bilinear_operator_is_its_slope_operators_derivative_by_its_base(kind, approximate):
    g = torch.Generator().manual_seed(2)
    U, dU, A = (3 * torch.randn(6, 5, generator=g, dtype=torch.float64) for _ in range(3))

    def slope(u):  # GELU's derivative by autograd: the slope operator's own base function
        u = u.detach().requires_grad_()
        (y,) = torch.autograd.grad(torch.nn.functional.gelu(u, approximate=approximate).sum(), u)
        return y

    eps = 1e-6
    fd = (slope(U + eps * dU) * A - slope(U - eps * dU) * A) / (2 * eps)
    assert torch.allclose(apply_bilinear(kind, U, A, dU), fd, atol=1e-8)
    Y = torch.randn(6, 5, generator=g, dtype=torch.float64)  # its own adjoint: the shift keeps the kind
    lhs, rhs = (Y * apply_bilinear(kind, U, A, dU)).sum(), (apply_bilinear(kind, U.t(), A.t(), Y.t()).t() * dU).sum()
    assert float(abs(lhs - rhs)) <= 1e-12 * float(abs(lhs))


def test_mixed_terms_print_as_text_and_render_in_mathtext():
    from matplotlib.mathtext import MathTextParser

    form = MixedForm(Forms(chain.encoder(2)), "K_1", "Q_0")
    words = [t.G for t in form.terms]
    assert any("aa2" in text(w) for w in words) and all("V[K_1]" in text(w) for w in words)
    parser = MathTextParser("agg")
    for w in words[:3]:
        parser.parse("$" + latex(w) + "$", dpi=72)


def test_every_operator_of_the_first_order_forms_has_its_derivative_by_its_base():
    assert set(BASE_DERIVATIVE) | set(FLAT) == set(OP_KINDS)


@pytest.mark.parametrize("kind, adjoint", [("ln2", "ln2A"), ("ln2C", "ln2AC")])
def test_layer_norms_bilinear_operator_is_its_operators_derivative_and_has_its_adjoint(kind, adjoint):
    g = torch.Generator().manual_seed(3)
    X, D, A, Y = (torch.randn(5, 7, generator=g, dtype=torch.float64) for _ in range(4))
    eps, h = 1e-5, 1e-6
    ln = kind.replace("2", "")
    fd = (apply_operator(ln, X + h * D, A, eps) - apply_operator(ln, X - h * D, A, eps)) / (2 * h)
    assert torch.allclose(apply_bilinear(kind, X, A, D, eps), fd, atol=1e-8)
    lhs, rhs = (Y * apply_bilinear(kind, X, A, D, eps)).sum(), (apply_bilinear(adjoint, X, A, Y, eps) * D).sum()
    assert float(abs(lhs - rhs)) <= 1e-12 * float(abs(lhs))


def test_what_the_mixed_form_does_not_cover_is_refused_in_one_line():
    with pytest.raises(TooManyTerms, match="more than 5"):
        MixedForm(Forms(chain.encoder(3)), "K_2", "Q_0", limit=5)
