"""Whether a run's training repeats to the bit, recorded in the run and read where runs are compared.

On the CPU it does, at any thread count (GPT.forward looks the embedding up with F.embedding, whose
backward sums each row in index order; tests/engine/training/test_determinism.py; benchmarks/determinism.py
measures the cost). On CUDA a run repeats only with torch's deterministic algorithms in force
(`torch.use_deterministic_algorithms(True)`) and cuBLAS's workspace fixed (CUBLAS_WORKSPACE_CONFIG,
read when cuBLAS starts); GPT Explorer does not switch them on for the user, it records whether they
were. On MPS nothing is promised.

    RUN/determinism.json   {"sessions": [{"step": 0, "device": "cuda", "deterministic": false}, ...]}

Each training session that starts on another device, or with the other answer, adds one entry from its
first step. A run without the file predates the record: nothing is claimed about it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from ..rundir.layout import DETERMINISM as RECORD
from ..safe_io import parse_json, read_text

_CUBLAS_FIXED = (":4096:8", ":16:8")  # the two settings CUDA documents for reproducible cuBLAS


def is_deterministic(device) -> bool:
    """Whether training on `device` (a torch.device), as torch is set now, gives the same bits every time."""
    import torch

    if device.type == "cpu":
        return True
    if device.type == "cuda":
        return torch.are_deterministic_algorithms_enabled() and \
            os.environ.get("CUBLAS_WORKSPACE_CONFIG") in _CUBLAS_FIXED
    return False


def sessions(run_dir: str | Path) -> list[dict]:
    """The run's recorded sessions (empty when it has no record, or an unreadable one)."""
    try:
        d = parse_json(read_text(Path(run_dir) / RECORD, 64 * 1024, "determinism record"), RECORD)
    except (OSError, ValueError):
        return []
    rows = d.get("sessions") if isinstance(d, dict) else None
    return [r for r in rows if isinstance(r, dict) and type(r.get("step")) is int
            and isinstance(r.get("deterministic"), bool) and isinstance(r.get("device"), str)] \
        if isinstance(rows, list) else []


def record_session(run_dir: str | Path, step: int, device) -> None:
    """Note that training continues on `device` from `step` (kept short: only changes are added)."""
    from ..rundir.runs import atomic_write_text  # not at the top: the GUI thread imports this module

    now = {"step": step, "device": device.type, "deterministic": is_deterministic(device)}
    kept = [r for r in sessions(run_dir) if r["step"] < step]  # a resume rewrites what came after it
    if kept and {k: kept[-1][k] for k in ("device", "deterministic")} == \
            {k: now[k] for k in ("device", "deterministic")}:
        return
    atomic_write_text(Path(run_dir) / RECORD, json.dumps({"sessions": kept + [now]}))


def noise_note(run_dir: str | Path) -> str | None:
    """A sentence when the run's training did not repeat to the bit, else None."""
    loose = [r for r in sessions(run_dir) if not r["deterministic"]]
    if not loose:
        return None
    first = loose[0]
    return f"{Path(run_dir).name} trained on {first['device']} without deterministic kernels from step {first['step']}"


def comparison_note(run_dirs: Sequence[str | Path]) -> str | None:
    """What to say where runs are compared when some were not trained deterministically: their
    differences then include run-to-run noise, not only the settings that differ."""
    return noise_sentence([noise_note(d) for d in run_dirs])


def noise_sentence(notes: Sequence[str | None]) -> str | None:
    """`comparison_note` from the runs' `noise_note`s already read (no file is touched)."""
    notes = [n for n in notes if n]
    return "; ".join(notes) + ": a difference between these runs includes run-to-run noise" if notes else None
