"""Head scores at every saved step of a run (`head_timeline`), cached on disk under RUN/cache/heads/.

Saved steps are the snapshots and checkpoints (engine/rundir/runs.py); each step's scores (`heads.head_scores` on
the run's fixed probes) are one .npz file, reused while the weights file it came from, the probes and the
score definitions (CACHE_VERSION) are unchanged, so a second look at a run is a read of small files.
A cache file that cannot be read is recomputed, never trusted.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..rundir.runs import Run, RunError, atomic_write_bytes, step_name
from ..safe_io import UnsafeFileError, check_inside
from .cache import weights_fingerprint
from .head_roles import Role, roles_over
from .heads import SCORES, HeadProbes, head_scores

CACHE_DIR = Path("cache") / "heads"
CACHE_VERSION = 2  # raise when a score's definition changes: older cache files are then recomputed


@dataclass(frozen=True)
class HeadTimeline:
    """Every score of every head over the saved steps."""

    steps: list[int]
    values: dict[str, np.ndarray]  # score → (S, L, H)
    loss: np.ndarray               # (S,) loss on the probe batch
    induction_derived: bool        # the run predates stored induction probes: derived from its seed

    def upto(self, step: int) -> HeadTimeline:
        """The timeline up to and including `step` (a saved step)."""
        k = self.steps.index(step) + 1
        return HeadTimeline(self.steps[:k], {n: a[:k] for n, a in self.values.items()}, self.loss[:k],
                            self.induction_derived)

    def roles(self) -> list[Role]:
        """Roles at the last step, each with the step it formed at."""
        return roles_over(self.steps, self.values)


def head_timeline(run_dir: str | Path, progress: Callable[[int, int], None] | None = None) -> HeadTimeline:
    """Scores at every saved step of the run, computing only the steps missing from the cache."""
    run = Run(run_dir)
    steps = run.saved_steps()
    if not steps:
        raise RunError(f"{run.path} has no saved weights yet")
    probe = run.probe()
    probes = HeadProbes.from_probe(probe)
    key = _key(probes)
    rows = []
    for k, step in enumerate(steps):
        rows.append(_cached_or_computed(run, step, probes, key))
        if progress is not None:
            progress(k + 1, len(steps))
    values = {name: np.stack([r[name] for r in rows]) for name in SCORES}
    return HeadTimeline(steps, values, np.array([float(r["loss"]) for r in rows]), probe.induction_derived)


def _cached_or_computed(run: Run, step: int, probes: HeadProbes, key: str) -> dict[str, np.ndarray]:
    path = run.path / CACHE_DIR / f"{step_name(step)}.npz"
    stamp = f"{key}:{weights_fingerprint(run.path, step)}"
    cached = _read(path, stamp)
    if cached is not None:
        return cached
    scores = head_scores(run.build_model(step), probes)
    row = {**scores.values, "loss": np.array(scores.loss)}
    buf = io.BytesIO()
    np.savez(buf, stamp=np.array(stamp), **row)
    try:
        check_inside(run.path, path)  # never through a symlinked cache/ (issue 18)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, buf.getvalue())
    except (OSError, UnsafeFileError):
        pass  # a read-only run still shows its scores, computed afresh each time
    return row


def _read(path: Path, stamp: str) -> dict[str, np.ndarray] | None:
    try:
        with np.load(path, allow_pickle=False) as f:
            if str(f["stamp"]) != stamp:
                return None
            return {name: f[name] for name in (*SCORES, "loss")}
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, EOFError):
        return None


def _key(probes: HeadProbes) -> str:
    h = hashlib.sha256(str(CACHE_VERSION).encode())
    for a in (probes.x, probes.y, probes.induction):
        h.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
    return h.hexdigest()[:16]
