"""What the builder learns of a draft config beyond its closed formulas (docs/design.md): the vocabulary the
corpus really gives, or why the corpus cannot be used, and torch's own count of the model's parameters.
Pure functions of a config; no Qt. They load the corpus and torch, so the Architecture pane calls them off
the GUI thread (after gui.torch_import.ensure_torch: torch must be imported by one thread at a time).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from engine.config import DataConfig, ExperimentConfig, ModelConfig, parameter_count
from engine.errors import UserError
from engine.resolve import with_vocab


@dataclass(frozen=True)
class Inspection:
    """What the builder learns off the GUI thread: the corpus's vocabulary (or why it cannot be used)
    and torch's own parameter count of the model built with that vocabulary."""

    vocab_size: int | None
    corpus_problem: str | None
    torch_count: int | None
    model: ModelConfig


@functools.lru_cache(maxsize=2)
def _corpus_text(corpus: str) -> str:
    from engine.corpus import load_corpus

    return load_corpus(corpus)


@functools.lru_cache(maxsize=16)
def _dataset_vocab(data: DataConfig, n_ctx: int) -> int:
    from engine.data import Dataset

    return Dataset.build(data, n_ctx, _corpus_text(data.corpus)).tokenizer.vocab_size


TORCH_COUNT_LIMIT = 50_000_000  # larger models are not built just to be counted


def torch_parameter_count(model: ModelConfig) -> int | None:
    """Build the GPT on the CPU and count its parameters; None above TORCH_COUNT_LIMIT.

    (The meta device would need no memory, but building there took a second even for the tiny preset,
    in torch's decompositions, and was not safe beside another thread using torch.)
    """
    if parameter_count(model) > TORCH_COUNT_LIMIT:
        return None
    from engine.model import GPT

    return sum(p.numel() for p in GPT(model).parameters())


def inspect_config(cfg: ExperimentConfig) -> Inspection:
    vocab = problem = None
    if not cfg.data.validate():
        try:
            vocab = _dataset_vocab(cfg.data, cfg.model.n_ctx)
        except UserError as e:
            problem = str(e)
    model = with_vocab(cfg.model, vocab or cfg.model.vocab_size)
    count = torch_parameter_count(model) if not model.validate() else None
    return Inspection(vocab, problem, count, model)
