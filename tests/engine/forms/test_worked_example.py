"""The worked example of docs/rules.md: the three dK_0 terms of the depth-2 chain (query, key and value side of
layer 1), written here directly in torch from the formulas, match the engine's terms numerically — and
the engine's words are those formulas."""

import math

import torch

from engine.forms import chain, evaluate
from engine.forms.derive import Forms
from engine.forms.printing import text


def mm(U, A):
    return (U > 0).double() * A


def aa(S, A):
    return S * (A - (S * A).sum(1, keepdim=True))


def aaC(B, A):
    return B * (A - (B * A).sum(0, keepdim=True))


def test_the_three_dk0_terms_match_the_worked_example():
    net = chain.encoder(2, d=6, d_k=3, d_v=5)
    w = chain.random_weights(net, seed=3)
    x0, target = chain.random_batch(net, batch=1, n=7, seed=4)
    bound = evaluate.Bound(net, *chain.leaves(net, w, x0, target))
    got = evaluate.terms(bound, Forms(net), "K_0")

    # the forward pass of docs/forms.md#the-encoder-chain, written out
    X0, T = x0[0], target[0]
    n0 = n1 = 1 / math.sqrt(3)
    Q0, K0, V0, b0, W0, f0 = (w[k] for k in ("Q_0", "K_0", "V_0", "b_0", "W_0", "f_0"))
    Q1, K1, V1, b1, W1, f1 = (w[k] for k in ("Q_1", "K_1", "V_1", "b_1", "W_1", "f_1"))
    S0 = torch.softmax(n0 * X0 @ Q0 @ K0.t() @ X0.t(), 1)
    U0 = S0 @ X0 @ V0 + b0
    X1 = torch.relu(U0) @ W0 + f0
    S1 = torch.softmax(n1 * X1 @ Q1 @ K1.t() @ X1.t(), 1)
    U1 = S1 @ X1 @ V1 + b1
    E = T - (torch.relu(U1) @ W1 + f1)

    q = n0 * Q0.t() @ X0.t() @ aa(S0, mm(U0, n1 * aa(S1, mm(U1, E @ W1.t()) @ V1.t() @ X1.t()) @ X1 @ K1 @ Q1.t()
                                         @ W0.t()) @ V0.t() @ X0.t()) @ X0
    k = n0 * Q0.t() @ X0.t() @ aa(S0, mm(U0, n1 * aaC(S1.t(), X1 @ V1 @ mm(U1.t(), W1 @ E.t())) @ X1 @ Q1 @ K1.t()
                                         @ W0.t()) @ V0.t() @ X0.t()) @ X0
    v = n0 * Q0.t() @ X0.t() @ aa(S0, mm(U0, S1.t() @ mm(U1, E @ W1.t()) @ V1.t() @ W0.t()) @ V0.t() @ X0.t()) @ X0

    # the engine reports G^t (−∂L/∂K_0 in K_0's shape)
    assert torch.allclose(got["K_0 via X_1@Z_1#0"], q.t(), rtol=1e-12, atol=1e-15)
    assert torch.allclose(got["K_0 via X_1@Z_1#1"], k.t(), rtol=1e-12, atol=1e-15)
    assert torch.allclose(got["K_0 via X_1@U_1#0"], v.t(), rtol=1e-12, atol=1e-15)
    assert not torch.allclose(q, k) and not torch.allclose(k, v)


def test_the_dk0_words_are_the_formulas_of_the_worked_example():
    f = Forms(chain.encoder(2))
    words = {t.id: text(t.G) for t in f.terms("K_0")}
    assert words["K_0 via X_1@Z_1#0"] == (
        "n_0^{-1/2} Q_0^t X_0^t aa(S_0, mm(U_0, n_1^{-1/2} aa(S_1, mm(U_1, E W_1^t) V_1^t X_1^t) X_1 K_1 Q_1^t "
        "W_0^t) V_0^t X_0^t) X_0")
    assert words["K_0 via X_1@Z_1#1"] == (
        "n_0^{-1/2} Q_0^t X_0^t aa(S_0, mm(U_0, n_1^{-1/2} aaC(S_1^t, X_1 V_1 mm(U_1^t, W_1 E^t)) X_1 Q_1 K_1^t "
        "W_0^t) V_0^t X_0^t) X_0")
    assert words["K_0 via X_1@U_1#0"] == (
        "n_0^{-1/2} Q_0^t X_0^t aa(S_0, mm(U_0, S_1^t mm(U_1, E W_1^t) V_1^t W_0^t) V_0^t X_0^t) X_0")
