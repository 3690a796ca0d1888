"""The run directory's names (docs/run-directory.md): its files and folders, the metrics a row may hold, and
the error a run that cannot be used raises. No torch here: the run browser and the window's start read
only these.
"""

from __future__ import annotations

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
