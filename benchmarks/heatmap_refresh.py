"""Heatmap refresh while training (issue 5, docs/figures.md: 4 layers × 4 heads × 64×64, ≥ 10 a second,
training tokens/s ≥ 0.9× the same training with the pane hidden).

`nanogpt-cpu` trains on ../shared/data/tinyshakespeare.txt (else the bundled corpus) through the app's
TrainingController, as Train starts it (a run folder in a temporary runs folder), with the HeatmapsPane on screen
showing a prompt of 64 characters (a 64 × 64 tile per head). Phases alternate in one process so drift and
neighbours' load fall on both sides:

    hidden         the pane is hidden: it asks for no weights, so the worker copies none
    every 10       the pane shows the grid and refreshes every 10 steps (its default)
    every 1        it refreshes every step (the most a user can ask for; the pane still draws at most
                   MAX_REFRESH_HZ grids a second while training)

Then, still training, the pane's whole refresh path is driven back to back for a while, past the pane's own cap:
each answer drawn hands the view the newest published copy and the other of two prompts of one length (so a new
question even when training published nothing newer), the window's asker asks the analysis process for the
prompt's attention, and the answer is drawn (the grid every time, the chosen head's views and the table at
DETAIL_HZ, as while training). That is its refresh rate, counted as answers drawn and as frames the grid painted.
Prints tokens/s of each phase, their ratio and the refresh rates.

    python benchmarks/heatmap_refresh.py [--seconds 4] [--rounds 6] [--threads N]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QEvent, QEventLoop, QObject, QSettings, QTimer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPUS = ROOT.parent / "shared" / "data" / "tinyshakespeare.txt"
PROMPT = "First Citizen: Before we proceed any further, hear me speak. All"  # 64 characters
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

    tmp = Path(tempfile.mkdtemp(prefix="heatmap-refresh-"))
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp / "settings"))
    from engine.configs.presets import load_preset
    from gui import analysis, settings
    from gui.app import make_application
    from gui.controller import TrainingController
    from gui.panes.heatmaps import HeatmapsPane
    from gui.session import Session

    app = make_application(sys.argv[:1])  # noqa: F841 (the application the widgets need)
    settings.set_runs_root(tmp / "runs")
    cfg = load_preset("nanogpt-cpu")
    if args.threads is not None:
        cfg = cfg.replace(train=dataclasses.replace(cfg.train, torch_threads=args.threads))
    if CORPUS.is_file():
        cfg = cfg.replace(data=dataclasses.replace(cfg.data, corpus=str(CORPUS)))
    session = Session(cfg)
    controller = TrainingController(session)
    pane = HeatmapsPane(session)
    pane.resize(1400, 900)
    pane.view.prompt = PROMPT
    frames = PaintCounter(pane.attention.grid.view.viewport())
    steps: list[float] = []
    session.sig_step_reported.connect(lambda _report: steps.append(time.perf_counter()))
    session.request_training("train")
    pane.show()  # the first answer starts the analysis process (torch imported there): not in a phase
    started = time.perf_counter()
    while not steps or "attention" not in pane.view.results:
        if time.perf_counter() - started > 300:
            raise SystemExit("no step or no attention answered in 5 minutes")
        wait(0.1)
    tokens_per_step = cfg.train.batch_size * cfg.model.n_ctx

    def phase(every: int | None) -> tuple[float, float, float]:
        """Train for a while with the pane hidden (None) or refreshing every `every` steps."""
        if every is not None:
            pane.view.refresh_every = every
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

    # The refresh path back to back: each answer drawn asks for the next, from the newest published weights.
    pane.view.refresh_every = 1
    pane.show()
    prompts = (PROMPT, PROMPT[:-1] + "!")
    done = {"n": 0}

    def again(name: str) -> None:
        if name == "results":  # drawn already: the pane heard it first
            done["n"] += 1
            pane.view.update(live=session.workspace.live, prompt=prompts[done["n"] % 2])

    pane.view.changed.connect(again)
    wait(1.0)
    n0, f0, c0, t0 = len(steps), frames.count, done["n"], time.perf_counter()
    wait(args.seconds)
    dt = time.perf_counter() - t0
    stress = ((len(steps) - n0) * tokens_per_step / dt, (frames.count - f0) / dt, (done["n"] - c0) / dt)
    pane.view.changed.disconnect(again)
    prompt_tokens = len(pane.view.prompt)
    controller.shutdown()
    session.asker.close()
    analysis.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)

    hidden = statistics.median(r[0] for r in results["hidden"])
    print(f"nanogpt-cpu ({cfg.model.n_layer} layers × {cfg.model.n_head} heads, context {cfg.model.n_ctx}), "
          f"{args.rounds} rounds × {args.seconds:.0f} s per phase, prompt of {prompt_tokens} tokens, "
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
