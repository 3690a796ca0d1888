"""How long the GUI thread works between two ticks while the Weight pane is scrubbed (moved here from the
test suite: a timing is a measurement, not a test). Goal: at most 50 ms of GUI-thread CPU between ticks.
`--pane heatmaps` scrubs the Heatmaps pane's timeline instead (attention asked of the analysis process at
each move, the newest request winning).

A tiny run (tests/engine/test_coefficients.tiny_run) is opened in the Weight pane; a 15 ms timer scrubs its
timeline back and forth while a 5 ms timer probe takes, at every tick, the CPU time the GUI thread spent
since the last one. CPU time, not wall time: on a shared machine a wall gap also holds time the OS gave
to other processes. Cold (steps computed meanwhile) and warm (all in memory); printed as ratios to the goal.

    python benchmarks/gui_block.py [--seconds 2] [--pane weight|heatmaps]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GOAL_MS = 50.0


def wait_until(app, done, timeout_s: float = 60.0) -> None:
    end = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > end:
            raise SystemExit("timed out waiting for the Weight pane")
        app.processEvents()
        time.sleep(0.005)


def scrub_and_probe(app, pane, seconds: float) -> tuple[float, float, float]:
    """(most GUI-thread CPU between two ticks, longest wall gap, longest garbage collection), in ms."""
    from PySide6.QtCore import QTimer

    busy, walls, pauses, last, direction = [], [], [], [0.0, 0.0], [-1]
    probe, scrub = QTimer(), QTimer()
    probe.setInterval(5)
    scrub.setInterval(15)

    def tick():
        cpu, wall = time.thread_time(), time.perf_counter()
        busy.append(1000 * (cpu - last[0]))
        walls.append(1000 * (wall - last[1]))
        last[:] = cpu, wall

    def move():
        steps = pane.timeline.steps
        i = steps.index(pane.timeline.step())
        if not 0 <= i + direction[0] < len(steps):
            direction[0] *= -1
        pane.timeline.step_by(direction[0])

    def collected(phase, info, started=[0.0]):
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            pauses.append(1000 * (time.perf_counter() - started[0]))

    probe.timeout.connect(tick)
    scrub.timeout.connect(move)
    gc.collect()
    gc.callbacks.append(collected)
    last[:] = time.thread_time(), time.perf_counter()
    probe.start()
    scrub.start()
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.001)
    finally:
        probe.stop()
        scrub.stop()
        gc.callbacks.remove(collected)
    return max(busy[1:]), max(walls[1:]), max(pauses, default=0.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--pane", choices=("weight", "heatmaps"), default="weight")
    args = ap.parse_args()
    from PySide6.QtWidgets import QApplication

    from engine.rundir.runs import Run
    from gui.panes.weight import WeightPane
    from gui.session import Session
    from tests.engine.coefficients.test_coefficients import tiny_run

    app = QApplication.instance() or QApplication([])
    with tempfile.TemporaryDirectory() as tmp:
        run = tiny_run(Path(tmp) / "run")
        if args.pane == "heatmaps":
            return scrub_heatmaps(app, run, args.seconds)
        for warm, weight in ((False, "blocks.0.W_V"), (True, "blocks.0.W_K")):
            session = Session()
            pane = WeightPane(session)
            pane.resize(1400, 900)
            pane.show()
            session.set_run(Run(run.path))
            wait_until(app, lambda: pane.view.table is not None)
            session.select_weight(weight)
            wait_until(app, lambda: pane.record() is not None)
            if warm:  # every saved step answered: the view needs nothing more
                wait_until(app, lambda: not pane.view.missing(session.workspace))
            worst, wall, collection = scrub_and_probe(app, pane, args.seconds)
            print(f"{'warm' if warm else 'cold'}: GUI-thread CPU between ticks {worst:.0f} ms "
                  f"(goal/worst {GOAL_MS / max(worst, 1e-9):.2f}); wall gaps up to {wall:.0f} ms, "
                  f"longest garbage collection {collection:.0f} ms")
            pane.close()


def scrub_heatmaps(app, run, seconds: float) -> None:
    """Cold (each step's attention computed in the analysis process) then warm (all cached there)."""
    from engine.rundir.runs import Run
    from gui.panes.heatmaps import HeatmapsPane
    from gui.session import Session

    session = Session()
    pane = HeatmapsPane(session)
    pane.resize(1400, 900)
    pane.show()
    session.set_run(Run(run.path))
    wait_until(app, lambda: "attention" in pane.view.results)
    for phase in ("cold", "warm"):
        worst, wall, collection = scrub_and_probe(app, pane, seconds)
        print(f"heatmaps {phase}: GUI-thread CPU between ticks {worst:.0f} ms (goal/worst "
              f"{GOAL_MS / max(worst, 1e-9):.2f}); wall gaps up to {wall:.0f} ms, longest garbage collection "
              f"{collection:.0f} ms")
    pane.close()


if __name__ == "__main__":
    main()
