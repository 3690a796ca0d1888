"""What the builder learns of a draft config beyond its closed formulas (docs/design.md#the-architecture-pane): the vocabulary the
corpus really gives, or why the corpus cannot be used. Pure functions of a config; no Qt. They load the
corpus (and the tokenizer, which imports torch), so the Architecture pane calls them off the GUI thread
(after gui.torch_import.ensure_torch: torch must be imported by one thread at a time), and `inspect_apart`
does the work in a child process when the vocabulary is a BPE's or words' (fitting and encoding them held the
interpreter lock beside the GUI thread: after a GPT-2 import the window froze ≥ 19 s while the builder "read the
corpus"); a fitted tokenizer goes to the token cache, where Train then finds it. Only as much of the corpus is
encoded as shows that it holds a context (engine/text/prepared.py's `check_corpus`): Train encodes the rest.

No model is built here: the closed formula `parameter_count` is exact (tests compare it with torch for every
option), and building a model only to count it allocated its n_ctx² masks, 11 GB for a 32768-token context.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from engine.configs.config import DataConfig, ExperimentConfig, ModelConfig
from engine.errors import UserError
from engine.configs.resolve import with_vocab


@dataclass(frozen=True)
class Inspection:
    """What the builder learns off the GUI thread: the corpus's vocabulary (or why it cannot be used) and
    the model config with that vocabulary."""

    vocab_size: int | None
    corpus_problem: str | None
    model: ModelConfig


@functools.lru_cache(maxsize=2)
def _corpus_text(corpus: str) -> str:
    from engine.text.corpus import load_corpus

    return load_corpus(corpus)


@functools.lru_cache(maxsize=16)
def _dataset_vocab(data: DataConfig, n_ctx: int, run_dir: str | None) -> int:
    if data.tokenizer != "char" or run_dir is not None:  # fitted once, into the token cache
        from engine.text.prepared import check_corpus

        return check_corpus(data, n_ctx, run_dir=run_dir)
    from engine.text.data import corpus_vocabulary

    return corpus_vocabulary(data, n_ctx, _corpus_text(data.corpus))


def inspect_config(cfg: ExperimentConfig, run_dir: str | Path | None = None) -> Inspection:
    """What the builder learns of `cfg`. With `run_dir` (the run shown) whose vocabulary the draft keeps (the
    same tokenizer settings), the vocabulary is the run's own tokenizer's — an imported GPT-2's 50,257 tokens,
    not what a BPE fitted on the draft's corpus would give — and the corpus is checked against it, as Train
    will continue the run on it (engine/training/continuation.py)."""
    vocab = problem = None
    if run_dir is not None and not _keeps_vocabulary(cfg, Path(run_dir)):
        run_dir = None
    if not cfg.data.validate():
        try:
            vocab = _dataset_vocab(cfg.data, cfg.model.n_ctx, None if run_dir is None else str(run_dir))
        except UserError as e:
            problem = str(e)
    return Inspection(vocab, problem, with_vocab(cfg.model, vocab or cfg.model.vocab_size))


def _keeps_vocabulary(cfg: ExperimentConfig, run_dir: Path) -> bool:
    from engine.rundir.runs import Run, RunError

    try:
        data = Run(run_dir).config.data
    except RunError:
        return False
    return (data.tokenizer, data.max_vocab) == (cfg.data.tokenizer, cfg.data.max_vocab)


def inspect_apart(cfg: ExperimentConfig, run_dir: str | Path | None = None) -> Inspection:
    """inspect_config, in a child process when the corpus is read into a BPE or word vocabulary (engine/child_job.py:
    the calling thread waits without the interpreter lock); a bug there is a UserError with its one line."""
    if cfg.data.tokenizer == "char" or cfg.data.validate():
        return inspect_config(cfg, run_dir)
    from engine.child_job import ChildJob

    events = ChildJob(inspect_config, cfg, run_dir, name="inspect the corpus").wait()
    if not events or events[-1][0] not in ("done", "failed"):  # ended from outside: the app is exiting
        raise UserError("the corpus was not inspected: its process was ended")
    if events[-1][0] != "done":
        raise UserError(events[-1][1])
    return events[-1][1]
