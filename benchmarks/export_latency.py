"""How late the GUI thread's event loop runs while a GIF of a coefficient over every saved step is exported
(issue 37): through the app's export queue, which writes in a process of its own (engine/export_process.py),
alternating with the way it was before, the same export written on a thread of Qt's pool in this process. A
10 ms timer records the gaps between its ticks while each export runs; printed: the gaps' 99th percentile and
the longest against the goals (50 ms and 100 ms), and the seconds each export took.

The run is trained here first (`--steps` steps of a small GPT, a snapshot every `--every`), so the GIF has
steps/every + 1 frames; its coefficient records are computed by each export (a fresh copy of the run each time,
so neither way finds the other's cache).

    python benchmarks/export_latency.py [--rounds 2] [--steps 200] [--every 10]
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GOAL_P99_MS, GOAL_MAX_MS, TICK_MS = 50.0, 100.0, 10


def train_run(folder: Path, steps: int, every: int) -> Path:
    from engine.configs.config import DataConfig, ExperimentConfig, ModelConfig, TrainConfig
    from engine.training.trainer import Trainer

    cfg = ExperimentConfig(name="export-latency", model=ModelConfig(n_layer=2, n_head=4, d_model=64, d_ff=256,
                                                                    n_ctx=64),
                           train=TrainConfig(steps=steps, batch_size=8, warmup_steps=10, eval_every=steps,
                                             snapshot_every=every, checkpoint_every=steps, device="cpu"),
                           data=DataConfig())
    for _ in Trainer(cfg, folder / "run").steps():
        pass
    return folder / "run"


def probed(app, start, done) -> tuple[float, list[float]]:
    from PySide6.QtCore import QTimer

    gaps, last = [], [time.perf_counter()]

    def tick():
        now = time.perf_counter()
        gaps.append(1000 * (now - last[0]))
        last[0] = now

    timer = QTimer(interval=TICK_MS)
    timer.timeout.connect(tick)
    t0 = time.perf_counter()
    timer.start()
    last[0] = time.perf_counter()
    start()
    while not done():
        app.processEvents()
        time.sleep(0.001)
    timer.stop()
    return time.perf_counter() - t0, gaps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--every", type=int, default=10)
    args = ap.parse_args()

    from PySide6.QtCore import QThreadPool
    from PySide6.QtWidgets import QApplication

    from engine.coefficients.export import export_run_coefficient
    from engine.progress import reporting
    from engine.safe_io import write_whole
    from gui.exports import ExportRequest, Exports
    from ui_latency import percentile

    app = QApplication.instance() or QApplication(sys.argv[:1])
    tmp = Path(tempfile.mkdtemp(prefix="export-latency-"))
    trained = train_run(tmp, args.steps, args.every)
    weight = "blocks.1.W_Q"
    rows = []
    for r in range(args.rounds):
        for way in (("process", "thread") if r % 2 == 0 else ("thread", "process")):
            run = tmp / f"{way}-{r}"
            shutil.copytree(trained, run)
            out = tmp / f"{way}-{r}.gif"
            write = functools.partial(export_run_coefficient, run_dir=str(run), weight=weight)
            if way == "process":
                exports = Exports()
                ended = []
                exports.sig_idle.connect(lambda: ended.append(True))
                seconds, gaps = probed(app, lambda: exports.submit(ExportRequest(out, write)), lambda: bool(ended))
            else:
                pool, ended = QThreadPool.globalInstance(), []

                def work():
                    write_whole(out, lambda at: reporting(lambda *_: None, write, at))
                    ended.append(True)

                seconds, gaps = probed(app, lambda: pool.start(work), lambda: bool(ended))
            assert out.is_file(), f"{way}: nothing written"
            rows.append((way, seconds, percentile(gaps, 0.99), max(gaps)))
    print(f"GIF of {weight} over {args.steps // args.every + 1} saved steps; event-loop gaps (goals: p99 ≤ "
          f"{GOAL_P99_MS:.0f} ms, longest ≤ {GOAL_MAX_MS:.0f} ms)")
    for way, seconds, p99, worst in rows:
        print(f"  {way:8s} {seconds:6.2f} s; gap p99 {p99:6.1f} ms ({p99 / GOAL_P99_MS:.2f} of the goal), "
              f"longest {worst:6.1f} ms ({worst / GOAL_MAX_MS:.2f} of the goal)")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
