"""A GPT's forward pass and its coefficients G = −∂L/∂W by route class, written out in NumPy.

This module imports nothing but `math` and `numpy`: the files `gpt-explorer export --what code` writes carry
its source verbatim (docs/readings.md), so a reader can run and change them with NumPy alone. In the app it
gives the token readout its per-position imprints (engine/analysis/tokens.py). Its numbers are held equal to
engine.model.gpt.GPT's loss, to autograd's gradients and to the forms engine's route classes in float64 by
tests/engine/ascode/test_numpy_gpt.py.

The model is engine.model.gpt's (rows are tokens, weights act on the right: X W), described by `cfg`, a
dict of ModelConfig's fields, and `W`, a dict of float64 arrays named by the state dict (W_E, W_P,
blocks.i.W_Q, …, W_U, b_U). W["W_P"] is the positional matrix the model adds, whatever made it (learned, or
the sinusoidal buffer); absent, no position is added.

The backward pass carries *descent adjoints* δ = −∂L/∂(value), one per route class (docs/route-classes.md):
going back from the output every adjoint starts in class "direct"; where a route enters block i's query,
key or value side or its MLP (going back), its class becomes L<i>.q, L<i>.k, L<i>.v or L<i>.mlp, and a tied
embedding's use as the unembedding starts class "unembed". Adjoints of one class are added; classes are kept
apart, so they add up to G exactly. With classes=False every class is one ("G"): the ordinary backward pass.

For each weight asked for, `backward` returns its *uses*: where the weight is applied, its input rows X and
the class adjoints δ of its output, position by position, so that G = Σ over positions (`Use.G`):

    matrix     Y = X W:          G = Σ_t X_tᵀ δ_t       (X: (N, rows), δ: (N, cols))
    matrix_t   Y = X Wᵀ:         G = Σ_t δ_tᵀ X_t       (a tied embedding read out as the unembedding)
    bias       Y = … + b:        G = Σ_t δ_t
    gain       Y = X ⊙ g + …:    G = Σ_t X_t ⊙ δ_t      (a layer norm's gain; X its normalised input)
    rows       Y_t = W[X_t]:     G[X_t] += δ_t          (the embedding and learned positions; X ids)
"""

import math

import numpy as np

DIRECT, UNEMBED = "direct", "unembed"
_ERF = np.frompyfunc(math.erf, 1, 1)


def erf(u):
    """The error function of every entry, by math.erf (exact; a caller with a vectorised one may replace this)."""
    return _ERF(u).astype(u.dtype)

_GELU_K, _GELU_C = math.sqrt(2.0 / math.pi), 0.044715


class Use:
    """One application of a weight: `kind` (module docstring), input rows `X` (ids for rows, None for a
    bias) and class -> adjoint of the output, (N, cols), N = B·T positions."""

    def __init__(self, kind, X, deltas):
        self.kind, self.X, self.deltas = kind, X, deltas

    def G(self, delta, shape):
        """This use's part of G for one adjoint, in the weight's shape."""
        if self.kind == "matrix":
            return self.X.T @ delta
        if self.kind == "matrix_t":
            return delta.T @ self.X
        if self.kind == "bias":
            return delta.sum(0)
        if self.kind == "gain":
            return (self.X * delta).sum(0)
        out = np.zeros(shape)
        np.add.at(out, self.X, delta)
        return out


def use_G(uses, shape):
    """class -> G in the weight's shape: the uses' parts added."""
    out = {}
    for u in uses:
        for c, delta in u.deltas.items():
            g = u.G(delta, shape)
            out[c] = out[c] + g if c in out else g
    return out


# ---- the forward pass ----

def layer_norm(x, g, b, eps):
    """(normalised x, 1/σ, output): F.layer_norm over the last axis, with the biased variance."""
    mu = x.mean(-1, keepdims=True)
    r = 1.0 / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps)
    n = (x - mu) * r
    return n, r, n * g + b


def activation(name, u):
    """(act(u), act'(u)): ReLU, exact GELU (erf) or GELU's tanh form."""
    if name == "relu":
        return np.maximum(u, 0.0), (u > 0).astype(u.dtype)
    if name == "gelu":
        cdf = 0.5 * (1.0 + erf(u / math.sqrt(2.0)))
        return u * cdf, cdf + u * np.exp(-0.5 * u * u) / math.sqrt(2.0 * math.pi)
    t = np.tanh(_GELU_K * (u + _GELU_C * u ** 3))
    return 0.5 * u * (1.0 + t), 0.5 * (1.0 + t) + 0.5 * u * (1.0 - t * t) * _GELU_K * (1.0 + 3 * _GELU_C * u * u)


def allowed(kind, n, band):
    """(n, n) bool: a query (row) may attend to a key (column)."""
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    if kind == "causal":
        return j <= i
    if kind == "banded":
        return (j <= i) & (j >= i - band)
    return np.ones((n, n), dtype=bool)


def softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _split(a, h):
    """(B, T, d) -> (B, h, T, d_k): head h owns columns h·d_k … (h+1)·d_k − 1."""
    B, T, d = a.shape
    return a.reshape(B, T, h, d // h).transpose(0, 2, 1, 3)


def _join(a):
    """(B, h, T, d_k) -> (B, T, d)."""
    B, h, T, dk = a.shape
    return a.transpose(0, 2, 1, 3).reshape(B, T, h * dk)


def _bias(W, name):
    return W[name] if name in W else 0.0


def attention(cfg, W, p, a):
    """Block p's attention on its input a (B, T, d): (output, the values its backward pass reads)."""
    h = cfg["n_head"]
    q, k, v = (_split(a @ W[p + "W_" + s] + _bias(W, p + "b_" + s), h) for s in "QKV")  # (B, h, T, d_k)
    T = a.shape[1]
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(q.shape[-1])  # (B, h, T, T)
    S = softmax(np.where(allowed(cfg["mask"], T, cfg["band"]), scores, -np.inf))
    y = _join(S @ v)  # (B, T, d)
    return y @ W[p + "W_O"] + _bias(W, p + "b_O"), dict(a=a, q=q, k=k, v=v, S=S, y=y)


def mlp(cfg, W, p, a):
    """Block p's MLP on its input a (B, T, d): (output, the values its backward pass reads)."""
    r, slope = activation(cfg["activation"], a @ W[p + "W_in"] + W[p + "b_in"])  # (B, T, d_ff)
    return r @ W[p + "W_out"] + W[p + "b_out"], dict(a=a, r=r, slope=slope)


def forward(cfg, W, x, y):
    """(probe loss, the values the backward pass reads) for token ids x (B, T) and next-token targets y."""
    B, T = x.shape
    norm, eps, res = cfg["norm"], cfg["ln_eps"], cfg["residual"]
    X = W["W_E"][x] + (W["W_P"][:T] if "W_P" in W else 0.0)  # (B, T, d)
    blocks = []
    for i in range(cfg["n_layer"]):
        p, c = f"blocks.{i}.", {}
        if norm == "pre":
            *c["ln1"], A = layer_norm(X, W[p + "ln1.g"], W[p + "ln1.b"], eps)
            out, c["att"] = attention(cfg, W, p, A)
            H = X + out if res else out
            *c["ln2"], Bn = layer_norm(H, W[p + "ln2.g"], W[p + "ln2.b"], eps)
            out, c["mlp"] = mlp(cfg, W, p, Bn)
            X = H + out if res else out
        else:
            out, c["att"] = attention(cfg, W, p, X)
            H = X + out if res else out
            if norm == "post":
                *c["ln1"], H = layer_norm(H, W[p + "ln1.g"], W[p + "ln1.b"], eps)
            out, c["mlp"] = mlp(cfg, W, p, H)
            X = H + out if res else out
            if norm == "post":
                *c["ln2"], X = layer_norm(X, W[p + "ln2.g"], W[p + "ln2.b"], eps)
        blocks.append(c)
    cache = dict(x=x, blocks=blocks)
    if norm == "pre":  # a pre-LN stack ends with a layer norm
        *cache["ln_f"], X = layer_norm(X, W["ln_f.g"], W["ln_f.b"], eps)
    cache["F"] = X
    Z = X @ (W["W_E"].T if cfg["tied"] else W["W_U"]) + W["b_U"]  # (B, T, V) logits
    N = B * T
    if cfg["loss"] == "cross_entropy":
        dZ = -softmax(Z)
        loss = -np.log(-np.take_along_axis(dZ, y[..., None], -1)).sum() / N
    else:
        dZ = -Z
        loss = 0.5 * (Z * Z).sum() - np.take_along_axis(Z, y[..., None], -1).sum() + 0.5 * N  # ½‖onehot − Z‖²
        loss = loss / N
    np.put_along_axis(dZ, y[..., None], np.take_along_axis(dZ, y[..., None], -1) + 1.0, -1)  # onehot − P (or − Z)
    cache["dZ"] = dZ / N
    return float(loss), cache


def loss(cfg, W, x, y):
    """The probe loss alone (what finite differences differentiate)."""
    return forward(cfg, W, x, y)[0]


def torch_loss(cfg, W, x, y):
    """The same loss written in torch, so autograd can differentiate it where torch is installed (the only
    function here that needs torch; it imports it when called). W: {name: float64 tensor}."""
    import torch
    import torch.nn.functional as F

    def ln(a, name):
        return F.layer_norm(a, a.shape[-1:], W[name + ".g"], W[name + ".b"], cfg["ln_eps"])

    def attention(p, a):
        h = cfg["n_head"]
        B, T, d = a.shape
        q, k, v = ((a @ W[p + "W_" + s] + W.get(p + "b_" + s, 0.0)).reshape(B, T, h, d // h).transpose(1, 2)
                   for s in "QKV")
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // h)
        ok = torch.from_numpy(allowed(cfg["mask"], T, cfg["band"]))
        y = torch.softmax(scores.masked_fill(~ok, float("-inf")), -1) @ v
        return y.transpose(1, 2).reshape(B, T, d) @ W[p + "W_O"] + W.get(p + "b_O", 0.0)

    def mlp(p, a):
        u = a @ W[p + "W_in"] + W[p + "b_in"]
        r = torch.relu(u) if cfg["activation"] == "relu" else F.gelu(
            u, approximate="tanh" if cfg["activation"] == "gelu_tanh" else "none")
        return r @ W[p + "W_out"] + W[p + "b_out"]

    x, y = torch.as_tensor(x), torch.as_tensor(y)
    X = W["W_E"][x] + (W["W_P"][: x.shape[1]] if "W_P" in W else 0.0)
    res = (lambda a, b: a + b) if cfg["residual"] else (lambda a, b: b)
    for i in range(cfg["n_layer"]):
        p = f"blocks.{i}."
        if cfg["norm"] == "pre":
            X = res(X, attention(p, ln(X, p + "ln1")))
            X = res(X, mlp(p, ln(X, p + "ln2")))
        elif cfg["norm"] == "post":
            X = ln(res(X, attention(p, X)), p + "ln1")
            X = ln(res(X, mlp(p, X)), p + "ln2")
        else:
            X = res(X, attention(p, X))
            X = res(X, mlp(p, X))
    if cfg["norm"] == "pre":
        X = ln(X, "ln_f")
    Z = X @ (W["W_E"].T if cfg["tied"] else W["W_U"]) + W["b_U"]
    if cfg["loss"] == "cross_entropy":
        return F.cross_entropy(Z.reshape(-1, Z.shape[-1]), y.reshape(-1))
    return 0.5 * ((F.one_hot(y, Z.shape[-1]).to(Z.dtype) - Z) ** 2).sum() / y.numel()


# ---- the backward pass, by route class ----

class _Uses:
    """The uses recorded for the weights asked for (`want`: a set of names, or None for every weight)."""

    def __init__(self, names, want, classes):
        self.names, self.want, self.uses = names, want, {}
        self.key = (lambda c: c) if classes else (lambda c: "G")

    def wants(self, *names):
        return any(n in self.names and (self.want is None or n in self.want) for n in names)

    def add(self, name, kind, X, deltas):
        if self.wants(name):
            flat = {c: d.reshape(-1, d.shape[-1]) for c, d in deltas.items()}
            X = None if X is None else X.reshape(-1) if kind == "rows" else X.reshape(-1, X.shape[-1])
            self.uses.setdefault(name, []).append(Use(kind, X, flat))


def _put(D, c, d):
    D[c] = D[c] + d if c in D else d


def _merged(D):
    """The classes' adjoints added into one (inside a part that holds no weight asked for)."""
    it = iter(D.values())
    out = next(it)
    for d in it:
        out = out + d
    return {"merged": out}


def _norm_back(W, name, cache, D, rec):
    """Through the layer norm `name` (cache: normalised input, 1/σ) to its input, class by class."""
    n, r = cache
    rec.add(name + ".g", "gain", n, D)
    rec.add(name + ".b", "bias", None, D)
    g, out = W[name + ".g"], {}
    for c, d in D.items():
        dy = d * g
        out[c] = r * (dy - dy.mean(-1, keepdims=True) - n * (dy * n).mean(-1, keepdims=True))
    return out


def _mlp_back(cfg, W, i, c, D, rec):
    """Block i's MLP: records its weights' uses; returns the adjoint at its input in class L<i>.mlp."""
    p, m = f"blocks.{i}.", c["mlp"]
    norm_inside = cfg["norm"] == "pre"  # the second layer norm sits between the stream and the MLP
    names = [p + n for n in ("W_out", "b_out", "W_in", "b_in")] + ([p + "ln2.g", p + "ln2.b"] if norm_inside else [])
    D = D if rec.wants(*names) or not cfg["residual"] else _merged(D)
    rec.add(p + "W_out", "matrix", m["r"], D)
    rec.add(p + "b_out", "bias", None, D)
    dU = {k: (d @ W[p + "W_out"].T) * m["slope"] for k, d in D.items()}
    rec.add(p + "W_in", "matrix", m["a"], dU)
    rec.add(p + "b_in", "bias", None, dU)
    da = {k: d @ W[p + "W_in"].T for k, d in dU.items()}
    if norm_inside:
        da = _norm_back(W, p + "ln2", c["ln2"], da, rec)
    if not cfg["residual"]:  # the MLP's input is used once: no branch, the classes go on through it
        return da
    return {rec.key(f"L{i}.mlp"): next(iter(_merged(da).values()))}


def _attention_back(cfg, W, i, c, D, rec):
    """Block i's attention: records its weights' uses; returns the adjoints at its input in classes
    L<i>.q, L<i>.k, L<i>.v (through the first layer norm of a pre-LN block)."""
    p, a, h = f"blocks.{i}.", c["att"], cfg["n_head"]
    names = [p + n for n in ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O")]
    D = D if rec.wants(*names) else _merged(D)
    rec.add(p + "W_O", "matrix", a["y"], D)
    rec.add(p + "b_O", "bias", None, D)
    scale = 1.0 / math.sqrt(a["q"].shape[-1])
    sides = {"Q": {}, "K": {}, "V": {}}
    for k, d in D.items():
        dy = _split(d @ W[p + "W_O"].T, h)                          # (B, h, T, d_k)
        dS = dy @ a["v"].transpose(0, 1, 3, 2)                      # (B, h, T, T)
        dZ = a["S"] * (dS - (dS * a["S"]).sum(-1, keepdims=True)) * scale
        sides["Q"][k] = _join(dZ @ a["k"])
        sides["K"][k] = _join(dZ.transpose(0, 1, 3, 2) @ a["q"])
        sides["V"][k] = _join(a["S"].transpose(0, 1, 3, 2) @ dy)
    out = {}
    for s, Ds in sides.items():
        rec.add(p + "W_" + s, "matrix", a["a"], Ds)
        rec.add(p + "b_" + s, "bias", None, Ds)
        da = next(iter(_merged({k: d @ W[p + "W_" + s].T for k, d in Ds.items()}).values()))
        _put(out, rec.key(f"L{i}.{s.lower()}"), da)
    if cfg["norm"] == "pre":
        out = _norm_back(W, p + "ln1", c["ln1"], out, rec)
    return out


def _block_back(cfg, W, i, c, D, rec):
    """Block i, output to input: the stream's adjoints by class (module docstring)."""
    res, post = cfg["residual"], cfg["norm"] == "post"
    p = f"blocks.{i}."
    if post:
        D = _norm_back(W, p + "ln2", c["ln2"], D, rec)
    H = dict(D) if res else {}
    for k, d in _mlp_back(cfg, W, i, c, D, rec).items():
        _put(H, k, d)
    if post:
        H = _norm_back(W, p + "ln1", c["ln1"], H, rec)
    X = dict(H) if res else {}
    for k, d in _attention_back(cfg, W, i, c, H, rec).items():
        _put(X, k, d)
    return X


def backward(cfg, W, cache, want=None, classes=True):
    """weight name -> its uses (module docstring), for the weights in `want` (None: every weight), the
    adjoints split by route class (classes=False: one class, "G"). Stops below the lowest weight asked for."""
    rec = _Uses(set(W) - ({"W_P"} if cfg["pos_encoding"] != "learned" else set()),
                None if want is None else set(want), classes)
    F, dZ = cache["F"], cache["dZ"]
    D = {rec.key(DIRECT): dZ}
    rec.add("b_U", "bias", None, D)
    if cfg["tied"]:
        rec.add("W_E", "matrix_t", F, {rec.key(UNEMBED): dZ})
        D = {k: d @ W["W_E"] for k, d in D.items()}
    else:
        rec.add("W_U", "matrix", F, D)
        D = {k: d @ W["W_U"].T for k, d in D.items()}
    if "ln_f" in cache:
        D = _norm_back(W, "ln_f", cache["ln_f"], D, rec)
    lowest = _lowest_block(cfg, rec.want)
    for i in reversed(range(max(lowest, 0), cfg["n_layer"])):
        D = _block_back(cfg, W, i, cache["blocks"][i], D, rec)
    if lowest < 0:
        x = cache["x"]
        rec.add("W_E", "rows", x, D)
        rec.add("W_P", "rows", np.broadcast_to(np.arange(x.shape[1]), x.shape), D)
    return rec.uses


def _lowest_block(cfg, want):
    """The lowest block the backward pass must reach for `want`; −1 for the embedding."""
    if want is None or "W_E" in want or "W_P" in want:
        return -1
    found = [int(n.split(".")[1]) for n in want if n.startswith("blocks.")]
    return min(found) if found else cfg["n_layer"]


def coefficients(cfg, W, x, y, want=None, classes=True):
    """weight name -> class -> G = −∂L/∂W on the batch (x, y), for the weights in `want` (None: all)."""
    _, cache = forward(cfg, W, x, y)
    return {name: use_G(uses, W[name].shape) for name, uses in backward(cfg, W, cache, want, classes).items()}
