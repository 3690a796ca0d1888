"""Head scores' figures (issue 14), printed as ratios to their goals, measured in one process:

1. all scores of every head of `nanogpt-cpu` (4 blocks × 4 heads, d_model 128, context 64) at one set of
   weights, on its 4 × 64 probe batch and 4 × 64 induction probe, against one training step of the same
   model (forward + backward + AdamW on its batch of 12 × 64), alternating, medians. Goal: ≤ 2×.
2. the whole timeline (`head_timeline`) of a run: the first time (cache cleared) and again (cached).
   Goal for a 2000-step nanogpt-cpu run with 40 snapshots: ≤ 10 s first, instant after. Without --run a
   short nanogpt-cpu run is trained here (--steps, --snapshot-every) and the first-time cost is also
   printed scaled to 40 snapshots; give --run DIR to time a real 2000-step run's own snapshots.

    python benchmarks/heads.py [--reps 7] [--run DIR | --steps 60 --snapshot-every 10] [--keep DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

STEP_GOAL, TIMELINE_GOAL, SNAPSHOTS_GOAL = 2.0, 10.0, 40


def one_snapshot(reps: int) -> None:
    import torch

    from engine.analysis.heads import HeadProbes, head_scores
    from engine.text.corpus import shakespeare_text
    from engine.text.data import Dataset
    from engine.model.gpt import GPT
    from engine.configs.presets import load_preset
    from engine.model.probes import induction_probe
    from engine.training.trainer import make_optimizer

    cfg = load_preset("nanogpt-cpu")
    data = Dataset.build(cfg.data, cfg.model.n_ctx, shakespeare_text())
    m = dataclasses.replace(cfg.model, vocab_size=data.tokenizer.vocab_size)
    t = cfg.train
    torch.manual_seed(0)
    model = GPT(m)
    opt = make_optimizer(model, t)
    gen = torch.Generator().manual_seed(0)
    x, y = data.fixed_batch(t.probe_batch, m.n_ctx, t.seed)
    probes = HeadProbes(x, y, induction_probe(m.vocab_size, m.n_ctx, t.seed, t.probe_batch))

    def train_step():
        model.train()
        bx, by = data.get_batch("train", t.batch_size, m.n_ctx, gen)
        _, loss = model(bx, by)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), t.grad_clip)
        opt.step()

    train_step(), head_scores(model, probes)  # warm both paths
    steps, scores = [], []
    for _ in range(reps):
        steps.append(_timed(train_step))
        scores.append(_timed(lambda: head_scores(model, probes)))
    s, h = statistics.median(steps), statistics.median(scores)
    print(f"one training step (batch {t.batch_size}×{m.n_ctx}): {1e3 * s:.1f} ms; all head scores at one "
          f"snapshot ({m.n_layer}×{m.n_head} heads): {1e3 * h:.1f} ms; ratio {h / s:.2f}× "
          f"(goal ≤ {STEP_GOAL}×: {'met' if h / s <= STEP_GOAL else 'NOT met'}); median of {reps}")


def train_run(path: Path, steps: int, every: int) -> Path:
    from engine.text.corpus import shakespeare_text
    from engine.configs.presets import load_preset
    from engine.training.trainer import Trainer

    cfg = load_preset("nanogpt-cpu")
    cfg = cfg.replace(train=dataclasses.replace(cfg.train, steps=steps, snapshot_every=every,
                                                checkpoint_every=steps, eval_every=steps, sample_tokens=8))
    list(Trainer(cfg, path, text=shakespeare_text()).steps())
    return path


def timeline(run_dir: Path) -> None:
    from engine.analysis.head_timeline import CACHE_DIR, head_timeline

    shutil.rmtree(run_dir / CACHE_DIR, ignore_errors=True)
    first = _timed(lambda: head_timeline(run_dir))
    again = _timed(lambda: head_timeline(run_dir))
    n = len(head_timeline(run_dir).steps)
    scaled = first * SNAPSHOTS_GOAL / n
    print(f"timeline of {n} saved steps: first {first:.2f} s ({1e3 * first / n:.0f} ms a step; scaled to "
          f"{SNAPSHOTS_GOAL} snapshots {scaled:.1f} s, goal ≤ {TIMELINE_GOAL} s: "
          f"{'met' if scaled <= TIMELINE_GOAL else 'NOT met'}); cached {1e3 * again:.0f} ms")


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--run", type=Path, help="time the timeline of this run (its cache is cleared first)")
    ap.add_argument("--steps", type=int, default=60, help="steps of the run trained here without --run")
    ap.add_argument("--snapshot-every", type=int, default=10)
    ap.add_argument("--keep", type=Path, help="train the run into this folder and keep it")
    args = ap.parse_args()
    one_snapshot(args.reps)
    if args.run is not None:
        timeline(args.run)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "run"
        timeline(train_run(path, args.steps, args.snapshot_every))
    return 0


if __name__ == "__main__":
    sys.exit(main())
