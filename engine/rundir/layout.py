"""The run directory's names (docs/run-directory.md): its files and folders, the steps' names, the metrics a row
may hold, and the error a run that cannot be used raises. No torch here: the run browser and the window's start
read only these.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import UserError
from .lock import LOCK_FILE

CONFIG, TOKENIZER, PROBE = "config.toml", "tokenizer.json", "probe.json"
METRICS, SAMPLES = "metrics.jsonl", "samples.jsonl"
UPDATES = "updates.jsonl"  # each weight's update-to-weight ratio at the steps it was measured
LOGS = (METRICS, SAMPLES, UPDATES)  # the logs a run appends to, one JSON object a line, each with its step
CHECKPOINTS, SNAPSHOTS = "checkpoints", "snapshots"
MODEL_FILE, STATE_FILE, BEST, INDEX = "model.safetensors", "state.pt", "best.json", "index.json"
DETERMINISM = "determinism.json"  # whether training repeats to the bit (engine/training/determinism.py)
IMPORT = "import.json"    # in an imported run: where its weights came from, and the step they came at
CHANGES = "changes.jsonl"  # each edit a continued run was trained on with, and the step it took effect at
NUMERIC = ("train_loss", "val_loss", "lr", "grad_norm", "tokens_per_s", "wall_s", "temperature",
           "train_bpc", "val_bpc")  # in rows
# what a run holds but its config.toml; a folder holding only these is a creation killed half-way
MADE_FILES = (TOKENIZER, PROBE, *LOGS, CHECKPOINTS, SNAPSHOTS, LOCK_FILE, DETERMINISM, IMPORT, CHANGES)


class RunError(UserError, ValueError):
    """A run directory, or a file in it, that cannot be used; one line for the user."""


def step_name(step: int) -> str:
    return f"step-{step:06d}"


def parse_step(name: str) -> int | None:
    stem = name.removesuffix(".safetensors")
    if not stem.startswith("step-") or not stem[5:].isdigit():
        return None
    return int(stem[5:])


def steps_in(folder: Path, want_dir: bool) -> list[int]:
    """The steps saved in `folder`: checkpoint folders holding both their files (`want_dir`; one that lacks a file
    is not a checkpoint, and `incomplete_checkpoints` names it), else snapshot files."""
    if not folder.is_dir():
        return []
    found = []
    for p in folder.iterdir():
        s = parse_step(p.name)
        if s is None:
            continue
        if want_dir and (p / MODEL_FILE).exists() and (p / STATE_FILE).exists():  # read_checkpoint names a bad one
            found.append(s)
        elif not want_dir and p.exists() and p.suffix == ".safetensors":
            found.append(s)
    return sorted(found)


def incomplete_checkpoints(folder: Path) -> dict[int, str]:
    """Checkpoint folders (step-N) that lack one of their two files, with the file missing: skipped by every
    reader, and named."""
    if not folder.is_dir():
        return {}
    out = {}
    for p in folder.iterdir():
        s = parse_step(p.name)
        if s is None or not p.is_dir():
            continue
        missing = [n for n in (MODEL_FILE, STATE_FILE) if not (p / n).exists()]
        if missing:
            out[s] = " and ".join(missing)
    return dict(sorted(out.items()))


def steps_listed(steps: list[int]) -> str:
    """Saved steps as a message lists them: the first eight and the last."""
    if not steps:
        return "none"
    shown = ", ".join(map(str, steps[:8]))
    return shown + (f", … {steps[-1]}" if len(steps) > 8 else "")
