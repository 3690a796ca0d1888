"""The induction lesson (issue 28): when its heads form, in steps and seconds, beside nanoGPT's 2000-step run.

    python benchmarks/lesson.py [--preset induction-lesson] [--ref-steps 2000] [--threads 1] [--keep DIR]

Trains the lesson preset with the Trainer as the app does (a run directory, snapshots every 25 steps) and,
taking turns with it in chunks of 25 steps in the same process, nanoGPT's recipe (engine.training.bench_reference's
BareLoop on the `nanogpt-cpu` preset) for --ref-steps steps. Then scores every head at every snapshot of the
lesson run (engine.analysis.head_timeline, as `gpt-explorer heads` does) and prints the roles with the step
each formed at, the lesson's training seconds up to each formation, and the ratio of the induction head's
time to the reference's. Goal: both heads formed in less time than nanoGPT's 2000-step run (ratio < 1).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engine.analysis.head_roles import ROLE_NAMES  # noqa: E402
from engine.analysis.head_timeline import head_timeline  # noqa: E402
from engine.training.bench_reference import CHUNK, BareLoop  # noqa: E402
from engine.text.data import Dataset  # noqa: E402
from engine.configs.presets import load_preset  # noqa: E402
from engine.configs.resolve import resolve  # noqa: E402
from engine.rundir.runs import Run  # noqa: E402
from engine.training.trainer import Trainer  # noqa: E402


def reference(threads: int) -> BareLoop:
    cfg = load_preset("nanogpt-cpu")
    cfg = cfg.replace(train=dataclasses.replace(cfg.train, torch_threads=threads))
    dataset = Dataset.build(cfg.data, cfg.model.n_ctx)
    return BareLoop(resolve(cfg, dataset), dataset)


def train_both(run_dir: Path, preset: str, ref_steps: int, threads: int) -> float:
    """Train the lesson and the reference in turns; returns the reference's training seconds."""
    cfg = load_preset(preset)
    lesson = Trainer(cfg.replace(train=dataclasses.replace(cfg.train, torch_threads=threads)), run_dir)
    ref, ref_s = reference(threads), 0.0
    torch.set_num_threads(threads)
    while ref.step < ref_steps or lesson.step < lesson.cfg.train.steps:
        if lesson.step < lesson.cfg.train.steps:
            for _ in lesson.steps(CHUNK):
                pass
        if ref.step < ref_steps:
            start = time.perf_counter()
            ref.run(min(CHUNK, ref_steps - ref.step))
            ref_s += time.perf_counter() - start
    return ref_s


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="induction-lesson")
    p.add_argument("--ref-steps", type=int, default=2000, help="steps of nanoGPT's recipe timed as the reference")
    p.add_argument("--threads", type=int, default=1, help="torch threads for both")
    p.add_argument("--keep", metavar="DIR", help="write the lesson run here (default: a temporary folder)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gpt-explorer-lesson-") as tmp:
        run_dir = Path(args.keep) if args.keep else Path(tmp) / "run"
        ref_s = train_both(run_dir, args.preset, args.ref_steps, args.threads)
        timeline = head_timeline(run_dir)
        wall = {r["step"]: r["wall_s"] for r in Run(run_dir).metrics()}
    print(f"nanoGPT's recipe: {args.ref_steps} steps in {ref_s:.1f} s ({args.threads} thread(s))")
    print(f"{args.preset}: {timeline.steps[-1]} steps in {wall[timeline.steps[-1]]:.1f} s; roles:")
    first: dict[str, float] = {}
    for role in timeline.roles():
        seconds = wall.get(role.formed, 0.0)
        first[role.score] = min(first.get(role.score, seconds), seconds)
        print(f"  {role.label} ({seconds:.1f} s; score {role.value:.2f})")
    for score in ("previous_token", "induction"):
        if score not in first:
            print(f"no {ROLE_NAMES[score]} head formed")
            return 1
    print(f"induction head formed after {first['induction']:.1f} s: {first['induction'] / ref_s:.3f} of "
          f"nanoGPT's {args.ref_steps}-step time (goal < 1 at 2000 steps)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
