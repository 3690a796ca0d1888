"""Making a run directory from a config and weights in one piece: everything is validated before anything
is written, the run is built in a temporary folder beside its target and renamed into place.

Training writes its run as it goes (a Trainer's RunWriter); every other way to make a run — a fork, a
nanoGPT import, a Hugging Face GPT-2 import — starts from weights that came from elsewhere and goes
through `create_run`. The config is checked exactly as `--config` is (`require_valid`: the field rules,
the limits and the training-memory estimate), the weights for names, shapes and finiteness, the step and
best validation loss for type and range. A refusal leaves the target as it was, so the corrected command
then succeeds; a creation killed half-way leaves only a hidden `.tmp-*` folder, never a half-made run, and
the next creation of that target removes it.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import torch

from . import integrity as integrity
from ..configs.config import ConfigError, ExperimentConfig
from ..errors import UserError, shown
from .layout import IMPORT
from .runs import Probe, RunError, RunWriter, atomic_write_text


def require_valid(cfg: ExperimentConfig) -> None:
    """Refuse, as one line, a config that `--config` would refuse: bad fields, limits, training memory."""
    from ..configs.limits import training_problems

    problems = cfg.validate() or training_problems(cfg)
    if problems:
        raise ConfigError("; ".join(map(str, problems)))


def check_target(run_dir: str | Path) -> Path:
    """`run_dir` if it does not exist yet or is an empty folder; refused before any work otherwise."""
    run_dir = Path(run_dir)
    if run_dir.is_symlink() or (run_dir.exists() and not run_dir.is_dir()):
        raise RunError(f"{run_dir} is not a folder; a new run needs a new directory")
    try:
        occupied = run_dir.is_dir() and any(run_dir.iterdir())
    except OSError as e:
        raise RunError(f"cannot read {run_dir}: {e.strerror}") from None
    if occupied:
        raise RunError(f"{run_dir} is not empty; a new run needs a new directory")
    return run_dir


def check_step(step, total_steps: int) -> int:
    """A checkpoint's step: a whole number from 0 to the run's total steps."""
    if type(step) is not int or not 0 <= step <= total_steps:
        raise RunError(f"the step {shown(step)} is not a whole number from 0 to {total_steps:,}")
    return step


def check_loss(value, what: str) -> float | None:
    """A loss read from elsewhere: None, or one finite number (a one-element tensor counts)."""
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        if value.numel() != 1 or not value.dtype.is_floating_point:
            raise RunError(f"the {what} is a tensor of shape {tuple(value.shape)}, not one number")
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise RunError(f"the {what} ({shown(value)}) is not a finite number")
    return float(value)


def create_run(run_dir: str | Path, cfg: ExperimentConfig, tokenizer, probe: Probe,
               weights: dict[str, torch.Tensor], *, step: int = 0, state: dict | None = None,
               best_val=None, fill: Callable[[Path], None] | None = None) -> Path:
    """Write a whole run at `run_dir` whose snapshot and checkpoint at `step` hold `weights`.

    `state` is the checkpoint's training state (optimizer, generators; its step is set here); `fill(folder)`
    writes further files into the run while it is still under its temporary name (a fork's copies of its
    parent's logs). Returns the run directory; a UserError, with nothing written, when anything is invalid.
    """
    run_dir = check_target(run_dir)
    require_valid(cfg)
    if tokenizer.vocab_size != cfg.model.vocab_size:
        raise RunError(f"the vocabulary has {tokenizer.vocab_size} tokens but the model {cfg.model.vocab_size}")
    try:
        integrity.check_weights(weights, integrity.expected_shapes(cfg.model), "the weights")
    except UserError as e:
        raise RunError(str(e)) from None
    step = check_step(step, cfg.train.steps)
    best_val = check_loss(best_val, "best validation loss")
    try:
        run_dir.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RunError(f"cannot create {run_dir.parent}: {e.strerror}") from None
    sweep_stale(run_dir)
    tmp = run_dir.parent / f".tmp-{run_dir.name}-{os.getpid()}"
    try:
        _build(tmp, cfg, tokenizer, probe, weights, step, dict(state or {}, step=step), best_val, fill)
        _rename_into_place(tmp, run_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return run_dir


def sweep_stale(run_dir: Path) -> None:
    """Remove what a creation of `run_dir` killed half-way left beside it (its process is gone), and this
    process's own leftover; another live process's creation is left alone."""
    prefix = f".tmp-{run_dir.name}-"
    try:
        leftovers = [p for p in run_dir.parent.iterdir() if p.name.startswith(prefix)]
    except OSError:
        return
    for p in leftovers:
        pid = p.name[len(prefix):]
        if not pid.isdigit() or (int(pid) != os.getpid() and _alive(int(pid))):
            continue
        if p.is_symlink() or not p.is_dir():
            p.unlink(missing_ok=True)
        else:
            shutil.rmtree(p, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else; or no way to ask (Windows)
        return True
    return True


def _build(tmp: Path, cfg, tokenizer, probe, weights, step, state, best_val, fill) -> None:
    writer = RunWriter.create(tmp, cfg, tokenizer, probe)
    try:
        if "imported_from" in state:  # an import: where its weights came from (engine/training/continuation.py)
            atomic_write_text(tmp / IMPORT, json.dumps({"source": state["imported_from"], "step": step},
                                                       ensure_ascii=False))
        if fill is not None:
            fill(tmp)
        checkpoint = writer.save_checkpoint(step, weights, state, best_val)
        writer.link_snapshot(step, checkpoint)  # the same file; also indexes the snapshots `fill` copied
    finally:
        writer.close()


def _rename_into_place(tmp: Path, run_dir: Path) -> None:
    try:
        if run_dir.is_dir():
            run_dir.rmdir()  # empty (check_target); Windows renames onto no existing folder
        os.replace(tmp, run_dir)
    except OSError as e:
        raise RunError(f"cannot create {run_dir}: {e.strerror or e}; it may have been made meanwhile") from None
