"""A coefficient read in tokens (issue 39; docs/readings.md#in-tokens): which vocabulary items a weight's G, each
of its route classes and the update that reached the step push toward and away, or which of the probe's
tokens G is made of.

On the run's fixed probe batch at a saved step s (float64, engine/ascode/numpy_gpt.py), three readings, by
where the weight sits (`role`):

    writer       the weight adds to the residual stream (W_E's rows, W_P, W_O, b_O, W_out, b_out, a post-LN
                 block's layer norms) or to the unembedding's input (ln_f): moving it along M changes the
                 probe's logits through the direct path by  push(M) = Σ_uses x̄ M Ũ, x̄ the use's input row
                 averaged over the probe's positions and Ũ = diag(g_f) W_U the unembedding after the final
                 layer norm's gain (its normalisation, which depends on the position, is left out: the logit
                 lens). push(G) is the first-order change of the mean logits along a step on G.
    unembedding  W_U and b_U (and a tied W_E's use as W_Eᵀ) write the logits themselves: push(M) = F̄ M, M.
    reader       the weight reads the stream (W_Q, W_K, W_V and their biases, W_in, b_in, a pre-LN block's
                 layer norms): G = Σ_t G_t over the probe's positions t, G_t = X_tᵀ δ_t (numpy_gpt's uses),
                 and position t's *imprint* is ⟨G_t, G⟩ / ‖G‖²: the imprints add up to 1 exactly, and the
                 probe's tokens with the largest are the ones whose outer products make G.

Every push is centred over the vocabulary (a logit shift common to every token changes no probability).
With `split`, each route class c gets the same reading of its part G_c (they add up to the whole's), and the
applied update ΔW = W(s) − W(p) from the saved step p before s gets push(ΔW), or imprints ⟨G_t, ΔW⟩ / ⟨G, ΔW⟩.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ascode import numpy_gpt as ng
from ..ascode.inputs import config_dict, numpy_weights, vectorised_erf

NAMED = 12        # tokens named each way (toward, away) per part
ROWS = 8          # rows of a matrix writer read one by one (W_E's input tokens, W_out's neurons, …)
TABLE_VOCAB = 512  # W_E's whole token × token table is kept up to this vocabulary (a character model's)
WHOLE, UPDATE = "G", "ΔW"

_READERS = ("W_Q", "W_K", "W_V", "b_Q", "b_K", "b_V", "W_in", "b_in")
_WRITERS = ("W_O", "b_O", "W_out", "b_out")


def role(cfg, name: str) -> str:
    """"writer", "unembedding" or "reader" (module docstring)."""
    if name in ("W_U", "b_U"):
        return "unembedding"
    if name in ("W_E", "W_P") or name.startswith("ln_f."):
        return "writer"
    last = name.split(".")[2]
    if last in _READERS:
        return "reader"
    if last in _WRITERS:
        return "writer"
    return "writer" if cfg.norm == "post" else "reader"  # ln1 / ln2: on the stream (post-LN) or inside a branch


def how(cfg, name: str) -> str:
    """The reading of `name` in words."""
    r = role(cfg, name)
    gain = "the final layer norm's gain and " if cfg.has_final_norm and not name.startswith("ln_f.") else ""
    if r == "writer":
        tied = " and, tied, as the unembedding itself" if name == "W_E" and cfg.tied else ""
        return (f"{name} writes to the residual stream: G read through {gain}the unembedding (the direct path)"
                f"{tied}, the change of the probe's mean logits along a step on G")
    if r == "unembedding":
        return f"{name} writes the logits: G read directly, the change of the probe's mean logits along G"
    return (f"{name} reads the residual stream: G = Σ over the probe's positions of one outer product each; a "
            "position's imprint is its product's part of G (the imprints add up to 1)")


@dataclass(frozen=True)
class Ranked:
    """One part's vocabulary items, ranked: ids and values, largest first."""

    toward: tuple[tuple[int, float], ...]
    away: tuple[tuple[int, float], ...]


def ranked(values: np.ndarray, n: int = NAMED) -> Ranked:
    order = np.argsort(values)
    top = [(int(i), float(values[i])) for i in order[::-1][:n] if values[i] > 0]
    bottom = [(int(i), float(values[i])) for i in order[:n] if values[i] < 0]
    return Ranked(tuple(top), tuple(bottom))


@dataclass(frozen=True, eq=False)
class TokenReading:
    """`weight` at `step` read in tokens (module docstring). Parts are WHOLE ("G"), UPDATE ("ΔW") and the
    route classes; `names` gives the visible string of every token id named anywhere in the reading."""

    weight: str
    step: int
    prev_step: int | None
    role: str
    how: str
    parts: tuple[str, ...]                       # WHOLE, UPDATE when there is one, then the classes
    norms: dict[str, float]                      # ‖part‖ (the class matrices, G, ΔW)
    ranks: dict[str, Ranked]                     # part -> its tokens (writers: push; readers: imprints by token)
    names: dict[int, str]
    vocab_size: int
    push: dict[str, np.ndarray] = field(default_factory=dict)       # writers: WHOLE and UPDATE, (V,) centred
    rows: tuple[tuple[str, float, Ranked], ...] = ()                 # writers: (row label, ‖G[r]‖, its push)
    table: np.ndarray | None = None              # W_E, small vocabulary: (V, V) G[a] Ũ, "after a, toward b"
    #                                              (rows and table: the embedding's part of G, never a tied
    #                                              W_E's use as the unembedding)
    table_names: tuple[str, ...] = ()            # the table's rows and columns: every token, visible
    imprints: dict[str, np.ndarray] = field(default_factory=dict)   # readers: part -> (B·T,) per position
    positions: tuple[str, ...] = ()              # readers: each probe position's token, visible
    contexts: tuple[str, ...] = ()               # readers: a few tokens before each position and the target
    probe_ids: np.ndarray | None = None          # readers: (B·T,) the token at each probe position
    probe_shape: tuple[int, ...] = ()            # readers: (B, T), the imprints' positions

    @property
    def nbytes(self) -> int:
        arrays = [*self.push.values(), *self.imprints.values()] + [a for a in (self.table, self.probe_ids)
                                                                     if a is not None]
        return sum(a.nbytes for a in arrays)

    def by_token(self, part: str = WHOLE) -> np.ndarray | None:
        """(V,) the part's whole ranking over the vocabulary where it is kept: a writer's push (G and ΔW), a
        reader's imprints summed by token (G, ΔW and every class); None otherwise."""
        if self.role != "reader":
            return self.push.get(part)
        values = self.imprints.get(part)
        return None if values is None else np.bincount(self.probe_ids, weights=values, minlength=self.vocab_size)


def _unembedding(cfg, W) -> np.ndarray:
    """(d, V): what the logits read the stream with."""
    return W["W_E"].T if cfg.tied else W["W_U"]


def _readout(cfg, W, name: str) -> np.ndarray:
    """Ũ for a writer: the unembedding after the final gain (ln_f's own parameters: after them already)."""
    U = _unembedding(cfg, W)
    if cfg.has_final_norm and not name.startswith("ln_f."):
        return W["ln_f.g"][:, None] * U
    return U


def push(cfg, W, name: str, uses, M: np.ndarray) -> np.ndarray:
    """(V,) the change of the probe's mean logits along M on `name`, through each use's direct path, centred."""
    out = 0.0
    U = _readout(cfg, W, name)
    for u in uses:
        if u.kind == "rows":
            mean = np.bincount(u.X, minlength=M.shape[0]) / len(u.X)
            out = out + (mean @ M) @ U
        elif u.kind == "matrix_t":  # the tied unembedding: logits = F W_Eᵀ
            out = out + M @ u.X.mean(0)
        elif u.kind == "matrix":
            out = out + (u.X.mean(0) @ M if name == "W_U" else (u.X.mean(0) @ M) @ U)
        elif u.kind == "gain":
            out = out + (u.X.mean(0) * M) @ U
        else:
            out = out + (M if name == "b_U" else M @ U)
    return out - out.mean()


def inner_by_position(use, delta: np.ndarray, M: np.ndarray) -> np.ndarray:
    """(N,) ⟨G_t, M⟩ for each position t of one use, G_t that position's part of the use's G."""
    if use.kind == "matrix":
        return ((use.X @ M) * delta).sum(1)
    if use.kind == "matrix_t":
        return ((delta @ M) * use.X).sum(1)
    if use.kind == "bias":
        return delta @ M
    if use.kind == "gain":
        return (use.X * delta) @ M
    return (M[use.X] * delta).sum(1)


def _row_labels(cfg, name: str, tokens) -> list[str] | None:
    last = name.rsplit(".", 1)[-1]
    if name == "W_E":
        return list(tokens)
    if name == "W_P":
        return [f"position {t}" for t in range(cfg.n_ctx)]
    if last == "W_O":
        return [f"head {r // cfg.d_head} dim {r % cfg.d_head}" for r in range(cfg.d_model)]
    if last == "W_out":
        return [f"neuron {r}" for r in range(cfg.d_ff)]
    return None


def token_reading(cfg, tokenizer, weights, before, x, y, name: str, step: int, prev_step: int | None,
                  split: bool = True, dtype=np.float64) -> TokenReading:
    """`name` at `step` (its weights `weights`) read in tokens on the probe (x, y); `before` the weights at
    `prev_step` (None: no update reaches the step); `split` reads each route class too. `dtype`: float64, or
    float32 for a model whose float64 pass would be slow (GPT-2 small's shape)."""
    from ..model.probes import visible_tokens

    vectorised_erf()
    c, W = config_dict(cfg), numpy_weights(cfg, weights, dtype)
    xs, ys = np.asarray(x), np.asarray(y)
    _, cache = ng.forward(c, W, xs, ys)
    uses = ng.backward(c, W, cache, [name], classes=split)[name]
    shape = W[name].shape
    classes = ng.use_G(uses, shape)
    G = sum(classes.values())
    mats = {WHOLE: G}
    if before is not None:
        mats[UPDATE] = W[name] - numpy_weights(cfg, {name: before[name]}, dtype)[name]
    if split:
        mats.update(classes)
    norms = {k: float(np.sqrt((m * m).sum())) for k, m in mats.items()}
    r = role(cfg, name)
    named: set[int] = set()
    fields: dict = {}
    if r == "reader":
        ranks, fields["imprints"] = _imprints(uses, mats, xs.reshape(-1), cfg.vocab_size)
        T = xs.shape[1]
        flat = xs.reshape(-1)
        strings = visible_tokens(tokenizer, range(cfg.vocab_size)) if cfg.vocab_size <= 4096 else None
        vis = (lambda ids: [strings[i] for i in ids]) if strings else (lambda ids: list(visible_tokens(tokenizer, ids)))
        fields["positions"] = tuple(vis(flat))
        fields["probe_shape"], fields["probe_ids"] = tuple(xs.shape), flat.copy()
        fields["contexts"] = tuple(_context(vis, xs, ys, t // T, t % T) for t in range(len(flat)))
    else:
        pushes = {k: push(cfg, W, name, uses, m) for k, m in mats.items()}
        ranks = {k: ranked(v) for k, v in pushes.items()}
        fields["push"] = {k: pushes[k] for k in (WHOLE, UPDATE) if k in pushes}
        labels = _row_labels(cfg, name, visible_tokens(tokenizer, range(cfg.vocab_size)) if name == "W_E" else ())
        if labels is not None and len(shape) == 2:
            # a tied W_E's rows read as the embedding: its use as the unembedding says nothing of "after a"
            Gr = sum(ng.use_G([u for u in uses if u.kind != "matrix_t"], shape).values())
            U = _readout(cfg, W, name)
            row_norms = np.sqrt((Gr * Gr).sum(1))
            rows = []
            for i in np.argsort(-row_norms)[:ROWS]:
                rk = ranked((Gr[i] @ U) - (Gr[i] @ U).mean())
                rows.append((labels[i], float(row_norms[i]), rk))
                named.update(t for t, _ in rk.toward + rk.away)
            fields["rows"] = tuple(rows)
            if name == "W_E" and cfg.vocab_size <= TABLE_VOCAB:
                t = Gr @ U
                fields["table"] = t - t.mean(1, keepdims=True)
                fields["table_names"] = tuple(labels)
    for rk in ranks.values():
        named.update(t for t, _ in rk.toward + rk.away)
    ids = sorted(named)
    names = dict(zip(ids, visible_tokens(tokenizer, ids))) if ids else {}
    parts = tuple(mats)
    return TokenReading(name, step, prev_step, r, how(cfg, name), parts, norms, ranks, names, cfg.vocab_size,
                        **fields)


def _imprints(uses, mats: dict, flat_ids: np.ndarray, vocab: int) -> tuple[dict, dict]:
    """(part -> tokens ranked by their summed imprints, part -> (N,) imprints) of a reader (module docstring)."""
    G = mats[WHOLE]
    g2 = float((G * G).sum())
    per: dict[str, np.ndarray] = {}
    whole = 0.0
    for u in uses:  # a reader has one use; the sum keeps the rule general
        for c, delta in u.deltas.items():
            v = inner_by_position(u, delta, G) / g2 if g2 > 0 else np.zeros(len(delta))
            per[c] = per[c] + v if c in per else v
            whole = whole + v
    out = {WHOLE: whole}
    if UPDATE in mats:
        dW = mats[UPDATE]
        along = float((G * dW).sum())
        total = 0.0
        for u in uses:
            for delta in u.deltas.values():
                total = total + inner_by_position(u, delta, dW)
        out[UPDATE] = total / along if along != 0 else np.zeros(len(flat_ids))
    out.update({c: v for c, v in per.items() if c in mats})
    ranks = {k: ranked(np.bincount(flat_ids, weights=v, minlength=vocab)) for k, v in out.items()}
    return ranks, out


def _context(vis, xs: np.ndarray, ys: np.ndarray, b: int, t: int, before: int = 6) -> str:
    """"…ab[c]→d": a position's few tokens before, itself in brackets, and its target."""
    start = max(0, t - before)
    head = "".join(vis(xs[b, start:t]))
    return f"{'…' if start > 0 else ''}{head}[{vis([xs[b, t]])[0]}]→{vis([ys[b, t]])[0]}"


__all__ = ["NAMED", "ROWS", "WHOLE", "UPDATE", "role", "how", "Ranked", "ranked", "TokenReading", "push",
           "inner_by_position", "token_reading"]
