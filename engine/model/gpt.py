"""The GPT built from a ModelConfig, with weights named as the mathematics names them.

Rows are tokens (X is T×d) and weights act on the right, as in the note and docs/forms.md: X W_Q, never W x.
Parameter names (the state-dict keys, used by the forms engine and the GUI as weight names):

    W_E (V, d)                token embedding           W_P (n_ctx, d)  learned positions only
    blocks.i.W_Q/W_K/W_V (d, d)  heads side by side: head h owns columns h·d_k … (h+1)·d_k − 1
    blocks.i.W_O (d, d)       attention output
    blocks.i.b_Q/b_K/b_V/b_O (d)  attention biases, only with attn_bias (GPT-2); head h owns b_Q's columns as W_Q's
    blocks.i.W_in (d, d_ff), blocks.i.b_in (d_ff), blocks.i.W_out (d_ff, d), blocks.i.b_out (d)
    blocks.i.ln1.g/.b, blocks.i.ln2.g/.b       layer norms (ε = ln_eps), absent when norm = none
    ln_f.g/.b                 final layer norm (pre-LN only)
    W_U (d, V), b_U (V)       unembedding; when tied, W_U is W_E^t and only b_U is a parameter

Block, pre-LN:  X ← X + Attn(LN1(X));  X ← X + MLP(LN2(X))
Block, post-LN: X ← LN1(X + Attn(X));  X ← LN2(X + MLP(X))       (without residual: drop the "X +")
Attn(X) = concat_h(softmax(Q_h K_h^t / √d_k + M) V_h) W_O [+ b_O]  with  Q_h = X W_Q,h [+ b_Q,h], K_h, V_h alike
MLP(X) = act(X W_in + b_in) W_out + b_out,  act = ReLU, GELU (erf) or GELU's tanh form (GPT-2's gelu_new)
Loss, cross-entropy: mean over the B·T positions. Squared error (the note's Euler form):
½‖onehot(y) − logits‖² summed over the vocabulary and averaged over the B·T positions.

`forward(..., trace=[])` takes the explicit attention path and appends each layer's scores before and after
the mask and its attention weights (a `LayerTrace`) to the trace: a list, or anything with `append`, such as the
head scores' reduction that keeps one layer at a time; without a trace, training uses the fused
`scaled_dot_product_attention` (tests show both agree, gradients included). Either way Q, K and V come from one
product x [W_Q W_K W_V] and every bias is added inside its product (`affine`); the weights stay three.

Sampling (`generate`) reads the last position's logits only and keeps each layer's keys and values of the tokens
already seen (`KVCache`), so a new token costs one position's forward instead of the whole context's. The cache
holds while no token's keys change: the tokens fit the context (past it the window slides, and with it every
absolute position) and the mask lets no token see a later one (with mask none each token attends to the newest,
so every earlier key and value after the first layer changes); otherwise each token recomputes its window, as
the cache-free path always did. At temperature 0 both give the same tokens (tests/engine/model/test_sampling.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from . import masks, positional
from ..configs.config import ModelConfig
from .sampling import NonFiniteLogits, sampling_probabilities
from .weight_layout import ATTENTION_BIASES, weight_names, weight_shapes  # noqa: F401  (re-exported: the layout's home)


@dataclass
class LayerTrace:
    """What one block's attention did, for probes: each (B, H, T, T)."""

    scores: torch.Tensor   # Q K^t / √d_k, before the mask
    masked: torch.Tensor   # after adding the mask (−inf where masked)
    weights: torch.Tensor  # softmax of the masked scores (0 where masked)


class KVCache:
    """Every layer's keys and values (B, h, n_ctx, dk) of the first `length` positions of the sequences being
    sampled, allocated once for the whole context."""

    def __init__(self, cfg: ModelConfig, batch: int, dtype: torch.dtype, device: torch.device):
        shape = (cfg.n_layer, batch, cfg.n_head, cfg.n_ctx, cfg.d_head)
        self.k = torch.empty(shape, dtype=dtype, device=device)
        self.v = torch.empty(shape, dtype=dtype, device=device)
        self.length = 0  # positions held; the next token's position

    @property
    def full(self) -> bool:
        return self.length == self.k.shape[3]


class LayerNorm(nn.Module):
    def __init__(self, d: int, eps: float):
        super().__init__()
        self.eps = eps
        self.g = nn.Parameter(torch.ones(d))
        self.b = nn.Parameter(torch.zeros(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (x.shape[-1],), self.g, self.b, self.eps)


def affine(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    """x W (+ b) for x (..., d_in) and W (d_in, d_out): one matrix product of the rows, the bias added inside it
    (addmm) rather than in a pass of its own, and W's gradient made in W's own layout."""
    rows = x.reshape(-1, x.shape[-1])  # (N, d_in)
    y = rows @ w if b is None else torch.addmm(b, rows, w)  # (N, d_out)
    return y.view(*x.shape[:-1], w.shape[1])


def fused_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, p_drop: float,
                    causal: bool) -> torch.Tensor:
    """softmax(q kᵀ / √d_k + M) v by torch's fused kernel, (B, h, T, d_k) each. Under the CPU's bfloat16 autocast
    it runs in float32: the CPU's bfloat16 kernel's backward took ~13x as long as float32's on nanogpt-cpu's
    shapes (one thread), which made a bf16 step slower than a float32 one; with this the step is ~1.5x as
    fast (benchmarks/cpu_bf16.py), and the products around it stay bfloat16."""
    if q.device.type == "cpu" and torch.is_autocast_enabled("cpu"):
        with torch.autocast("cpu", enabled=False):
            return F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=mask,
                                                  dropout_p=p_drop, is_causal=causal)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p_drop, is_causal=causal)


def activation(name: str, u: torch.Tensor) -> torch.Tensor:
    """The MLP's non-linearity of `ModelConfig.activation`."""
    if name == "relu":
        return F.relu(u)
    return F.gelu(u, approximate="tanh" if name == "gelu_tanh" else "none")


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d, f = cfg.d_model, cfg.d_ff
        self.cfg = cfg
        self.W_Q = nn.Parameter(torch.empty(d, d))
        self.W_K = nn.Parameter(torch.empty(d, d))
        self.W_V = nn.Parameter(torch.empty(d, d))
        self.W_O = nn.Parameter(torch.empty(d, d))
        if cfg.attn_bias:
            for name in ATTENTION_BIASES:
                setattr(self, name, nn.Parameter(torch.zeros(d)))
        self.W_in = nn.Parameter(torch.empty(d, f))
        self.b_in = nn.Parameter(torch.zeros(f))
        self.W_out = nn.Parameter(torch.empty(f, d))
        self.b_out = nn.Parameter(torch.zeros(d))
        if cfg.norm != "none":
            self.ln1 = LayerNorm(d, cfg.ln_eps)
            self.ln2 = LayerNorm(d, cfg.ln_eps)
        self.drop = nn.Dropout(cfg.dropout)
        self.z_edit = None  # f(z) -> z on the heads' outputs z (B, h, T, d_k), for analyses that ablate heads

    def attention(self, x: torch.Tensor, mask_add: torch.Tensor, mask_ok: torch.Tensor,
                  trace: list[LayerTrace] | None, cache: tuple[KVCache, int, torch.Tensor | None] | None = None,
                  sides: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
        """The attention's output (B, T, d) for its input x (B, T, d); with `sides`, the queries, keys and values
        each read an input of their own instead (x unused; engine/coefficients/class_split.py splits the
        branch's routes by side)."""
        cfg = self.cfg
        B, T, d = (x if sides is None else sides[0]).shape
        h, dk = cfg.n_head, cfg.d_head
        if sides is not None:
            q, k, v = (affine(xs, getattr(self, "W_" + s), getattr(self, "b_" + s) if cfg.attn_bias else None)
                       .view(B, T, h, dk).transpose(1, 2) for xs, s in zip(sides, "QKV"))  # each (B, h, T, dk)
        elif cache is None:
            # Q, K and V in one product, x [W_Q W_K W_V] (each column block is x W_Q, x W_K, x W_V): one product
            # of width 3d instead of three of width d, as nanoGPT's c_attn does
            w = torch.cat([self.W_Q, self.W_K, self.W_V], dim=1)  # (d, 3d)
            b = torch.cat([self.b_Q, self.b_K, self.b_V]) if cfg.attn_bias else None
            q, k, v = affine(x, w, b).view(B, T, 3, h, dk).permute(2, 0, 3, 1, 4)  # each (B, h, T, dk)
        else:  # a token at a time, copying the three weights together cost more than their products (GPT-2
            # small: 7 MB a layer, 40% of a sampled token's time)
            q, k, v = (affine(x, getattr(self, "W_" + s), getattr(self, "b_" + s) if cfg.attn_bias else None)
                       .view(B, T, h, dk).transpose(1, 2) for s in "QKV")  # each (B, h, T, dk)
        p_drop = cfg.dropout if self.training else 0.0
        if cache is not None:  # the new positions start … end − 1 read the keys and values held before them
            kv, layer, rows = cache  # rows: the mask's rows start … end − 1, None where they allow every key
            start, end = kv.length, kv.length + T
            kv.k[layer, :, :, start:end], kv.v[layer, :, :, start:end] = k, v
            k, v = kv.k[layer, :, :, :end], kv.v[layer, :, :, :end]  # (B, h, end, dk)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=rows, dropout_p=p_drop)
        elif trace is None:
            causal = cfg.mask == "causal"  # told as a flag, the fused kernel skips the future's blocks
            mask = None if causal or cfg.mask == "none" else mask_ok[:T, :T]
            y = fused_attention(q, k, v, mask, p_drop, causal)
        else:
            scores = (q @ k.transpose(-2, -1)).div_(math.sqrt(dk))  # (B, h, T, T)
            masked = scores + mask_add[:T, :T]
            weights = torch.softmax(masked, dim=-1)
            trace.append(LayerTrace(scores, masked, weights))
            y = F.dropout(weights, p_drop, self.training) @ v  # (B, h, T, dk)
        if self.z_edit is not None:
            y = self.z_edit(y)
        y = y.transpose(1, 2).reshape(B, T, d)
        return self.drop(affine(y, self.W_O, self.b_O if cfg.attn_bias else None))

    def mlp(self, x: torch.Tensor) -> torch.Tensor:
        u = affine(x, self.W_in, self.b_in)  # (B, T, d_ff)
        return self.drop(affine(activation(self.cfg.activation, u), self.W_out, self.b_out))

    def forward(self, x, mask_add, mask_ok, trace=None, cache=None):
        cfg = self.cfg
        res = (lambda x0, y: x0 + y) if cfg.residual else (lambda x0, y: y)
        if cfg.norm == "pre":
            x = res(x, self.attention(self.ln1(x), mask_add, mask_ok, trace, cache))
            return res(x, self.mlp(self.ln2(x)))
        if cfg.norm == "post":
            x = self.ln1(res(x, self.attention(x, mask_add, mask_ok, trace, cache)))
            return self.ln2(res(x, self.mlp(x)))
        x = res(x, self.attention(x, mask_add, mask_ok, trace, cache))
        return res(x, self.mlp(x))


class GPT(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        problems = cfg.validate()
        if problems:
            raise ValueError("; ".join(map(str, problems)))
        self.cfg = cfg
        d, V, n = cfg.d_model, cfg.vocab_size, cfg.n_ctx
        self.W_E = nn.Parameter(torch.empty(V, d))
        if cfg.pos_encoding == "learned":
            self.W_P = nn.Parameter(torch.empty(n, d))
        else:
            with torch.device("cpu"):  # see the masks below
                fixed = positional.sinusoidal(n, d) if cfg.pos_encoding == "sinusoidal" else torch.zeros(n, d)
            self.register_buffer("W_P", fixed, persistent=False)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        if cfg.has_final_norm:
            self.ln_f = LayerNorm(d, cfg.ln_eps)
        if not cfg.tied:
            self.W_U = nn.Parameter(torch.empty(d, V))
        self.b_U = nn.Parameter(torch.zeros(V))
        # the fixed buffers are computed on the CPU even where the weights are built on the meta device to learn
        # their shapes (rundir/integrity.py): on meta, comparisons and normal_ run Python decompositions that
        # import torch's compiler stack and sympy, ~120 MB in a process that needs neither
        with torch.device("cpu"):
            self.register_buffer("mask_add", masks.additive(cfg.mask, n, cfg.band), persistent=False)
            self.register_buffer("mask_ok", masks.allowed(cfg.mask, n, cfg.band), persistent=False)
        self.reset_parameters()

    @classmethod
    def from_weights(cls, cfg: ModelConfig, weights: Mapping[str, torch.Tensor]) -> GPT:
        """The GPT of `cfg` holding `weights` themselves, in eval mode: built on the meta device (nothing
        allocated or drawn) and the tensors assigned, not copied, so a memory-mapped file stays one (GPT-2
        small's random initialisation and copy took ~2 s). Names and shapes are checked as load_state_dict does."""
        with torch.device("meta"):
            model = cls(cfg)
        model.load_state_dict(weights, assign=True)
        return model.eval()

    def reset_parameters(self) -> None:
        """GPT-2 initialisation: N(0, 0.02), output projections scaled by 1/√(2·n_layer). A model built on the
        meta device has no values to draw (and drawing them there imports what the comment on the masks says)."""
        std = 0.02
        for name, p in self.named_parameters():
            if p.dim() < 2 or p.is_meta:
                continue
            scale = 1 / math.sqrt(2 * self.cfg.n_layer) if name.endswith(("W_O", "W_out")) else 1.0
            nn.init.normal_(p, 0.0, std * scale)

    def unembedding(self) -> torch.Tensor:
        """W_U (d, V), the token embedding's transpose when tied."""
        return self.W_E.t() if self.cfg.tied else self.W_U

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None,
                trace: list[LayerTrace] | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """idx (B, T) → logits (B, T, V) and the loss when targets are given."""
        logits = self.readout(self.residual(idx, trace))  # (B, T, V)
        loss = None if targets is None else self.loss(logits, targets)
        return logits, loss

    def residual(self, idx: torch.Tensor, trace: list[LayerTrace] | None = None,
                 cache: KVCache | None = None) -> torch.Tensor:
        """idx (B, T) → the residual stream after the last block (B, T, d), before the final layer norm. With a
        `cache`, idx continues the sequences it holds (positions cache.length …), whose keys and values it reads
        and to which it adds idx's own."""
        B, T = idx.shape
        start = 0 if cache is None else cache.length
        if start + T > self.cfg.n_ctx:
            raise ValueError(f"sequence of {start + T} tokens exceeds the context length {self.cfg.n_ctx}")
        # F.embedding, not W_E[idx]: indexing's backward (index_put_ with accumulate) adds rows in an order
        # that changes from run to run on several CPU threads; embedding's backward sums each row in index
        # order, so training is bit-reproducible (and measured 1.4-4x faster here)
        x = self.drop(F.embedding(idx, self.W_E) + self.W_P[start:start + T])  # (B, T, d)
        rows = None
        if cache is not None:
            rows = self.mask_ok[start:start + T, :start + T]
            rows = None if bool(rows.all()) else rows
        for layer, block in enumerate(self.blocks):
            x = block(x, self.mask_add, self.mask_ok, trace, None if cache is None else (cache, layer, rows))
        if cache is not None:
            cache.length += T
        return x

    def readout(self, x: torch.Tensor) -> torch.Tensor:
        """The residual stream after the last block (..., d) → logits (..., V): the final layer norm and W_U."""
        if self.cfg.has_final_norm:
            x = self.ln_f(x)
        return affine(x, self.unembedding(), self.b_U)

    def loss(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        if self.cfg.loss == "cross_entropy":
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        onehot = F.one_hot(targets, logits.shape[-1]).to(logits.dtype)
        return 0.5 * (onehot - logits).pow(2).sum() / targets.numel()

    def attention_trace(self, idx: torch.Tensor) -> list[LayerTrace]:
        """Explicit-path attention of every layer for a batch (no gradients, eval mode kept by caller); the
        blocks only, no logits (GPT-2 small's readout was a fifth of a 256-token prompt's attention)."""
        trace: list[LayerTrace] = []
        with torch.no_grad():
            self.residual(idx, trace=trace)
        return trace

    def last_logits(self, idx: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """idx (B, T) → the logits (B, V) at its last position only (with a `cache`: idx continues it)."""
        return self.readout(self.residual(idx, cache=cache)[:, -1])

    @torch.no_grad()
    def generate(self, idx: torch.Tensor, n_tokens: int, temperature: float = 1.0,
                 top_k: int | None = None, generator: torch.Generator | None = None,
                 use_cache: bool = True) -> torch.Tensor:
        """Append n_tokens sampled tokens to idx (B, T); temperature 0 takes the most likely token. Each is
        drawn from the last position's logits of the last n_ctx tokens, with a KVCache where it holds (module
        docstring; `use_cache=False` recomputes every window, the check of the cache). Logits that are not
        finite raise NonFiniteLogits (weights that overflow)."""
        n_ctx = self.cfg.n_ctx
        cache = None
        if use_cache and self.cfg.mask != "none":
            cache = KVCache(self.cfg, idx.shape[0], self.W_E.dtype, self.W_E.device)
        logits = self.last_logits(idx[:, -n_ctx:], cache)
        out = [idx]
        for i in range(n_tokens):
            if not bool(torch.isfinite(logits).all()):
                raise NonFiniteLogits("the model's logits are not finite (its forward pass overflows)")
            if temperature <= 0:
                nxt = logits.argmax(dim=-1, keepdim=True)  # (B, 1)
            else:
                probs = sampling_probabilities(logits, temperature, top_k)
                nxt = torch.multinomial(probs, 1, generator=generator)
            out.append(nxt)
            if i == n_tokens - 1:
                break
            if cache is not None and not cache.full:
                logits = self.last_logits(nxt, cache)
            else:  # the window slides past the context (or no cache): recompute it
                cache = None
                out = [torch.cat(out, dim=1)]
                logits = self.last_logits(out[0][:, -n_ctx:])
        return torch.cat(out, dim=1)
