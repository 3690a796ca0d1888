"""The weight pane's figures (issue 7), printed as ratios to their goals, measured in one process:

1. scrubbing: a 128×128 coefficient across 100 snapshots, cache warm, renders ≥ 20 frames per second.
   A run of a 1-block GPT with d_model 128 is trained for 100 steps with a snapshot at every step; the
   pane computes every step's record (its cache: memory and RUN/cache), then a timer scrubs the timeline
   back and forth faster than the pane's frame cap and we count the frames the G heatmap painted. Also
   printed: the cost of one frame (record to screen, repaint of the three heatmaps) when driven back to
   back, i.e. the frame rate without the cap.
2. the first computation of all route classes of one GPT weight at one step costs ≤ 10× one autograd
   backward: nanogpt-cpu (4 blocks, 4 heads, d_model 128, context 64) on a 4 × 64 probe batch in float32,
   binding a new snapshot and evaluating the weight's route classes, against forward + backward of the
   same model on the same batch, alternating, medians. The derivation (once per architecture, cached)
   is timed apart.

    python benchmarks/weight_scrub.py [--seconds 3] [--reps 7] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SCRUB_GOAL, COST_GOAL = 20.0, 10.0
WEIGHTS = ("blocks.0.W_Q", "blocks.0.W_in", "blocks.2.W_V", "W_E")


def make_run(path: Path):
    from engine.configs.config import DataConfig, ExperimentConfig, ModelConfig, TrainConfig
    from engine.text.corpus import shakespeare_text
    from engine.rundir.runs import Run
    from engine.training.trainer import Trainer

    cfg = ExperimentConfig(
        name="weight-scrub", model=ModelConfig(n_layer=1, n_head=4, d_model=128, d_ff=256, n_ctx=32),
        train=TrainConfig(steps=99, batch_size=4, warmup_steps=5, eval_every=1000, eval_batches=1,
                          checkpoint_every=1000, snapshot_every=1, sample_tokens=8, probe_batch=2,
                          device="cpu"),
        data=DataConfig(corpus="bundled"))
    list(Trainer(cfg, path, text=shakespeare_text()[:50_000]).steps())
    return Run(path)


def wait(seconds: float) -> None:
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    QTimer.singleShot(int(seconds * 1000), loop.quit)
    loop.exec()


def until(condition, timeout: float = 600) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise TimeoutError("the pane did not get there in time")
        wait(0.05)


class PaintCounter:
    def __init__(self, widget):
        from PySide6.QtCore import QEvent, QObject

        class Filter(QObject):
            def eventFilter(inner, obj, event):  # noqa: N805
                if event.type() == QEvent.Type.Paint:
                    self.count += 1
                return False

        self.count = 0
        self._filter = Filter()
        widget.installEventFilter(self._filter)


def scrub(run, seconds: float) -> tuple[int, float, float]:
    """(snapshots, frames painted per second while scrubbing, frames per second uncapped)."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from gui.app import make_application
    from gui.panes.weight import WeightPane
    from gui.session import Session

    make_application()
    session = Session()
    pane = WeightPane(session)
    pane.resize(1500, 950)
    pane.show()
    session.set_run(run)
    until(lambda: pane.view.table is not None)
    session.select_weight("blocks.0.W_Q")
    t0 = time.perf_counter()
    until(lambda: not pane.view.missing(session.workspace))  # every saved step answered
    print(f"  cache warmed: {len(pane.timeline.steps)} steps of a {pane.record().G.shape} weight computed in "
          f"{time.perf_counter() - t0:.1f} s (in the computing process)", flush=True)
    counter = PaintCounter(pane.G_map.view.viewport())
    direction = [1]

    def move():
        steps, step = pane.timeline.steps, pane.timeline.step()
        i = steps.index(step)
        if not 0 <= i + direction[0] < len(steps):
            direction[0] *= -1
        pane.timeline.step_by(direction[0])

    timer = QTimer()
    timer.setInterval(5)  # faster than the pane's cap: every frame the pane is willing to draw is drawn
    timer.timeout.connect(move)
    shown = []
    pane.G_map.image_item.sigImageChanged.connect(lambda: shown.append(pane.page.drawn.step))
    counter.count = 0
    t0 = time.perf_counter()
    timer.start()
    wait(seconds)
    timer.stop()
    elapsed = time.perf_counter() - t0
    painted = counter.count / elapsed
    # uncapped: one frame is the record to the three heatmaps, then a repaint of the pane
    frames, t0 = 0, time.perf_counter()
    steps = pane.timeline.steps
    while time.perf_counter() - t0 < seconds:
        session.workspace.select(step=steps[frames % len(steps)])
        pane.page.draw()
        pane.repaint()
        QApplication.processEvents()
        frames += 1
    uncapped = frames / (time.perf_counter() - t0)
    print(f"  {len(set(shown))} distinct steps shown while scrubbing", flush=True)
    pane.close()
    return len(steps), painted, uncapped


def classes_cost(reps: int) -> dict[str, tuple[float, float, float, float]]:
    """weight -> (median seconds for the classes at a new step, median seconds for one backward, ratio,
    seconds of the very first call for this weight, which also builds the architecture's pull-backs)."""
    import dataclasses

    import torch

    from engine.forms import Snapshot, derive
    from engine.model.gpt import GPT
    from engine.configs.presets import load_preset

    torch.set_num_threads(1)
    cfg = dataclasses.replace(load_preset("nanogpt-cpu").model, vocab_size=65)
    torch.manual_seed(0)
    x, y = torch.randint(65, (4, 64)), torch.randint(65, (4, 64))
    t0 = time.perf_counter()
    derive(cfg)
    print(f"  derivation (once per architecture, cached): {1000 * (time.perf_counter() - t0):.0f} ms")
    models = []
    for seed in range(reps + 1):  # a different snapshot each time: nothing of a step carries over
        torch.manual_seed(seed)
        m = GPT(cfg).eval()
        models.append((m, {k: v.detach().clone() for k, v in m.state_dict().items()}))
    out = {}
    for weight in WEIGHTS:
        t0 = time.perf_counter()
        Snapshot(cfg, models[0][1], x, y).classes(weight)  # the architecture's pull-backs, cached like derive
        first = time.perf_counter() - t0
        ours, ref = [], []
        for model, weights in models[1:]:
            t0 = time.perf_counter()
            Snapshot(cfg, weights, x, y).classes(weight)
            ours.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            model.zero_grad()
            _, loss = model(x, y)
            loss.backward()
            ref.append(time.perf_counter() - t0)
        a, b = statistics.median(ours), statistics.median(ref)
        out[weight] = (a, b, a / b, first)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=3.0, help="seconds of scrubbing (and of uncapped frames)")
    p.add_argument("--reps", type=int, default=7, help="snapshots timed per weight for the classes' cost")
    p.add_argument("--keep", metavar="DIR", help="make the 100-snapshot run here and keep it")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.keep) if args.keep else Path(tmp) / "run"
        print("1. scrubbing a 128×128 coefficient across 100 snapshots (cache warm)", flush=True)
        from engine.rundir.runs import Run

        run = Run(path) if (path / "config.toml").exists() else make_run(path)
        n, painted, uncapped = scrub(run, args.seconds)
        from gui.panes.weight.coefficient_page import MAX_FPS

        print(f"  {n} snapshots; painted {painted:.1f} frames/s while scrubbing (the pane caps at {MAX_FPS}); "
              f"uncapped {uncapped:.1f} frames/s")
        print(f"  ratio to the goal (≥ {SCRUB_GOAL:g} frames/s): {painted / SCRUB_GOAL:.2f}× "
              f"({'meets' if painted >= SCRUB_GOAL else 'misses'})")
    print(f"2. route classes of one weight at a new step vs one autograd backward (nanogpt-cpu, float32, "
          f"probe 4×64, 1 thread, medians of {args.reps})", flush=True)
    worst = 0.0
    for weight, (a, b, r, first) in classes_cost(args.reps).items():
        worst = max(worst, r)
        print(f"  {weight:14s} classes {1000 * a:7.1f} ms   backward {1000 * b:6.1f} ms   ratio {r:5.2f}×   "
              f"(first call of the architecture {1000 * first:.0f} ms = {first / b:.1f}×)")
    print(f"  worst ratio {worst:.2f}× (goal ≤ {COST_GOAL:g}×: {'meets' if worst <= COST_GOAL else 'misses'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
