"""What the heatmaps pane computes, off the GUI thread and without Qt: one request in, one result out.

A request names the tab (attention, masks or positional encodings), where the weights come from (a copy
published by training, or a saved step of a run) and the view's parameters. `HeatmapsComputer` keeps one
GPT per model config and loads each request's weights into it, so a refresh costs one state-dict copy and
the forward passes the tab needs (engine.probes), nothing more. Results are frozen dataclasses of numpy
arrays, handed to the views as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.config import ModelConfig
from engine.errors import UserError
from engine.resolve import with_vocab

if TYPE_CHECKING:
    from engine.probes import AttentionMaps

TABS = ("attention", "masks", "positional")


@dataclass(frozen=True)
class Source:
    """The weights to show: a live copy from training ({name: CPU tensor}) or step `step` of a run."""

    step: int
    config: ModelConfig
    weights: dict | None = None
    run: Any = None  # engine.runs.Run, read in the job thread

    @property
    def key(self) -> tuple:
        return ("live" if self.weights is not None else "run", self.step, id(self.weights or self.run))


@dataclass(frozen=True)
class Request:
    tab: str
    source: Source
    tokenizer: Any
    prompt: str
    band: int = 4    # β of the banded mask on the masks tab
    shift: int = 1   # k of the shift map on the positional tab

    @property
    def key(self) -> tuple:
        params = {"attention": (), "masks": (self.band,), "positional": (self.shift,)}[self.tab]
        return (self.tab, self.source.key, self.prompt, *params)


@dataclass(frozen=True)
class AttentionResult:
    step: int
    maps: AttentionMaps
    entropy: np.ndarray   # (L, H) mean row entropy, nats
    distance: np.ndarray  # (L, H) mean distance attended, tokens


@dataclass(frozen=True)
class MasksResult:
    step: int
    tokens: tuple[str, ...]
    in_force: str                    # the model's mask, as the first of `names` reads
    names: tuple[str, ...]           # in force, causal, banded β, none
    masks: dict[str, np.ndarray]     # name -> (T, T), 1 allowed, NaN masked
    weights: dict[str, np.ndarray]   # name -> (L, H, T, T) attention under that mask, same weights


@dataclass(frozen=True)
class PositionalResult:
    step: int
    kind: str                       # sinusoidal | learned | none
    P: np.ndarray                   # (n_ctx, d_model)
    similarity: np.ndarray          # (n_ctx, n_ctx) P Pᵗ
    shift: int
    M: np.ndarray | None            # (d, d) M_k, sinusoidal only
    error: np.ndarray | None        # (n_ctx − k,) max |P[p+k] − P[p] M_k| per p, sinusoidal only


def mask_label(kind: str, band: int) -> str:
    return {"causal": "causal", "none": "none"}.get(kind, f"banded, β = {band}")


class HeatmapsComputer:
    """Called from one job thread at a time (gui.jobs.LatestJob), so its cached model needs no lock."""

    def __init__(self):
        self._model = None
        self._masked: dict = {}  # (kind, band) -> the same model under another mask, reused

    def __call__(self, request: Request):
        import torch  # torch loads here, on the job's thread, never on the GUI thread at start-up

        from engine import probes

        # One thread for these small forward passes. Under OpenMP the setting is per calling thread, so
        # training keeps its own; a second team of spinning threads would take cores from training.
        torch.set_num_threads(1)
        model = self._load(request.source)
        if request.tab == "positional":
            return self._positional(model, request)
        ids = probes.prompt_ids(request.tokenizer, request.prompt, model.cfg.n_ctx)
        tokens = probes.visible_tokens(request.tokenizer, ids)
        if request.tab == "attention":
            maps = probes.attention_maps(model, ids, tokens)
            entropy, distance = probes.head_summaries(maps.weights)
            return AttentionResult(request.source.step, maps, entropy, distance)
        return self._masks(model, ids, tokens, request)

    def _load(self, source: Source):
        from engine.model import GPT

        weights = source.weights if source.weights is not None else source.run.load_weights(source.step)
        cfg = with_vocab(source.config, int(weights["W_E"].shape[0]))
        if self._model is None or self._model.cfg != cfg:
            self._model, self._masked = GPT(cfg).eval(), {}
        try:
            self._model.load_state_dict(weights)
        except RuntimeError as e:
            raise UserError(f"the weights at step {source.step} do not fit the model's config: "
                            f"{str(e).splitlines()[0][:160]}") from None
        return self._model

    def _masks(self, model, ids, tokens, request: Request) -> MasksResult:
        from engine import probes

        cfg, T, band = model.cfg, len(ids), request.band
        in_force = f"in force: {mask_label(cfg.mask, cfg.band)}"
        variants = {in_force: (cfg.mask, cfg.band), "causal": ("causal", band),
                    mask_label("banded", band): ("banded", band), "none": ("none", band)}
        masks = {name: probes.mask_matrix(kind, T, b) for name, (kind, b) in variants.items()}
        weights = probes.attention_under_masks(model, ids, variants, self._masked)
        return MasksResult(request.source.step, tokens, in_force, tuple(variants), masks, weights)

    def _positional(self, model, request: Request) -> PositionalResult:
        from engine import probes

        P = probes.positional_matrix(model)
        kind, k = model.cfg.pos_encoding, min(max(request.shift, 1), P.shape[0] - 1)
        M = error = None
        if kind == "sinusoidal":
            M = probes.shift_map(k, P.shape[1])
            error = probes.shift_error(P, M, k)
        return PositionalResult(request.source.step, kind, P, probes.similarity(P), k, M, error)
