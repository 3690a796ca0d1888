"""The run browser's figure (issue 15): listing 200 runs takes under 0.5 s, printed as a ratio to that goal.

One short run is trained (checkpoints, snapshots, a metrics log of every step), copied 200 times into a
temporary folder, and `list_runs` is timed over it: the median of several listings, the first (cold
directory cache on a fresh folder) printed apart. Also printed, as a reference in the same process: the
cost of reading the same runs whole with `Run` (what a listing must not do).

    python benchmarks/run_list.py [--runs 200] [--steps 300] [--reps 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GOAL_S = 0.5


def make_run(path: Path, steps: int) -> None:
    from engine.configs.config import DataConfig, ExperimentConfig, ModelConfig, TrainConfig
    from engine.text.corpus import shakespeare_text
    from engine.training.trainer import Trainer

    cfg = ExperimentConfig(name="bench", model=ModelConfig(n_layer=1, n_head=2, d_model=32, d_ff=64, n_ctx=16),
                           train=TrainConfig(steps=steps, batch_size=4, eval_every=50, eval_batches=2,
                                             checkpoint_every=100, snapshot_every=25, sample_tokens=16,
                                             torch_threads=1, device="cpu"),
                           data=DataConfig(corpus="bench"))
    list(Trainer(cfg, path, text=shakespeare_text()[:40_000]).steps())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    from engine.rundir.listing import list_runs
    from engine.rundir.runs import Run

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "runs"
        make_run(Path(tmp) / "seed", args.steps)
        for i in range(args.runs):
            shutil.copytree(Path(tmp) / "seed", root / f"run-{i:03d}")
        t0 = time.perf_counter()
        n = len(list_runs(root))
        first = time.perf_counter() - t0
        times = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            list_runs(root)
            times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for p in sorted(root.iterdir()):
            Run(p).metrics()
        whole = time.perf_counter() - t0
    med = statistics.median(times)
    print(f"listed {n} runs of {args.steps} steps: first {first * 1e3:.0f} ms, median {med * 1e3:.0f} ms "
          f"= {med / GOAL_S:.2f}x the {GOAL_S} s goal ({'met' if med <= GOAL_S else 'MISSED'})")
    print(f"reading the same runs whole with Run: {whole * 1e3:.0f} ms ({whole / med:.1f}x the listing)")
    return 0 if med <= GOAL_S else 1


if __name__ == "__main__":
    sys.exit(main())
