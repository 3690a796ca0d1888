"""What each attention head does at one set of weights, and what it is worth: pure functions, no Qt, no files.

Every score is per layer and head, an (L, H) float64 array, read from the model's explicit attention path
(`GPT.attention_trace`, as the heatmaps use) on the run's fixed probes (`engine.rundir.runs.Probe`): the held-out
validation batch x (B, T) with its targets y, and the induction probe t (random tokens drawn by the corpus's
frequencies, repeated twice, n a half: `probes.induction_probe`).
All heads come from one traced forward per probe, each layer's attention reduced to its scores as the forward
makes it; what a head is worth from one more, batched forward.
A_ij below is head's attention from query i to key j, averaged over the probe's sequences.

    previous_token  mean_{i≥1} A_{i,i−1} on x. A previous-token head (Olsson et al. 2022, "In-context learning
                    and induction heads", §2; Elhage et al. 2021, "A mathematical framework for transformer
                    circuits", the induction circuit's first half).
    induction       mean_{n≤i<2n} Σ_{1≤j≤i, t_{j−1}=t_i} A_ij on the induction probe t: attention to the tokens
                    that followed an earlier occurrence of the current token, Olsson et al.'s prefix-matching
                    score. Where the first half holds each token once this is their A_{i,i−n+1}; a character
                    vocabulary smaller than the half repeats tokens, and a head that attends to every earlier
                    match is then still a perfect prefix matcher, so all matches count.
    duplicate       mean_{n≤i<2n} Σ_{j<i, t_j=t_i} A_ij on the induction probe: attention to earlier occurrences
                    of the current token itself (A_{i,i−n} where tokens are distinct), the duplicate-token heads
                    of Wang et al. 2022 ("Interpretability in the wild: a circuit for indirect object
                    identification in GPT-2 small", §3).
    first_token     mean_{i≥1} A_{i,0} on x: a positional head that parks on the first token (Voita et al. 2019,
                    "Analyzing multi-head self-attention", §4; Clark et al. 2019, "What does BERT look at?", §3).
    distance        mean over queries of Σ_j A_ij |i − j| on x, in tokens (Clark et al. 2019 §3;
                    `probes.head_summaries`, as the heatmaps pane shows it).
    entropy         mean over queries of −Σ_j A_ij log A_ij on x, in nats (Clark et al. 2019 §3.1).
    copying         Σ λ / Σ |λ| over the eigenvalues λ of the head's OV circuit W_E W_V,h W_O,h W_U (rows act
                    on the right), with the layer norms' gains folded in: in [−1, 1], 1 when attending to a
                    token only raises that token's logit (Elhage et al. 2021, "OV circuit"; Olsson et al.'s
                    copying score). Computed on the d_k × d_k product W_O,h W_U W_E W_V,h, which has the same
                    non-zero eigenvalues. Layer-norm centring and scaling are left out, and for heads after
                    layer 0 it reads the direct path from the token embedding only.
    ablation        probe loss with the head mean-ablated minus the probe loss: the head's output z_h is
                    replaced by its mean over the probe's B·T positions (Wang et al. 2022 §2 use mean-ablation
                    likewise). Positive: the head helps. Exact, every head in turn, in batched forwards; on the
                    first `ablation_positions` of each sequence, as many as cost at most EXACT_ABLATION_BE
                    backward-equivalents: the whole probe for a lesson model, 540 of GPT-2 small's 1024
                    positions (the whole would cost 32). `HeadScores.ablation_positions` says how many.
    dla             direct logit attribution (Elhage et al. 2021): the head's output z_h W_O,h passed through
                    the final layer norm linearised at the probe (its own scale σ at each position), dotted with
                    W_U[:, y] − mean_v W_U[:, v], averaged over positions (the centring makes it a change in
                    log-odds against the average token). NaN for post-LN or residual-free models, where the
                    head's output passes through later non-linear layers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from ..model.gpt import GPT, LayerTrace
from ..model.probes import head_summaries

ATTENTION_SCORES = ("previous_token", "induction", "duplicate", "first_token", "distance", "entropy")
SCORES = ATTENTION_SCORES + ("copying", "ablation", "dla")
# what each score measures, in a sentence the head timeline shows under its grid (definitions above)
MEASURES = {
    "previous_token": "attention from each token of held-out text to the token just before it",
    "induction": "on a random sequence of the corpus's tokens shown twice: the second copy's attention to the "
                 "tokens that followed an earlier occurrence of the current token (prefix matching)",
    "duplicate": "on a random sequence of the corpus's tokens shown twice: the second copy's attention to "
                 "earlier occurrences of the current token itself",
    "first_token": "attention from each token of held-out text to the sequence's first token",
    "distance": "mean distance, in tokens, from each query of held-out text to what it attends to",
    "entropy": "how spread each query's attention is over its keys on held-out text, in nats",
    "copying": "how much attending to a token raises that token's own logit (the OV circuit's eigenvalues, "
               "from −1 to 1)",
    "ablation": "the loss on held-out text rises by this when the head's output is replaced by its mean "
                "(over the probe's first positions only, for a large model: the note says how many)",
    "dla": "the head's direct contribution to the log-odds of the correct next token on held-out text",
}


@dataclass(frozen=True)
class HeadProbes:
    """The token ids the scores read: a validation batch x with its targets y, and the induction probe."""

    x: np.ndarray          # (B, T)
    y: np.ndarray          # (B, T)
    induction: np.ndarray  # (B', 2n): n random tokens, then the same n again

    @classmethod
    def from_probe(cls, probe) -> HeadProbes:
        return cls(probe.x, probe.y, probe.induction)


# The exact mean-ablations of every head may cost at most this many backward-equivalents (a forward and a
# backward of the model on its whole probe batch); a large model's are run on each probe sequence's first
# positions only (`ablation_positions`), so that scoring a saved step costs about 20 in all.
EXACT_ABLATION_BE = 16.0


def ablation_cost(cfg, positions: int, seq_len: int) -> float:
    """What mean-ablating every head exactly on the first `positions` of each probe sequence costs, in
    backward-equivalents of the whole sequences (seq_len): counted in multiply-adds per token of a block (Q, K,
    V, O, the MLP, attention over the keys) and of the readout, a backward as twice its forward. Each head's
    copy of the sequences runs from its own layer to the logits (`_ablation_losses`)."""
    d, L, H = cfg.d_model, cfg.n_layer, cfg.n_head

    def block(t: int) -> int:
        return 4 * d * d + 2 * d * cfg.d_ff + 2 * t * d

    readout = d * cfg.vocab_size
    exact = positions * H * sum((L - layer) * block(positions) + readout for layer in range(L))
    return exact / (3 * seq_len * (L * block(seq_len) + readout))


def ablation_positions(cfg, seq_len: int) -> int:
    """The most first positions of each probe sequence whose exact ablations fit EXACT_ABLATION_BE (at least 2)."""
    lo, hi = 2, seq_len
    while lo < hi:  # the cost grows with the positions
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if ablation_cost(cfg, mid, seq_len) <= EXACT_ABLATION_BE else (lo, mid - 1)
    return lo


def ablation_note(positions: int, seq_len: int) -> str:
    """What the ablation score ran on, in a sentence for the pane, the table and the figures."""
    if positions >= seq_len:
        return "Ablation: exact, each head's output replaced by its mean over the probe in turn"
    return (f"Ablation: exact, each head's output replaced by its mean in turn, on the first {positions} of the "
            f"probe's {seq_len} positions (what {EXACT_ABLATION_BE:.0f} forward and backward passes allow)")


@dataclass(frozen=True)
class HeadScores:
    """Every score of every head at one set of weights (SCORES, each (L, H)) and the probe loss."""

    values: dict[str, np.ndarray]
    loss: float
    ablation_positions: int = 0  # the first positions of each probe sequence the ablations ran on (0: all)


def head_scores(model: GPT, probes: HeadProbes) -> HeadScores:
    """All scores of every head of `model` (eval mode, no gradients) on `probes`."""
    scoring = HeadScoring(model, probes)
    while not scoring.finished:
        scoring.advance()
    return scoring.result()


# A piece of the mean-ablations runs at most this many token-layers (copies of the probe batch × its tokens ×
# the layers they pass through): on GPT-2 small's 1024-token probe, one head of layer 0 (12,288) or four of
# layer 9, each piece a few seconds on one thread; a small model's ablations are one piece.
PIECE_TOKEN_LAYERS = 16_384


class HeadScoring:
    """`head_scores` in pieces, so that a large model's scoring can leave the analysis process between them
    (engine/analysis/head_timeline.py): first the BASE parts (the traced forward of the validation batch with
    its attention scores and direct logit attributions, the traced forward of the induction probe, the copying
    scores), then the mean-ablations a few heads of one layer at a time (PIECE_TOKEN_LAYERS), on the probe's
    first `ablation_positions`. On GPT-2 small's 1024-token probes the base parts take 9, 5 and 3 s on one thread
    of the 2-core machine (docs/figures.md)."""

    BASE = 3

    def __init__(self, model: GPT, probes: HeadProbes):
        self.model, self.probes = model, probes
        cfg = model.cfg
        L, H = cfg.n_layer, cfg.n_head
        B, T = np.asarray(probes.x).shape
        self.positions = ablation_positions(cfg, T)
        self.pieces: list[tuple[int, list[int]]] = []
        for layer in range(L):
            per = max(1, PIECE_TOKEN_LAYERS // (B * self.positions * (L - layer)))
            self.pieces += [(layer, list(range(h, min(H, h + per)))) for h in range(0, H, per)]
        self.done = 0                           # parts done: the BASE parts, then the pieces in order
        self._rec: _Recording | None = None     # None before the first part, and after `resume`
        self._loss = math.nan                   # the probe batch's loss (the first part)
        self._cut: _Recording | None = None     # the ablations' own recording when they run on fewer positions
        self._values: dict[str, np.ndarray] = {}
        self._ablation = np.full((L, H), np.nan)

    @property
    def parts(self) -> int:
        return self.BASE + len(self.pieces)

    @property
    def finished(self) -> bool:
        return self.done == self.parts

    def advance(self) -> None:
        """Compute the next part."""
        model = self.model
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                if self.done == 0:
                    self._rec = rec = _record(model, self.probes.x, self.probes.y)
                    self._values = rec.scores | {"dla": _dla(model, rec)}
                    self._loss = rec.loss
                elif self.done == 1:
                    self._values |= _induction_scores(model, self.probes.induction)
                elif self.done == 2:
                    self._values["copying"] = copying_scores(model)
                else:
                    layer, heads = self.pieces[self.done - self.BASE]
                    rec = self._ablated()
                    self._ablation[layer, heads] = _ablation_losses(model, rec, layer, heads) - rec.loss
        finally:
            model.train(was_training)
        self.done += 1

    def state(self) -> dict[str, np.ndarray]:
        """What the parts done so far found, as arrays (`resume` takes it up in another process): GPT-2 small's
        step is 41 parts, 10-30 minutes of CPU, and a step left unfinished when the app closed was scored from
        its first part at the next launch."""
        return {"done": np.array(self.done), "parts": np.array(self.parts), "loss": np.array(self._loss),
                "ablation": self._ablation, **{f"value:{k}": v for k, v in self._values.items()}}

    def resume(self, state: dict[str, np.ndarray]) -> bool:
        """Take up a `state` of the same model's scoring on the same probes (the caller's to know): the next
        part is the first not done there. False, and nothing taken, if it does not fit this scoring."""
        try:
            done, parts = int(state["done"]), int(state["parts"])
            ablation = np.asarray(state["ablation"], dtype=float)
            values = {k[len("value:"):]: np.asarray(v) for k, v in state.items() if k.startswith("value:")}
            loss = float(state["loss"])
        except (KeyError, TypeError, ValueError):
            return False
        if parts != self.parts or not 0 <= done <= parts or ablation.shape != self._ablation.shape:
            return False
        self.done, self._ablation, self._values, self._loss = done, ablation.copy(), values, loss
        self._rec = self._cut = None
        return True

    def _ablated(self) -> _Recording:
        """The recording the ablations start from: the whole probe's, or one of its first `positions` (a forward
        of its own, since without a causal mask the first positions read the later ones). After `resume` the
        whole probe's is traced again (one forward) when the ablations need it."""
        if self.positions == np.asarray(self.probes.x).shape[1]:
            if self._rec is None:
                self._rec = _record(self.model, self.probes.x, self.probes.y, scores=False)
            return self._rec
        if self._cut is None:
            x, y = (np.asarray(a)[:, :self.positions] for a in (self.probes.x, self.probes.y))
            self._cut = _record(self.model, x, y, scores=False)
        return self._cut

    def result(self) -> HeadScores:
        if not self.finished:
            raise RuntimeError(f"head scoring has {self.parts - self.done} parts left")
        return HeadScores({name: (self._ablation if name == "ablation" else self._values[name]) for name in SCORES},
                          self._loss, self.positions)


@dataclass
class _Recording:
    """One traced forward of the validation batch and what the later scores need from inside it."""

    tgt: torch.Tensor            # (B, T) targets
    loss: float
    scores: dict[str, np.ndarray]  # the attention scores on x (`_text_scores`), each (L, H)
    block_in: list[torch.Tensor]  # each block's input residual stream (B, T, d)
    z: list[torch.Tensor]        # each block's heads' outputs (B, H, T, dk)
    final_in: torch.Tensor | None  # the final layer norm's input (B, T, d), None without one


# The heads' attention is reduced to scores one layer, and one sequence, at a time, and the logits are
# computed a few sequences at a time (LOGIT_ELEMENTS): GPT-2 small's trace of a 4 × 1024-token probe batch holds
# three (B, H, T, T) tensors per layer, 7 GB for the whole model, and its logits (B, T, 50257) are 0.8 GB.
LOGIT_ELEMENTS = 1 << 25


class _LayerReduction:
    """Stands in for the trace list of a traced forward (`GPT.residual(idx, trace=…)`): each layer's attention
    weights are reduced by `score(b, w)` to a few (H,) arrays per sequence b (w its (H, T, T) float64 weights)
    and averaged over the batch as they arrive, and the layer's trace is let go."""

    def __init__(self, score):
        self.score, self.layers = score, []

    def append(self, layer: LayerTrace) -> None:
        rows = [self.score(b, w.to("cpu", torch.float64).numpy()) for b, w in enumerate(layer.weights)]
        self.layers.append({name: np.mean([row[name] for row in rows], axis=0) for name in rows[0]})

    def values(self) -> dict[str, np.ndarray]:
        return {name: np.stack([layer[name] for layer in self.layers]) for name in self.layers[0]}


def _record(model: GPT, x: np.ndarray, y: np.ndarray, scores: bool = True) -> _Recording:
    """One forward of (x, y), keeping what the later scores read; with `scores` the attention is traced and
    reduced to the text scores (else the fused attention, for the ablations alone)."""
    idx = torch.as_tensor(np.asarray(x), dtype=torch.long, device=_device(model))
    tgt = torch.as_tensor(np.asarray(y), dtype=torch.long, device=idx.device)
    block_in, zs = [], []
    reduction = _LayerReduction(lambda b, w: _text_scores(w)) if scores else None
    hooks = [b.register_forward_pre_hook(lambda m, a: block_in.append(a[0])) for b in model.blocks]
    for block in model.blocks:
        block.z_edit = lambda z: zs.append(z) or z
    try:
        final_in = model.residual(idx, trace=reduction)
    finally:
        _clear(model)
        for hook in hooks:
            hook.remove()
    loss = _per_token_losses(model, final_in, tgt).mean().item()
    return _Recording(tgt, loss, reduction.values() if scores else {}, block_in, zs,
                      final_in if model.cfg.has_final_norm else None)


def _text_scores(w: np.ndarray) -> dict[str, np.ndarray]:
    """The attention scores on held-out text from one sequence's weights w (H, T, T), each (H,)."""
    rows = np.arange(1, w.shape[-1])
    entropy, distance = head_summaries(w)
    return {"previous_token": w[:, rows, rows - 1].mean(axis=-1), "first_token": w[:, rows, 0].mean(axis=-1),
            "distance": distance, "entropy": entropy}


def _induction_scores(model: GPT, tokens: np.ndarray) -> dict[str, np.ndarray]:
    """The induction and duplicate-token scores (L, H) on the induction probe `tokens` (B, 2n)."""
    follows, repeats = _matches(tokens)  # (B, 2n, 2n) each
    n = tokens.shape[1] // 2

    def score(b: int, w: np.ndarray) -> dict[str, np.ndarray]:
        return {"induction": (w * follows[b]).sum(axis=-1)[:, n:].mean(axis=-1),
                "duplicate": (w * repeats[b]).sum(axis=-1)[:, n:].mean(axis=-1)}

    reduction = _LayerReduction(score)
    model.residual(torch.as_tensor(np.asarray(tokens), dtype=torch.long, device=_device(model)), reduction)
    return reduction.values()


def _matches(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For query i and key j of each row of t (B, T): the key follows an earlier copy of the query's token
    (1 ≤ j ≤ i, t_{j−1} = t_i), and the key is an earlier copy of it (j < i, t_j = t_i)."""
    T = t.shape[1]
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    prev = np.concatenate([np.full((t.shape[0], 1), -1), t[:, :-1]], axis=1)  # t_{j−1}; none before key 0
    follows = (prev[:, None, :] == t[:, :, None]) & (j <= i)
    repeats = (t[:, None, :] == t[:, :, None]) & (j < i)
    return follows.astype(np.float64), repeats.astype(np.float64)


def copying_scores(model: GPT) -> np.ndarray:
    """Σ λ / Σ |λ| of each head's OV circuit (see the module docstring), (L, H)."""
    cfg = model.cfg
    L, H, dk = cfg.n_layer, cfg.n_head, cfg.d_head
    f64 = torch.float64
    W_U = model.unembedding().to(f64)
    if cfg.has_final_norm:
        W_U = model.ln_f.g.to(f64)[:, None] * W_U
    UE = W_U @ model.W_E.to(f64)  # (d, d): the rest of the product is per head
    circuits = []
    for block in model.blocks:
        W_V = block.W_V.to(f64)
        if cfg.norm == "pre":
            W_V = block.ln1.g.to(f64)[:, None] * W_V
        W_O = block.W_O.to(f64).view(H, dk, -1)                   # (H, dk, d)
        W_V = W_V.view(-1, H, dk).transpose(0, 1)                   # (H, d, dk)
        circuits.append(W_O @ UE @ W_V)                             # (H, dk, dk)
    lam = torch.linalg.eigvals(torch.stack(circuits))               # (L, H, dk)
    total = lam.abs().sum(dim=-1)
    score = torch.where(total > 0, lam.real.sum(dim=-1) / total.clamp_min(1e-300), 0.0)
    return score.view(L, H).cpu().numpy()


def _ablation_losses(model: GPT, rec: _Recording, layer: int, heads: list[int]) -> np.ndarray:
    """Probe loss with each of `heads` of `layer` in turn replaced by its mean over the B·T positions.

    Layers before the ablated heads' are unchanged, so the copies (one per head) start from that layer's
    recorded input: the L·H ablations cost about (L + 1)/2 forwards of H copies of the batch in all.
    """
    B, n = rec.tgt.shape[0], len(heads)
    block = model.blocks[layer]
    means = rec.z[layer].mean(dim=(0, 2))  # (H, dk)

    def edit(z):
        z = z.clone().view(n, B, *z.shape[1:])  # (copies, B, h, T, dk)
        for copy, h in enumerate(heads):
            z[copy, :, h] = means[h]
        return z.view(n * B, *z.shape[2:])

    block.z_edit = edit
    try:
        x = rec.block_in[layer].repeat(n, 1, 1)
        for later in model.blocks[layer:]:
            x = later(x, model.mask_add, model.mask_ok)
    finally:
        block.z_edit = None
    per_token = _per_token_losses(model, x, rec.tgt.repeat(n, 1))
    return per_token.view(n, -1).mean(dim=-1).to("cpu", torch.float64).numpy()


def _per_token_losses(model: GPT, x: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    """The loss at each position (N, T) of the residual stream after the last block x (N, T, d), read out a few
    sequences at a time (LOGIT_ELEMENTS)."""
    rows = max(1, LOGIT_ELEMENTS // (x.shape[1] * model.cfg.vocab_size))
    return torch.cat([_per_token_loss(model, model.readout(x[i:i + rows]), tgt[i:i + rows])
                      for i in range(0, x.shape[0], rows)])


def _per_token_loss(model: GPT, logits: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    if model.cfg.loss == "cross_entropy":
        return F.cross_entropy(logits.transpose(1, 2), tgt, reduction="none")
    onehot = F.one_hot(tgt, logits.shape[-1]).to(logits.dtype)
    return 0.5 * (onehot - logits).pow(2).sum(dim=-1)


def _dla(model: GPT, rec: _Recording) -> np.ndarray:
    """Each head's direct logit attribution on the recorded batch's targets (module docstring), (L, H)."""
    cfg, final_in = model.cfg, rec.final_in
    L, H, dk = cfg.n_layer, cfg.n_head, cfg.d_head
    if not cfg.residual or cfg.norm == "post":
        return np.full((L, H), np.nan)
    W_U = model.unembedding()
    U_y = (W_U - W_U.mean(dim=1, keepdim=True)).t()[rec.tgt]  # (B, T, d)
    if final_in is not None:
        sigma = torch.sqrt(final_in.var(dim=-1, unbiased=False, keepdim=True) + cfg.ln_eps)
        U_y = U_y * model.ln_f.g / sigma
    out = np.zeros((L, H))
    for layer, (block, z) in enumerate(zip(model.blocks, rec.z)):
        W_O = block.W_O.view(H, dk, -1)                     # (H, dk, d)
        c = torch.einsum("bhtk,hkd->bthd", z, W_O)           # each head's write to the residual stream
        if final_in is not None:
            c = c - c.mean(dim=-1, keepdim=True)             # the layer norm's centring is linear
        out[layer] = torch.einsum("bthd,btd->h", c, U_y).div(U_y.shape[0] * U_y.shape[1]).double().cpu().numpy()
    return out


def _clear(model: GPT) -> None:
    for block in model.blocks:
        block.z_edit = None


def _device(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device

