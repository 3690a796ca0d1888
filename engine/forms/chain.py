"""The note's encoder chain (docs/forms.md) and its variants: encoder(n), form, forms(n), forms(n, k).

Layer i (tokens are rows, C the column of ones, n_i^{-1/2} = d_k^{-1/2}):

    Z_i = n_i^{-1/2} X_i Q_i K_i^t X_i^t        S_i = a(Z_i [+ M])      (M: the causal mask, −∞ above)
    U_i = S_i X_i V_i + C b_i                   R_i = m(U_i)
    X_{i+1} = [X_i +] R_i W_i + C f_i

Options: `residual` adds X_i to X_{i+1}; `heads` = H gives each head h its own Q_{i,h}, K_{i,h}, V_{i,h},
Z_{i,h}, S_{i,h} and U_i = Σ_h S_{i,h} X_i V_{i,h} + C b_i (heads summed, docs/forms.md); `layer_norm` puts
Y_i = N(X_i) diag(g_i) + C β_i before the attention (pre-LN: Y_i replaces X_i inside the layer);
`cross_entropy` adds the head Z_o = X_L U_o + C c_o, P_o = a(Z_o) with E = N^{-1}(T − P_o) for the mean
loss over the N = B·n positions; otherwise E = T − F with F = X_L and L = ½‖E‖² summed over the batch.
The form is ω = trace(E^t dF) = −dL.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from ..configs.config import ModelConfig
from .network import Definition, Network, Param, named
from .words import Diag, Scalar, Sym, add, fn, neg, prod, transpose

if TYPE_CHECKING:  # the chain's numbers import torch where they are made: the words load without it
    import torch


@dataclass(frozen=True)
class ChainSpec:
    """What `encoder` builds: depth and variants, and the widths (d in and out of every layer)."""

    depth: int
    residual: bool = False
    heads: int = 1
    layer_norm: bool = False
    cross_entropy: bool = False
    causal: bool = False
    d: int = 8        # width of X_i
    d_k: int = 4      # width of queries and keys
    d_v: int = 8      # width of values (and of U_i, R_i)
    vocab: int = 6    # classes of the cross-entropy head
    ln_eps: float = ModelConfig.ln_eps  # the layer norms' ε: the GPT's default

    def describe(self) -> str:
        opts = [name for name in ("residual", "layer_norm", "cross_entropy", "causal") if getattr(self, name)]
        if self.heads > 1:
            opts.append(f"heads={self.heads}")
        return f"encoder({self.depth}{''.join(', ' + o for o in opts)})"


def encoder(n: int, residual: bool = False, heads: int = 1, layer_norm: bool = False,
            cross_entropy: bool = False, causal: bool = False, d: int = 8, d_k: int = 4, d_v: int = 8,
            vocab: int = 6) -> Network:
    """The note's encoder chain of depth n as a Network."""
    if n < 1:
        raise ValueError("the chain needs at least one layer")
    if heads < 1:
        raise ValueError("at least one head")
    spec = ChainSpec(n, residual, heads, layer_norm, cross_entropy, causal, d, d_k, d_v, vocab)
    return _build(spec)


def _build(spec: ChainSpec) -> Network:
    H = spec.heads
    C = named("C", "const", "n", "1", "C")
    M = named("M", "const", "n", "n", "M")
    X = named("X_0", "input", "n", "d", "X", "0")
    defs: list[Definition] = []
    params: list[Param] = []
    scalars: dict[str, float | str] = {}

    def weight(base, i, rows, cols, sub=None):
        sub = str(i) if sub is None else sub
        return named(f"{base}_{sub}" if "," not in sub else f"{base}_{{{sub}}}", "weight", rows, cols, base, sub,
                     layer=i)

    def add_param(s: Sym, shape):
        params.append(Param(s.name, shape, (s,), s.text, s.tex))

    def atom(base, sub, rows, cols, tex_base=None):
        return named(f"{base}_{sub}" if "," not in sub else f"{base}_{{{sub}}}", "atom", rows, cols, base, sub,
                     tex_base=tex_base)

    def define(a, word, layer, roles=()):
        defs.append(Definition(a, word, layer, tuple(roles)))
        return a

    d, dk, dv = spec.d, spec.d_k, spec.d_v
    for i in range(spec.depth):
        x_in = X
        if spec.layer_norm:
            g = weight("g", i, "1", "d")
            beta = named(f"beta_{i}", "weight", "1", "d", "β", str(i), tex_base=r"\beta", layer=i)
            add_param(g, (1, d))
            add_param(beta, (1, d))
            N = define(atom("N", str(i), "n", "d"), fn("N", X), i, [(X.name, (None,))])
            Y = define(atom("Y", str(i), "n", "d"), add(prod(N, Diag(g)), prod(C, beta)), i)
            x_in = Y
        n_i = Scalar(f"n_{i}", Fraction(-1, 2), f"n_{i}", f"n_{{{i}}}", f"n<sub>{i}</sub>")
        scalars[f"n_{i}"] = "d_k"
        head_terms = []
        v_roles = []
        for h in range(H):
            sub = str(i) if H == 1 else f"{i},{h}"
            Q = weight("Q", i, "d", "d_k", sub)
            K = weight("K", i, "d", "d_k", sub)
            V = weight("V", i, "d", "d_v", sub)
            for s, shape in ((Q, (d, dk)), (K, (d, dk)), (V, (d, dv))):
                add_param(s, shape)
            Z = define(atom("Z", sub, "n", "n"), prod(n_i, x_in, Q, transpose(K), transpose(x_in)), i,
                       [(x_in.name, (("q", h), ("k", h)))])
            S = define(atom("S", sub, "n", "n"), fn("a", add(Z, M) if spec.causal else Z), i)
            head_terms.append(prod(S, x_in, V))
            v_roles.append(("v", h))
        b = weight("b", i, "1", "d_v")
        W = weight("W", i, "d_v", "d")
        f = weight("f", i, "1", "d")
        for s, shape in ((b, (1, dv)), (W, (dv, d)), (f, (1, d))):
            add_param(s, shape)
        U = define(atom("U", str(i), "n", "d_v"), add(*head_terms, prod(C, b)), i,
                   [(x_in.name, tuple(v_roles))])
        R = define(atom("R", str(i), "n", "d_v"), fn("m", U), i)
        nxt = named(f"X_{i + 1}", "atom", "n", "d", "X", str(i + 1))
        body = add(prod(R, W), prod(C, f))
        if spec.residual:
            define(nxt, add(X, body), i, [(X.name, ("res",))])
        else:
            define(nxt, body, i)
        X = nxt
    T = named("T", "input", "n", "v" if spec.cross_entropy else "d", "T")
    E = named("E", "error", "n", "v" if spec.cross_entropy else "d", "E")
    Npos = Scalar("N", -1, "N", "N", "N")
    if spec.cross_entropy:
        L = spec.depth
        Uo = named("U_o", "weight", "d", "v", "U", "o", layer=L)
        co = named("c_o", "weight", "1", "v", "c", "o", layer=L)
        add_param(Uo, (d, spec.vocab))
        add_param(co, (1, spec.vocab))
        Zo = define(atom("Z", "o", "n", "v"), add(prod(X, Uo), prod(C, co)), L)
        Po = define(atom("P", "o", "n", "v"), fn("a", Zo), L)
        defs.append(Definition(E, prod(Npos, add(T, neg(Po))), L, differentiate=False))
        scalars["N"] = "positions"
        output = Zo
    else:
        defs.append(Definition(E, add(T, neg(X)), spec.depth, differentiate=False))
        output = X
    dims = {"n": None, "d": d, "d_k": dk, "d_v": dv, "v": spec.vocab, "1": 1}
    return Network(spec.describe(), defs, output, E, params, dims, scalars, spec)


# ---- numbers for the chain: weights, inputs, targets (dtype None: float64) ----

def random_weights(net: Network, seed: int = 0, dtype: torch.dtype | None = None,
                   scale: float = 0.5) -> dict[str, torch.Tensor]:
    """Weights from a fixed seed: N(0, scale²/fan-in) matrices, N(0, 0.1²) biases, gains near 1."""
    import torch

    dtype = torch.float64 if dtype is None else dtype
    g = torch.Generator().manual_seed(seed)
    out = {}
    for p in net.params:
        w = torch.randn(p.shape, generator=g, dtype=dtype)
        if p.shape[0] == 1:
            w = 0.1 * w + (1.0 if p.name.startswith("g_") else 0.0)
        else:
            w = w * (scale / p.shape[0] ** 0.5) * 2
        out[p.name] = w
    return out


def random_batch(net: Network, batch: int = 2, n: int = 5, seed: int = 1,
                 dtype: torch.dtype | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(X_0, targets): X_0 (B, n, d) normal; targets (B, n, d) normal, or class ids (B, n) for the
    cross-entropy head."""
    import torch

    dtype = torch.float64 if dtype is None else dtype
    spec: ChainSpec = net.spec
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn(batch, n, spec.d, generator=g, dtype=dtype)
    if spec.cross_entropy:
        return x0, torch.randint(spec.vocab, (batch, n), generator=g)
    return x0, torch.randn(batch, n, spec.d, generator=g, dtype=dtype)


def leaves(net: Network, weights: dict[str, torch.Tensor], x0: torch.Tensor, targets: torch.Tensor,
           dtype: torch.dtype | None = None) -> tuple[dict[str, torch.Tensor], dict[str, float]]:
    """Values of every leaf and scalar of the chain for a batch: what evaluate.Bound needs."""
    import torch

    dtype = torch.float64 if dtype is None else dtype
    spec: ChainSpec = net.spec
    B, n, _ = x0.shape
    vals = {p.name: weights[p.name].to(dtype) for p in net.params}
    vals["X_0"] = x0.to(dtype)
    vals["C"] = torch.ones(n, 1, dtype=dtype)
    mask = torch.zeros(n, n, dtype=dtype)
    if spec.causal:
        mask = mask.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    vals["M"] = mask
    if spec.cross_entropy:
        vals["T"] = torch.nn.functional.one_hot(targets, spec.vocab).to(dtype)
    else:
        vals["T"] = targets.to(dtype)
    return vals, net.scalar_values(positions=B * n)


__all__ = ["ChainSpec", "encoder", "random_weights", "random_batch", "leaves"]
