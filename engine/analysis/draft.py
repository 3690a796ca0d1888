"""The builder's draft before any run exists: the model Train would start from, and its corpus's tokenizer.

Before a run is trained or opened the Heatmaps pane shows the draft at initialisation (docs/design.md, the
Heatmaps pane): its attention on the prompt, the masks and the positional encodings, which are what the
first step of training starts from. `build_draft` makes them as the trainer does (engine/training/trainer.py):
the tokenizer fitted on the corpus sets the vocabulary, then torch's generator is seeded with the config's
seed and the GPT is built, so its weights are those of step 0 of the run Train would start, bit for bit.

Drafts above DRAFT_MAX_PARAMETERS are not built: a preview costs the analysis process the model and its
activations on the prompt (the masks tab's other masks share its weights, engine/model/probes.py `with_mask`),
before the user asked to train.
"""

from __future__ import annotations

import functools

from ..configs.config import DataConfig, ExperimentConfig, TrainConfig
from ..configs.resolve import with_vocab
from ..configs.sizes import parameter_count
from ..errors import UserError

DRAFT_MAX_PARAMETERS = 20_000_000  # 80 MB of float32 weights a copy; GPT-2 small (124M) is shown once it trains


def draft_of(cfg: ExperimentConfig) -> ExperimentConfig:
    """What decides a draft's weights and tokens: its model, its data and its seed, the rest at their defaults
    (so a preview survives editing a learning rate, and two drafts differing only there are one)."""
    return ExperimentConfig(model=cfg.model, train=TrainConfig(seed=cfg.train.seed), data=cfg.data)


@functools.lru_cache(maxsize=2)
def _tokenizer(data: DataConfig):
    from ..text.corpus import load_corpus
    from ..text.encoded import fitted_tokenizer

    return fitted_tokenizer(load_corpus(data.corpus), data)  # fitted once per corpus: the token cache


def build_draft(cfg: ExperimentConfig):
    """(GPT in eval mode at step 0, tokenizer) of the draft `cfg`; UserError if it cannot be previewed."""
    import torch

    from ..model.gpt import GPT

    problems = cfg.validate()
    if problems:
        raise UserError(f"the draft has {len(problems)} problem(s) to fix first: {problems[0]}")
    tokenizer = _tokenizer(cfg.data)  # a byte-level BPE takes seconds to fit: once per data config
    model_cfg = with_vocab(cfg.model, tokenizer.vocab_size)
    n = parameter_count(model_cfg)
    if n > DRAFT_MAX_PARAMETERS:
        raise UserError(f"the draft has {n:,} parameters, more than the {DRAFT_MAX_PARAMETERS:,} shown before "
                        "training; its heatmaps appear once it trains")
    with torch.random.fork_rng(devices=[]):  # the process's own generator is left as it was
        torch.manual_seed(cfg.train.seed)  # as the trainer seeds it before building the model
        return GPT(model_cfg).eval(), tokenizer


__all__ = ["DRAFT_MAX_PARAMETERS", "build_draft", "draft_of"]
