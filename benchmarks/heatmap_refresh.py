"""Heatmap refresh while training (issue 5; DESIGN §7: 4 layers × 4 heads × 64×64, ≥ 10 refreshes a second,
training tokens/s ≥ 0.9× the same training with the pane hidden).

`nanogpt-cpu` trains on ../shared/data/tinyshakespeare.txt (else the bundled corpus) in the app's
TrainingWorker, wired to a Session as the controller wires it, with the HeatmapsPane on screen. Phases
alternate in one process so drift and neighbours' load fall on both sides:

    hidden    the pane is hidden: it asks for no weights, so the worker copies none
    visible   the pane shows the grid and refreshes every step (the most a user can ask for)

Then, still training, the pane's whole refresh path (attention for the prompt on a pool thread, then the
grid, the four detail views and the summary table on the GUI thread) is driven back to back for a while:
that is its refresh rate, counted as frames the grid actually painted. Prints tokens/s of each phase,
their ratio and the refresh rates.

    /work/venv/bin/python benchmarks/heatmap_refresh.py [--seconds 4] [--rounds 8]
"""

from __future__ import annotations

import argparse
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
    ap.add_argument("--rounds", type=int, default=8, help="hidden/visible pairs, in ABBA order")
    args = ap.parse_args()

    from engine.presets import load_preset
    from engine.trainer import Trainer
    from gui import theme
    from gui.panes.heatmaps import HeatmapsPane
    from gui.panes.heatmaps_compute import Request, Source
    from gui.session import Session
    from gui.worker import TrainingWorker

    app = QApplication(sys.argv[:1])
    theme.apply_theme(app, "dark")
    cfg = load_preset("nanogpt-cpu")
    text = CORPUS.read_text(encoding="utf-8") if CORPUS.is_file() else None
    session = Session(cfg)
    pane = HeatmapsPane(session)
    pane.resize(1400, 900)
    pane.refresh_every.setValue(1)
    frames = PaintCounter(pane.attention.grid._view.viewport())

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

    def phase(visible: bool) -> tuple[float, float, float]:
        pane.setVisible(visible)
        wait(1.0)  # let the switch settle
        n0, f0, t0 = len(steps), frames.count, time.perf_counter()
        wait(args.seconds)
        dt = time.perf_counter() - t0
        return (len(steps) - n0) * tokens_per_step / dt, (frames.count - f0) / dt, (len(steps) - n0) / dt

    results = {"hidden": [], "visible": []}
    for i in range(args.rounds):  # ABBA order: a steady drift falls on both sides alike
        for mode in (("hidden", "visible") if i % 2 == 0 else ("visible", "hidden")):
            results[mode].append(phase(mode == "visible"))

    # The refresh path back to back: each finished result asks for the next, from the newest weights.
    pane.show()
    done = {"n": 0}

    def again(*_):
        done["n"] += 1
        src = Source(session.weights_step, session.config.model, weights=dict(session.weights))
        pane._job.submit(("attention", ("bench", done["n"])), pane._computer,
                         Request("attention", src, session.tokenizer, pane.state.prompt))

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
    visible = statistics.median(r[0] for r in results["visible"])
    print(f"nanogpt-cpu ({cfg.model.n_layer} layers × {cfg.model.n_head} heads, context {cfg.model.n_ctx}), "
          f"{args.rounds} rounds × {args.seconds:.0f} s per phase, prompt of {len(pane.state.prompt)} tokens, "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    for i, (h, v) in enumerate(zip(results["hidden"], results["visible"])):
        print(f"  round {i}: hidden {h[0]:7.0f} tokens/s | visible {v[0]:7.0f} tokens/s, grid {v[1]:5.2f} "
              f"frames/s at {v[2]:5.2f} steps/s | ratio {v[0] / h[0]:.3f}")
    pair = statistics.median(v[0] / h[0] for h, v in zip(results["hidden"], results["visible"]))
    print(f"training tokens/s, pane visible (refresh every step) / hidden: {visible / hidden:.3f} as the ratio "
          f"of medians, {pair:.3f} as the median of the rounds' ratios  (goal ≥ 0.9)")
    print(f"grid refreshes back to back while training: {stress[2]:.1f}/s computed and shown, "
          f"{stress[1]:.1f} frames/s painted (goal ≥ 10); training meanwhile {stress[0]:.0f} tokens/s "
          f"= {stress[0] / hidden:.3f} × hidden")
    return 0


if __name__ == "__main__":
    sys.exit(main())
