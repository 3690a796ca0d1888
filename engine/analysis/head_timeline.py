"""Head scores at every saved step of a run (`head_timeline`), cached on disk under RUN/cache/heads/.

Saved steps are the snapshots and checkpoints (engine/rundir/runs.py); each step's scores (`heads.HeadScoring` on
the run's fixed probes) are one .npz file, reused while the weights file it came from, the probes and the
score definitions (CACHE_VERSION) are unchanged, so a second look at a run is a read of small files.
A cache file that cannot be read is recomputed, never trusted. A step left unfinished keeps the parts scored so far
beside it (step-NNNNNN.part.npz, heads.HeadScoring.state) under the same stamp, and the next process goes on from
them: GPT-2 small's step is 41 parts, 10-30 minutes of CPU, and closing the app before its end had lost them all.

`TimelineScorer` gives the same timeline a time slice at a time, for the app's one analysis process: the 144
heads of GPT-2 small, ablations included, held that process for more than 100 s a step while the panes on
screen waited. Each `advance(slice_s)` reads what the cache holds, scores pieces of the first step missing
(heads.HeadScoring) until the slice is spent (at least one piece), and answers the steps complete so far with
what is left (`Scoring`); the GUI asks again, as a long question, until nothing is left. Each piece is reported
(engine/progress.py: parts of every saved step), which is also where a cancelled slice stops.
"""

from __future__ import annotations

import hashlib
import io
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..progress import report
from ..rundir.runs import Run, RunError, atomic_write_bytes, step_name
from ..training.device import analysis_device
from ..safe_io import UnsafeFileError, check_inside
from .cache import weights_fingerprint
from .head_roles import Role, roles_over
from .heads import SCORES, HeadProbes, HeadScoring, ablation_note, ablation_positions

CACHE_DIR = Path("cache") / "heads"
CACHE_VERSION = 2  # raise when a score's definition changes: older cache files are then recomputed
SLICE_S = 2.0      # what one background question may score before it answers (engine/analysis/questions.py)


@dataclass(frozen=True)
class Scoring:
    """What a timeline answered a slice at a time still lacks."""

    step: int          # the step being scored
    done: int          # its parts scored so far
    parts: int         # its parts in all (heads.HeadScoring: the traced forward, then the ablations)
    steps_left: int    # saved steps not scored yet, this one included

    def __str__(self) -> str:
        more = f"; {self.steps_left - 1} more step{'s' * (self.steps_left > 2)} after it" if self.steps_left > 1 else ""
        return f"Scoring heads at step {self.step}: part {self.done + 1} of {self.parts}{more}…"


@dataclass(frozen=True)
class HeadTimeline:
    """Every score of every head over the saved steps."""

    steps: list[int]
    values: dict[str, np.ndarray]  # score → (S, L, H)
    loss: np.ndarray               # (S,) loss on the probe batch
    induction_derived: bool        # the run predates stored induction probes: derived from its seed
    scoring: Scoring | None = None  # what is not scored yet (TimelineScorer), None when every step is
    ablation: str = ""             # what the ablation scores ran on, a sentence (heads.ablation_note)

    def upto(self, step: int) -> HeadTimeline:
        """The timeline up to and including `step` (a saved step)."""
        k = self.steps.index(step) + 1
        return HeadTimeline(self.steps[:k], {n: a[:k] for n, a in self.values.items()}, self.loss[:k],
                            self.induction_derived, ablation=self.ablation)

    def roles(self) -> list[Role]:
        """Roles at the last step, each with the step it formed at."""
        return roles_over(self.steps, self.values)


def head_timeline(run_dir: str | Path, progress: Callable[[int, int], None] | None = None) -> HeadTimeline:
    """Scores at every saved step of the run, computing only the steps missing from the cache: the
    `TimelineScorer`'s slices run to the end, one piece each, with `progress(steps done, steps)` after each."""
    return finish(TimelineScorer(run_dir), progress)


def finish(scorer: TimelineScorer, progress: Callable[[int, int], None] | None = None) -> HeadTimeline:
    """`scorer`'s slices run to the end (see head_timeline)."""
    while True:
        timeline = scorer.advance(slice_s=0.0)
        if timeline.scoring is None:
            return timeline
        if progress is not None:
            done = len(timeline.steps)
            progress(done, done + timeline.scoring.steps_left)


class TimelineScorer:
    """`head_timeline` a slice at a time (module docstring); RunAnalysis keeps one per run, and with it the
    step being scored, between questions."""

    def __init__(self, run_dir: str | Path):
        self.run = Run(run_dir)
        self._current: tuple[int, str, HeadScoring] | None = None  # (step, its cache stamp, the scoring)
        self._rows: dict[tuple[int, str], dict] = {}  # rows scored here (a read-only run's cache keeps none)

    def advance(self, slice_s: float = SLICE_S) -> HeadTimeline:
        run = self.run
        steps = run.saved_steps()
        if not steps:
            raise RunError(f"{run.path} has no saved weights yet")
        probe = run.probe()
        probes = HeadProbes.from_probe(probe)
        positions = ablation_positions(run.config.model, probes.x.shape[1])
        key = _key(probes, positions)
        deadline = time.monotonic() + slice_s
        rows, scoring, worked = {}, None, False
        for k, step in enumerate(steps):
            stamp = _stamp(run, step, key)
            row = self._known(step, stamp)
            if row is None and (not worked or time.monotonic() < deadline):
                def say(done: int, parts: int, k=k) -> None:
                    report(k * parts + done, len(steps) * parts, "parts")

                row, worked = self._score(step, stamp, probes, deadline, say), True
                if row is not None:
                    self._rows[(step, stamp)] = row
                    _write(run, _path(run, step), stamp, row)
            if row is None:
                part = self._current[2] if self._current and self._current[:2] == (step, stamp) else None
                left = sum(1 for s in steps[k:] if self._known(s, _stamp(run, s, key)) is None)
                scoring = Scoring(step, part.done if part else 0, part.parts if part else 1, left)
                break
            rows[step] = row
        done_steps = sorted(rows)
        values = {name: np.stack([rows[s][name] for s in done_steps]) if done_steps else np.zeros((0, 0, 0))
                  for name in SCORES}
        return HeadTimeline(done_steps, values, np.array([float(rows[s]["loss"]) for s in done_steps]),
                            probe.induction_derived, scoring, ablation_note(positions, probes.x.shape[1]))

    def _known(self, step: int, stamp: str) -> dict | None:
        got = self._rows.get((step, stamp))
        return got if got is not None else _read(_path(self.run, step), stamp)

    def _score(self, step: int, stamp: str, probes: HeadProbes, deadline: float,
               say: Callable[[int, int], None]) -> dict | None:
        """Score pieces of `step` until the deadline (one at least; building the model counts as one, GPT-2
        small's takes 8 s), saying (parts done, parts) after each: its row when finished, else None."""
        part_path = _part_path(self.run, step)
        if self._current is None or self._current[:2] != (step, stamp):
            model = self.run.build_model(step).to(analysis_device())
            scoring = HeadScoring(model, probes)
            state = _read(part_path, stamp, names=None)
            if state is not None:
                scoring.resume(state)  # the parts an earlier process scored (a state that does not fit: none)
            self._current = (step, stamp, scoring)
            say(scoring.done, scoring.parts)
            if time.monotonic() >= deadline:
                return None
        scoring = self._current[2]
        first = True  # one piece at least; none when a cancel came in the report after the last one
        try:
            while not scoring.finished and (first or time.monotonic() < deadline):
                scoring.advance()
                first = False
                say(scoring.done, scoring.parts)
        finally:
            if not scoring.finished and scoring.done:  # the slice's parts outlive this process (a cancel too)
                _write(self.run, part_path, stamp, scoring.state())
        if not scoring.finished:
            return None
        self._current = None
        _remove(self.run, part_path)
        scores = scoring.result()
        return {**scores.values, "loss": np.array(scores.loss)}


def _path(run: Run, step: int) -> Path:
    return run.path / CACHE_DIR / f"{step_name(step)}.npz"


def _part_path(run: Run, step: int) -> Path:
    """Where a step's unfinished scoring keeps the parts done (HeadScoring.state), under the same stamp."""
    return run.path / CACHE_DIR / f"{step_name(step)}.part.npz"


def _stamp(run: Run, step: int, key: str) -> str:
    return f"{key}:{weights_fingerprint(run.path, step)}"


def _write(run: Run, path: Path, stamp: str, row: dict) -> None:
    buf = io.BytesIO()
    np.savez(buf, stamp=np.array(stamp), **row)
    try:
        check_inside(run.path, path)  # never through a symlinked cache/ (issue 18)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, buf.getvalue())
    except (OSError, UnsafeFileError):
        pass  # a read-only run still shows its scores, computed afresh each time


def _read(path: Path, stamp: str, names: tuple[str, ...] | None = (*SCORES, "loss")) -> dict[str, np.ndarray] | None:
    """The arrays `names` of a cache file written under `stamp` (None: every array it holds, as a part file's
    state); None when it is missing, unreadable or of other weights, probes or scores."""
    try:
        with np.load(path, allow_pickle=False) as f:
            if str(f["stamp"]) != stamp:
                return None
            return {name: f[name] for name in (names or [n for n in f.files if n != "stamp"])}
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, EOFError):
        return None


def _remove(run: Run, path: Path) -> None:
    try:
        check_inside(run.path, path)
        path.unlink(missing_ok=True)
    except (OSError, UnsafeFileError):
        pass


def _key(probes: HeadProbes, positions: int) -> str:
    h = hashlib.sha256(f"{CACHE_VERSION}:{positions}".encode())
    for a in (probes.x, probes.y, probes.induction):
        h.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
    return h.hexdigest()[:16]
