"""The one place a config learns its vocabulary: the tokenizer of the corpus sets `model.vocab_size`.

A config as written (a preset, the builder's draft, a TOML file) carries a placeholder vocabulary; the
trainer resolves it against the dataset before building the model, and the run saves the resolved config
(engine/rundir/runs.py). Everything else that needs a vocabulary, or must compare two configs while ignoring it,
calls these three functions instead of patching the field itself. No torch: the GUI thread may call them.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol, TypeVar

from .config import ExperimentConfig, ModelConfig

C = TypeVar("C", ExperimentConfig, ModelConfig)


class _HasTokenizer(Protocol):
    @property
    def tokenizer(self): ...


def with_vocab(cfg: C, vocab_size: int) -> C:
    """`cfg` (an experiment or a model config) with its vocabulary set to `vocab_size`."""
    if isinstance(cfg, ModelConfig):
        return dataclasses.replace(cfg, vocab_size=vocab_size)
    return cfg.replace(model=dataclasses.replace(cfg.model, vocab_size=vocab_size))


def resolve(cfg: ExperimentConfig, dataset: _HasTokenizer) -> ExperimentConfig:
    """`cfg` with the vocabulary its dataset's tokenizer gives (engine.text.data.Dataset)."""
    return with_vocab(cfg, dataset.tokenizer.vocab_size)


def unresolved(cfg: C) -> C:
    """`cfg` without its vocabulary, for comparing configs that differ only in what the corpus set."""
    return with_vocab(cfg, 0)
