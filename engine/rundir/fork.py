"""Paired runs: fork a run at step 0 or at one of its checkpoints with a setting changed, so that the two
share their initial weights and their batch order and a difference between them is that setting's doing.

The trainer draws batches from a generator seeded with `train.seed` and initialises from torch's global
generator seeded the same way (engine/training/trainer.py), so a fork keeps the parent's seed, data and weight
shapes and refuses a change to them. At step 0 the fork starts from the parent's step-0 snapshot (equal
to its own initialisation, loaded so that equality never rests on that). At a checkpoint it starts from
the parent's weights, batch and torch generator states and, when the optimizer keeps its kind, its
moments with the new hyperparameters; a new kind of optimizer starts with fresh moments. The parent's
metrics, samples and snapshots up to the fork step are copied, so the fork's curves start where the
parent's were. `fork.json` in the fork records the parent, the step and every setting changed.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ..configs.config import ExperimentConfig
from ..errors import UserError
from ..progress import report
from ..training.continuation import adapt_optimizer, changed_settings
from .create import check_target, create_run, require_valid
from .integrity import SIDECAR, expected_shapes
from .layout import LOGS
from .runs import SNAPSHOTS, Run, RunError, atomic_write_text, read_jsonl, step_name
from ..safe_io import (JSON_CAP, WEIGHTS_CAP, UnsafeFileError, check_inside, copy_regular, parse_json,
                      read_text)

FORK = "fork.json"
STAGES = 4  # reported as they end: the corpus read, the starting weights, the run written, the run resumed


def check_pairable(parent: ExperimentConfig, child: ExperimentConfig) -> None:
    """Refuse the changes that would break the pairing: seed, data, or the shapes of the weights."""
    if child.train.seed != parent.train.seed:
        raise UserError("a fork keeps its parent's seed, which draws its initial weights and batches; "
                        "start a new run to change the seed")
    if child.data != parent.data:
        raise UserError("a fork trains on its parent's corpus and tokenizer; start a new run to change the data")
    if expected_shapes(child.model) != expected_shapes(parent.model):
        raise UserError("this change alters the shapes of the weights, so the fork cannot start from its "
                        "parent's weights; start a new run instead")


def fork_config(parent: Run, cfg: ExperimentConfig, step: int = 0) -> ExperimentConfig:
    """`cfg` as a fork of `parent` at `step` trains it (the parent's vocabulary), or the refusal that needs only the
    two configs and the parent's checkpoints, as one line: the Runs pane asks this before it spawns the child that
    writes the fork (a child that imports torch, ~1.5 s of CPU, only to refuse)."""
    cfg = cfg.replace(model=dataclasses.replace(cfg.model, vocab_size=parent.config.model.vocab_size))
    require_valid(cfg)  # as --config is, before a model of its shapes is built even on the meta device
    check_pairable(parent.config, cfg)
    if not changed_settings(parent.config, cfg):
        raise UserError("the fork changes no setting; pass the one to change (e.g. --set train.lr=3e-4)")
    if step > cfg.train.steps:
        raise RunError(f"the fork would train to step {cfg.train.steps:,}, before its fork step {step:,}")
    if step != 0 and step not in parent.checkpoint_steps():
        raise RunError(f"{parent.path} has no checkpoint at step {step} to fork from "
                       f"(it has {', '.join(map(str, parent.checkpoint_steps())) or 'none'})")
    return cfg


def fork_run(parent_dir: str | Path, run_dir: str | Path, cfg: ExperimentConfig, step: int = 0, *,
             text: str | None = None, dataset=None):
    """A Trainer for a new run at run_dir: the parent forked at `step` with config `cfg`. Everything is
    checked before the run is written, in one piece, by `create_run`."""
    from ..text.data import Dataset
    from ..training.trainer import Trainer

    parent = Run(parent_dir)
    run_dir = check_target(run_dir)
    cfg = fork_config(parent, cfg, step)
    changed = changed_settings(parent.config, cfg)
    report(0, STAGES, "stages")
    # the parent's tokenizer, as a resume keeps its run's: fitting one on the corpus gave an imported GPT-2 a
    # vocabulary of its own, and its weights did not fit (a corpus gone is refused here)
    dataset = dataset or Dataset.build(cfg.data, cfg.model.n_ctx, text, tokenizer=parent.tokenizer)
    report(1, STAGES, "stages")
    skipped: list[str] = []
    if step == 0:
        start = Trainer(cfg, text=text, dataset=dataset)  # the fork before its first step, on no disk
        start.model.load_state_dict(parent.load_weights(0))  # in place: its state dict's views stay valid
        weights, state, carried = start.weights_copy(), start._state(), "fresh"
        # the parent's probe batch, on which G is measured, so that the pair's coefficients differ by the setting
        # alone: an imported GPT-2's comes from the importer, not from the fresh trainer's draw, and its fork's
        # G at step 0 differed from the parent's (‖G‖ of blocks.0.W_K 0.0955 against 0.101, issue 37's walk)
        same = (cfg.model.n_ctx, cfg.train.probe_batch) == (parent.config.model.n_ctx, parent.config.train.probe_batch)
        probe = parent.probe() if same else start.probe
    else:
        weights, state = parent.load_checkpoint(step)
        state = dict(state, best_val=float("inf"))  # the fork's best is its own from here on
        carried, probe = adapt_optimizer(state, cfg), parent.probe()
        Trainer(cfg, text=text, dataset=dataset)._restore(weights, state)  # a state that does not fit: refused now
    record = {"parent": str(parent.path.resolve()), "step": step, "changed": changed, "optimizer_state": carried}

    def fill(folder: Path) -> None:
        if step:
            skipped.extend(_copy_history(parent, folder, step))
        atomic_write_text(folder / FORK, json.dumps(record, ensure_ascii=False, indent=1))

    report(2, STAGES, "stages")
    create_run(run_dir, cfg, parent.tokenizer, probe, weights, step=step, state=state, fill=fill)
    report(3, STAGES, "stages")
    trainer = Trainer.resume(run_dir, text=text, dataset=dataset)
    trainer.warnings = [*trainer.warnings, *skipped]
    report(STAGES, STAGES, "stages")
    return trainer


def fork_into(parent_dir: str | Path, run_dir: str | Path, cfg: ExperimentConfig, step: int = 0) -> list[str]:
    """fork_run as the app runs it, in a child process (engine/child_job.py): the fork is written and shown to
    resume; its warnings are returned (the trainer stays in the child). A cancel ends the child: what
    create_run had begun is under a hidden name, which create.sweep_stale removes."""
    return list(fork_run(parent_dir, run_dir, cfg, step).warnings)


def _copy_history(parent: Run, folder: Path, step: int) -> list[str]:
    """The parent's logged rows and snapshots up to `step`, copied into the fork's `folder`; a log or a
    snapshot that is not a regular file of the parent's own (a link, a device, oversized) is skipped and
    named."""
    skipped = []
    for name in LOGS:
        try:
            check_inside(parent.path, parent.path / name)  # a link's rows are not the parent's own
        except UnsafeFileError as e:
            skipped.append(f"the parent's {name} was not copied: {e}")
            continue
        rows, _ = read_jsonl(parent.path / name)
        atomic_write_text(folder / name, "".join(json.dumps(r, ensure_ascii=False) + "\n"
                                                 for r in rows if r["step"] <= step))
    for s in parent.snapshot_steps():
        if s >= step:
            continue  # the fork's own snapshot at `step` is written from the checkpoint's weights
        name = f"{step_name(s)}.safetensors"
        for each in (name, name + SIDECAR):
            src = parent.path / SNAPSHOTS / each
            if each != name and not src.exists():
                continue  # a snapshot from before checksums
            try:
                check_inside(parent.path, src)
                copy_regular(src, folder / SNAPSHOTS / each, WEIGHTS_CAP, "snapshot")
            except (OSError, UnsafeFileError) as e:
                (folder / SNAPSHOTS / name).unlink(missing_ok=True)
                skipped.append(f"the parent's {SNAPSHOTS}/{each} was not copied: {_why(e)}")
                break
    return skipped


def _why(e: OSError | UnsafeFileError) -> str:
    return str(e) if isinstance(e, UnsafeFileError) else (e.strerror or str(e))


def fork_record(run_dir: str | Path) -> dict | None:
    """The fork.json of a run made by fork_run, or None for a run that is not a fork."""
    try:
        d = parse_json(read_text(Path(run_dir) / FORK, JSON_CAP, "fork record"), "fork record")
    except (OSError, ValueError):
        return None
    return d if isinstance(d, dict) else None
