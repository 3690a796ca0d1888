"""Heatmap refresh while training (issue 5, docs/figures.md: 4 layers × 4 heads × 64×64, ≥ 10 a second,
training tokens/s ≥ 0.9× the same training with the pane hidden).

`nanogpt-cpu` trains on ../shared/data/tinyshakespeare.txt (else the bundled corpus) in the app's
TrainingWorker, wired to a Session as the controller wires it, with the HeatmapsPane on screen. Phases
alternate in one process so drift and neighbours' load fall on both sides:

    hidden         the pane is hidden: it asks for no weights, so the worker copies none
    every 10       the pane shows the grid and refreshes every 10 steps (its default)
    every 1        it refreshes every step (the most a user can ask for)

Then, still training, the pane's whole refresh path (attention for the prompt on a pool thread, then the
grid, the four detail views and the summary table on the GUI thread) is driven back to back for a while:
that is its refresh rate, counted as frames the grid actually painted. Prints tokens/s of each phase,
their ratio and the refresh rates.

    python benchmarks/heatmap_refresh.py [--seconds 4] [--rounds 6] [--threads N]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QEvent, QEventLoop, QObject, Qt, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPUS = ROOT.parent / "shared" / "data" / "tinyshakespeare.txt"
QUEUED = Qt.ConnectionType.QueuedConnection
MODES = ["hidden", 10, 1]  # the pane hidden; refreshing every 10 steps (the default); every step


class PaintCounter(QObject):
    def __init__(self, widget):
        super().__init__()
        self.count = 0
        widget.installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:
        if event.type() == QEvent.Type.Paint:
            self.count += 1
        return False


def wait(seconds: float) -> None:
    """Run the event loop for a while; the GUI thread sleeps between events, as in the app."""
    loop = QEventLoop()
    QTimer.singleShot(int(seconds * 1000), loop.quit)
    loop.exec()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=4.0, help="length of each phase")
    ap.add_argument("--rounds", type=int, default=6, help="rounds of the three phases, order rotated")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch threads for training (default: the preset's, 0 = every core)")
    args = ap.parse_args()

    from engine.configs.presets import load_preset
    from engine.training.trainer import Trainer
    from gui import theme
    from gui.panes.heatmaps import HeatmapsPane
    from gui.panes.heatmaps.requests import Request, Source
    from gui.session import Session
    from gui.worker import TrainingWorker

    app = QApplication(sys.argv[:1])
    theme.apply_theme(app, "dark")
    cfg = load_preset("nanogpt-cpu")
    if args.threads is not None:
        cfg = cfg.replace(train=dataclasses.replace(cfg.train, torch_threads=args.threads))
    text = CORPUS.read_text(encoding="utf-8") if CORPUS.is_file() else None
    session = Session(cfg)
    pane = HeatmapsPane(session)
    pane.resize(1400, 900)
    frames = PaintCounter(pane.attention.grid.view.viewport())

    worker = TrainingWorker(lambda: Trainer(cfg, text=text), weights_every=0)
    steps: list[float] = []
    worker.sig_started.connect(lambda info: (session.set_tokenizer(info.tokenizer), session.set_config(info.config)),
                               QUEUED)
    worker.sig_step_reported.connect(lambda r: (steps.append(time.perf_counter()), session.report_step(r)), QUEUED)
    worker.sig_weights_ready.connect(session.publish_weights, QUEUED)
    worker.sig_state_changed.connect(session.set_training_state, QUEUED)
    session.sig_weights_wanted_changed.connect(lambda every: setattr(worker, "weights_every", every))
    worker.start()
    while not steps:
        wait(0.1)
    tokens_per_step = cfg.train.batch_size * cfg.model.n_ctx

    def phase(every: int | None) -> tuple[float, float, float]:
        """Train for a while with the pane hidden (None) or refreshing every `every` steps."""
        if every is not None:
            pane.refresh_every.setValue(every)
        pane.setVisible(every is not None)
        wait(1.0)  # let the switch settle
        n0, f0, t0 = len(steps), frames.count, time.perf_counter()
        wait(args.seconds)
        dt = time.perf_counter() - t0
        return (len(steps) - n0) * tokens_per_step / dt, (frames.count - f0) / dt, (len(steps) - n0) / dt

    results: dict[str | int, list] = {mode: [] for mode in MODES}
    for i in range(args.rounds):  # each round rotates the order, so drift and neighbours fall on all alike
        for mode in MODES[i % 3:] + MODES[:i % 3]:
            results[mode].append(phase(None if mode == "hidden" else mode))

    # The refresh path back to back: each finished result asks for the next, from the newest weights.
    pane.show()
    done = {"n": 0}

    def again(*_):
        done["n"] += 1
        src = Source(session.weights_step, session.config.model, weights=session.weights)
        pane._job.submit(("attention", ("bench", done["n"])),
                         *Request("attention", src, session.tokenizer, pane.state.prompt).call())

    pane._job.sig_done.connect(lambda key, result: pane.attention.show_result(result) or again())
    wait(1.0)
    again()
    n0, f0, c0, t0 = len(steps), frames.count, done["n"], time.perf_counter()
    wait(args.seconds)
    dt = time.perf_counter() - t0
    stress = ((len(steps) - n0) * tokens_per_step / dt, (frames.count - f0) / dt, (done["n"] - c0) / dt)
    worker.stop()
    while not worker.wait(10):
        wait(0.05)

    hidden = statistics.median(r[0] for r in results["hidden"])
    print(f"nanogpt-cpu ({cfg.model.n_layer} layers × {cfg.model.n_head} heads, context {cfg.model.n_ctx}), "
          f"{args.rounds} rounds × {args.seconds:.0f} s per phase, prompt of {len(pane.state.prompt)} tokens, "
          f"training on {cfg.train.torch_threads or 'every'} torch thread(s), "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    for i in range(args.rounds):
        cells = [f"{mode if mode == 'hidden' else f'every {mode}'}: {results[mode][i][0]:6.0f} tok/s "
                 f"{results[mode][i][1]:5.2f} frames/s" for mode in MODES]
        print(f"  round {i}: " + " | ".join(cells))
    for mode in MODES[1:]:
        rows = results[mode]
        pairs = [r[0] / h[0] for h, r in zip(results["hidden"], rows) if h[0] > 0]
        if not pairs or hidden == 0:
            print(f"every {mode} step(s): training made no step in a hidden phase; the machine is too busy")
            continue
        pair = statistics.median(pairs)
        print(f"pane visible, refreshing every {mode} step(s): {statistics.median(r[0] for r in rows):.0f} "
              f"tokens/s vs {hidden:.0f} hidden = {statistics.median(r[0] for r in rows) / hidden:.3f} (ratio of "
              f"medians), {pair:.3f} (median of the rounds' ratios); grid "
              f"{statistics.median(r[1] for r in rows):.1f} frames/s  (goal ≥ 0.9)")
    print(f"grid refreshes back to back while training: {stress[2]:.1f}/s computed and shown, "
          f"{stress[1]:.1f} frames/s painted (goal ≥ 10); training meanwhile {stress[0]:.0f} tokens/s "
          f"= {stress[0] / hidden if hidden else float('nan'):.3f} × hidden")
    return 0


if __name__ == "__main__":
    sys.exit(main())
