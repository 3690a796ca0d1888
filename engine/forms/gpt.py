"""The GPT of any ModelConfig as a network of definitions, read from the config with engine/model/gpt.py's
conventions (its docstring gives the mathematics; tests run this network's forward pass against the torch
model, so the two cannot drift apart).

Rows are tokens. With O = onehot(x) (T×V), J = [I 0] (T×n_ctx) selecting the first T positions, C the
column of ones, M the additive mask, d_k^{-1/2} the attention scale and N = B·T the positions of the batch:

    X_0 = O W_E [+ J W_P]                                   (W_P learned: a weight; sinusoidal: a constant)
    pre-LN block i:   N1_i = N(X_i);   A_i = N1_i diag(g1_i) + C b1_i
                      Z_{i,h} = d_k^{-1/2} A_i WQ_{i,h} WK_{i,h}^t A_i^t;   S_{i,h} = a(Z_{i,h} + M)
                      H_i = [X_i +] Σ_h S_{i,h} A_i WV_{i,h} WO_{i,h}
                      with attention biases (attn_bias), heads read named values: Q_{i,h} = A_i WQ_{i,h} +
                      C bQ_{i,h}, K_{i,h} and V_{i,h} alike; Z_{i,h} = d_k^{-1/2} Q_{i,h} K_{i,h}^t,
                      H_i = [X_i +] Σ_h S_{i,h} V_{i,h} WO_{i,h} + C bO_i (a term is then a path, its
                      forward sums kept whole)
                      N2_i = N(H_i);   B_i = N2_i diag(g2_i) + C b2_i
                      U_i = B_i Win_i + C bin_i;   R_i = m(U_i), gelu(U_i) or gelut(U_i) (GELU's tanh form)
                      X_{i+1} = [H_i +] R_i Wout_i + C bout_i
    post-LN block i:  Ha_i = [X_i +] Σ_h S_{i,h} X_i WV WO;  N1_i = N(Ha_i);  H_i = N1_i diag(g1_i) + C b1_i
                      U_i, R_i as above from H_i;  Hm_i = [H_i +] R_i Wout_i + C bout_i
                      N2_i = N(Hm_i);  X_{i+1} = N2_i diag(g2_i) + C b2_i
    no LN:            attention and MLP read X_i and H_i directly
    final (pre-LN):   Nf = N(X_L);  F = Nf diag(gf) + C bf;  otherwise F = X_L
    logits            Z = F W_U + C b_U   (tied: Z = F W_E^t + C b_U)
    error             E = N^{-1}(T − P) with P = a(Z) (cross-entropy), or E = N^{-1}(T − Z) (squared error)

A head's blocks WQ_{i,h}, WK_{i,h}, WV_{i,h} (columns h·d_k … of W_Q, ...) and WO_{i,h} (rows of W_O) are
separate symbols; the symbol names are the state-dict keys, with ``.h<h>`` for a head's block when there
are several heads.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING

from ..configs.config import ConfigError, ModelConfig
from ..model.weight_layout import weight_shapes
from .derive import Forms
from .network import Definition, Network, Param, named
from .words import Diag, Scalar, Sym, add, fn, neg, prod, transpose

if TYPE_CHECKING:  # the numbers (leaves, bind) import torch where they are made: the network and its
    import torch   # derivation load without it, as the symbolic process needs (docs/design.md)

    from .evaluate import Bound


# ModelConfig.activation -> the forms' function (words.FN_KINDS)
_ACTIVATION = {"relu": "m", "gelu": "gelu", "gelu_tanh": "gelut"}


class _Builder:
    def __init__(self, cfg: ModelConfig):
        self.cfg = cfg
        self.defs: list[Definition] = []
        self.syms: dict[str, tuple[Sym, ...]] = {}
        self.display: dict[str, tuple[str, str]] = {}
        self.C = named("C", "const", "n", "1", "C")
        self.M = named("M", "const", "n", "n", "M")
        self.scale = Scalar("d_k", Fraction(-1, 2), "d_k", "d_{k}", "d<sub>k</sub>")

    def weight(self, param: str, rows: str, cols: str, base: str, sub: str = "", sup: str = "",
               tex_base: str | None = None, layer: int | None = None) -> Sym:
        s = named(param, "weight", rows, cols, base, sub, sup, tex_base, param=param, layer=layer)
        self.syms[param] = (s,)
        self.display[param] = (s.text, s.tex)
        return s

    def heads(self, param: str, i: int, which: str, rows: str, cols: str, axis: int, base: str = "W") -> list[Sym]:
        """One symbol per head: its columns (axis 1) or rows (axis 0) of the parameter; a bias (base b,
        one row) is cut by columns as its weight is."""
        H, dk = self.cfg.n_head, self.cfg.d_head
        out = []
        for h in range(H):
            name = param if H == 1 else f"{param}.h{h}"
            sub = str(i) if H == 1 else f"{i},{h}"
            out.append(named(name, "weight", rows, cols, base, sub, which, param=param,
                             block=None if H == 1 else (axis, h * dk, (h + 1) * dk), layer=i))
        self.syms[param] = tuple(out)
        whole = named(param, "weight", "1" if base == "b" else "d", "d", base, str(i), which)
        self.display[param] = (whole.text, whole.tex)
        return out

    def atom(self, name: str, rows: str, cols: str, base: str, sub: str = "", sup: str = "") -> Sym:
        return named(name, "atom", rows, cols, base, sub, sup)

    def define(self, a: Sym, word, layer, roles=()) -> Sym:
        self.defs.append(Definition(a, word, layer, tuple(roles)))
        return a

    def layer_norm(self, x: Sym, i, which: str, out: Sym, param: str, layer, roles=()) -> Sym:
        """N = N(x); out = N diag(g) + C b, with g, b the parameters `param`.g/.b."""
        sub = "" if i is None else str(i)
        g = self.weight(f"{param}.g", "1", "d", "g", sub, which, layer=layer)
        b = self.weight(f"{param}.b", "1", "d", "b", sub, which, tex_base=r"\beta", layer=layer)
        nrm = self.define(self.atom(f"N{which}" + (f"_{i}" if i is not None else ""), "n", "d", "N", sub, which),
                          fn("N", x), layer, roles)
        return self.define(out, add(prod(nrm, Diag(g)), prod(self.C, b)), layer)

    def attention(self, x: Sym, i: int) -> tuple[list, list]:
        """The heads' summands S_{i,h} x WV_{i,h} WO_{i,h} (and C bO_i) and the roles of x in them."""
        cfg = self.cfg
        p = f"blocks.{i}."
        WQ = self.heads(p + "W_Q", i, "Q", "d", "d_k", 1)
        WK = self.heads(p + "W_K", i, "K", "d", "d_k", 1)
        WV = self.heads(p + "W_V", i, "V", "d", "d_k", 1)
        WO = self.heads(p + "W_O", i, "O", "d_k", "d", 0)
        bQ = bK = bV = [None] * cfg.n_head
        if cfg.attn_bias:  # in the layout's order: b_Q, b_K, b_V, b_O
            bQ, bK, bV = (self.heads(p + "b_" + s, i, s, "1", "d_k", 1, "b") for s in "QKV")
        terms, roles = [], []
        for h in range(cfg.n_head):
            sub = str(i) if cfg.n_head == 1 else f"{i},{h}"
            q, k, v = (self.head_input(x, W[h], b[h], s, sub, i, (s.lower(), h))
                       for W, b, s in ((WQ, bQ, "Q"), (WK, bK, "K"), (WV, bV, "V")))
            zname = f"Z_{sub}" if cfg.n_head == 1 else f"Z_{{{sub}}}"
            Z = self.define(self.atom(zname, "n", "n", "Z", sub), prod(self.scale, q, transpose(k)), i,
                            [] if cfg.attn_bias else [(x.name, (("q", h), ("k", h)))])
            S = self.define(self.atom("S" + zname[1:], "n", "n", "S", sub),
                            fn("a", Z if cfg.mask == "none" else add(Z, self.M)), i)
            terms.append(prod(S, v, WO[h]))
            roles.append(("v", h))
        if cfg.attn_bias:
            terms.append(prod(self.C, self.weight(p + "b_O", "1", "d", "b", str(i), "O", layer=i)))
        return terms, roles

    def head_input(self, x: Sym, W: Sym, b: Sym | None, which: str, sub: str, i: int, role):
        """A head's queries, keys or values: x W inside its use; with a bias, the named value
        Q_{i,h} = x W + C b, whose one occurrence of x has the role (q, k or v) of the branch."""
        if b is None:
            return prod(x, W)
        name = f"{which}_{sub}" if "," not in sub else f"{which}_{{{sub}}}"
        return self.define(self.atom(name, "n", "d_k", which, sub), add(prod(x, W), prod(self.C, b)), i,
                           [(x.name, (role,))])

    def mlp(self, x: Sym, i: int) -> object:
        p = f"blocks.{i}."
        Win = self.weight(p + "W_in", "d", "f", "W", str(i), "in", layer=i)
        bin_ = self.weight(p + "b_in", "1", "f", "b", str(i), "in", layer=i)
        Wout = self.weight(p + "W_out", "f", "d", "W", str(i), "out", layer=i)
        bout = self.weight(p + "b_out", "1", "d", "b", str(i), "out", layer=i)
        U = self.define(self.atom(f"U_{i}", "n", "f", "U", str(i)), add(prod(x, Win), prod(self.C, bin_)), i,
                        [(x.name, ("mlp",))])
        R = self.define(self.atom(f"R_{i}", "n", "f", "R", str(i)), fn(_ACTIVATION[self.cfg.activation], U), i)
        return add(prod(R, Wout), prod(self.C, bout))

    def residual(self, x: Sym, body, rest_roles):
        if self.cfg.residual:
            return add(x, body), [(x.name, ("res",) + tuple(rest_roles))]
        return body, [(x.name, tuple(rest_roles))] if rest_roles else []

    def block(self, X: Sym, i: int) -> Sym:
        cfg = self.cfg
        nxt = self.atom(f"X_{i + 1}", "n", "d", "X", str(i + 1))
        H = self.atom(f"H_{i}", "n", "d", "H", str(i))
        if cfg.norm == "pre":
            A = self.layer_norm(X, i, "1", self.atom(f"A_{i}", "n", "d", "A", str(i)), f"blocks.{i}.ln1", i,
                                [(X.name, (None,))])
            terms, vroles = self.attention(A, i)
            word, roles = self.residual(X, add(*terms), ())
            self.define(H, word, i, roles + [(A.name, tuple(vroles))])
            Bn = self.layer_norm(H, i, "2", self.atom(f"B_{i}", "n", "d", "B", str(i)), f"blocks.{i}.ln2", i,
                                 [(H.name, ("mlp",))])
            word, roles = self.residual(H, self.mlp(Bn, i), ())
            return self.define(nxt, word, i, roles)
        terms, vroles = self.attention(X, i)
        if cfg.norm == "post":
            Ha = self.atom(f"Ha_{i}", "n", "d", "H", str(i), "a")
            word, roles = self.residual(X, add(*terms), vroles)
            self.define(Ha, word, i, roles)
            self.layer_norm(Ha, i, "1", H, f"blocks.{i}.ln1", i)
            Hm = self.atom(f"Hm_{i}", "n", "d", "H", str(i), "m")
            word, roles = self.residual(H, self.mlp(H, i), ())
            self.define(Hm, word, i, roles)
            return self.layer_norm(Hm, i, "2", nxt, f"blocks.{i}.ln2", i)
        word, roles = self.residual(X, add(*terms), vroles)
        self.define(H, word, i, roles)
        word, roles = self.residual(H, self.mlp(H, i), ())
        return self.define(nxt, word, i, roles)

    def build(self) -> Network:
        cfg = self.cfg
        L = cfg.n_layer
        O = named("O", "input", "n", "V", "O")
        W_E = self.weight("W_E", "V", "d", "W", "E")
        x0 = prod(O, W_E)
        if cfg.pos_encoding != "none":
            J = named("J", "const", "n", "c", "J")
            if cfg.pos_encoding == "learned":
                W_P = self.weight("W_P", "c", "d", "W", "P")
            else:
                W_P = named("W_P", "const", "c", "d", "W", "P")
            x0 = add(x0, prod(J, W_P))
        X = self.define(self.atom("X_0", "n", "d", "X", "0"), x0, 0,
                        [("W_E", ("embed",))] if cfg.tied else [])
        for i in range(L):
            X = self.block(X, i)
        F = X
        if cfg.has_final_norm:
            F = self.layer_norm(X, None, "f", self.atom("F", "n", "d", "F"), "ln_f", L)
        b_U = self.weight("b_U", "1", "V", "b", "U", layer=L)
        if cfg.tied:
            Z = self.define(self.atom("Z", "n", "V", "Z"), add(prod(F, transpose(W_E)), prod(self.C, b_U)), L,
                            [("W_E", ("unembed",))])
        else:
            W_U = self.weight("W_U", "d", "V", "W", "U", layer=L)
            Z = self.define(self.atom("Z", "n", "V", "Z"), add(prod(F, W_U), prod(self.C, b_U)), L)
        T = named("T", "input", "n", "V", "T")
        E = named("E", "error", "n", "V", "E")
        Npos = Scalar("N", -1, "N", "N", "N")
        if cfg.loss == "cross_entropy":
            P = self.define(self.atom("P", "n", "V", "P"), fn("a", Z), L)
            self.defs.append(Definition(E, prod(Npos, add(T, neg(P))), L, differentiate=False))
        else:
            self.defs.append(Definition(E, prod(Npos, add(T, neg(Z))), L, differentiate=False))
        params = []
        for name, shape in weight_shapes(cfg).items():
            syms = self.syms[name]
            params.append(Param(name, shape, syms, *self.display[name]))
        dims = {"n": None, "d": cfg.d_model, "d_k": cfg.d_head, "f": cfg.d_ff, "V": cfg.vocab_size,
                "c": cfg.n_ctx, "1": 1}
        title = f"GPT ({cfg.n_layer} layers, {cfg.n_head} heads, {cfg.norm}-LN, {cfg.loss})"
        return Network(title, self.defs, Z, E, params, dims, {"d_k": "d_k", "N": "positions"}, cfg)


def network(cfg: ModelConfig) -> Network:
    """The GPT of `cfg` as a network of definitions (refuses a config that cannot be built)."""
    problems = cfg.validate()
    if problems:
        raise ConfigError("; ".join(map(str, problems)))
    return _Builder(cfg).build()


@functools.lru_cache(maxsize=8)
def derive(cfg: ModelConfig) -> Forms:
    """The derivation for a config, cached: it runs once per architecture."""
    return Forms(network(cfg))


def leaves(net: Network, weights: Mapping[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor,
           dtype: torch.dtype | None = None, detach: bool = True) -> tuple[dict[str, torch.Tensor], dict[str, float]]:
    """Values of every leaf for a batch of token ids x and targets y, both (B, T), in `dtype` (None:
    float64); weights by state-dict key (a model's state_dict() or a snapshot). `detach=False` keeps the
    weights' autograd (or forward-mode) history, so what is computed from the leaves can be differentiated by
    the weights (mixed_classes.py)."""
    import torch

    from ..model import masks, positional
    from .evaluate import block_of

    dtype = torch.float64 if dtype is None else dtype
    cfg: ModelConfig = net.spec
    B, T = x.shape
    if T > cfg.n_ctx:
        raise ValueError(f"sequence of {T} tokens exceeds the context length {cfg.n_ctx}")
    vals: dict[str, torch.Tensor] = {}
    for p in net.params:
        if p.name not in weights:
            raise KeyError(f"no weight {p.name!r} given")
        w = (weights[p.name].detach() if detach else weights[p.name]).to(dtype)
        for s in p.symbols:
            v = w if s.block is None else block_of(w, s.block)
            vals[s.name] = v.reshape(1, -1) if w.dim() == 1 else v
    V = cfg.vocab_size
    vals["O"] = torch.nn.functional.one_hot(x.long(), V).to(dtype)
    vals["T"] = torch.nn.functional.one_hot(y.long(), V).to(dtype)
    vals["C"] = torch.ones(T, 1, dtype=dtype)
    vals["M"] = masks.additive(cfg.mask, T, cfg.band, dtype=dtype)
    vals["J"] = torch.eye(T, cfg.n_ctx, dtype=dtype)
    if cfg.pos_encoding == "sinusoidal":
        # the model's buffer is built in float32 and cast, so take the same numbers
        vals["W_P"] = positional.sinusoidal(cfg.n_ctx, cfg.d_model).to(dtype)
    return vals, net.scalar_values(B * T)


def bind(net: Network, weights: Mapping[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor,
         dtype: torch.dtype | None = None) -> Bound:
    """The network's numbers on a probe batch (`dtype` None: float64): the forward cache every evaluation
    reads."""
    import torch

    from .evaluate import Bound

    with torch.no_grad():
        return Bound(net, *leaves(net, weights, x, y, dtype))


__all__ = ["network", "derive", "leaves", "bind"]
