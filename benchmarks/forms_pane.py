"""How long the GUI thread waits while the Forms pane's work runs (docs/design.md#processes-threads-and-caches),
in the window as the app starts it: deriving the note's deepest chain with every option, listing a weight's
terms, walking through the whole form's stages, and a console line that lists every term of a chain. The work
runs in the symbolic process (engine/forms/questions.py); what is left on the GUI thread is taking its rows in
(the term table's items, the console's formula views) and painting them. Until issue 37 it ran on Qt's thread
pool in the app's own process, sharing the interpreter lock with the GUI thread: listing held it 114–173 ms,
a console line 152–169 ms.

A 10 ms timer probe records the wall gap between ticks (and the GUI thread's CPU between them) while each
piece of work runs, with the cyclic collector's passes and the helper processes' CPU meanwhile; the gaps' 99th
percentile and the longest are printed against the event-loop goals (50 ms and 100 ms, issue 37).

    python benchmarks/forms_pane.py [--depth 6] [--heads 4] [--rounds 3]
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

GOAL_MS = 50.0        # the gaps' 99th percentile
LONGEST_GOAL_MS = 100.0
TICK_MS = 10
SETTLE_S = 8.0  # after the window is built: the other panes' first questions, the helper processes' start


collections: list[tuple[int, float]] = []  # (generation, ms) of the cyclic collector's passes
_started = [0.0]


def _on_collection(phase: str, info: dict) -> None:
    if phase == "start":
        _started[0] = time.perf_counter()
    else:
        collections.append((info["generation"], 1000 * (time.perf_counter() - _started[0])))


def probed(app, start, done, timeout_s: float = 600.0) -> tuple[float, list[float], list[float]]:
    """Run `start()`, spin the event loop until `done()`: (seconds taken, wall gaps and GUI-thread CPU between
    ticks of a TICK_MS timer, in ms). Work done inside `start()` shows as one gap, as it did in the app (the
    other benchmarks of the GUI thread's holds use this probe too: run_ops.py)."""
    from PySide6.QtCore import QTimer

    gaps, cpu, last = [], [], [time.perf_counter(), time.thread_time()]
    collections.clear()

    def tick():
        wall, busy = time.perf_counter(), time.thread_time()
        gaps.append(1000 * (wall - last[0]))
        cpu.append(1000 * (busy - last[1]))
        last[:] = wall, busy

    timer = QTimer(interval=TICK_MS)
    timer.timeout.connect(tick)
    t0 = time.perf_counter()
    timer.start()
    app.processEvents()
    last[:] = time.perf_counter(), time.thread_time()
    start()
    while not done():
        if time.perf_counter() - t0 > timeout_s:
            raise SystemExit("timed out")
        app.processEvents()
        time.sleep(0.001)
    ticks = len(gaps)
    while len(gaps) == ticks:  # the tick after the work: a hold inside start() is a gap once a tick follows it
        app.processEvents()
        time.sleep(0.001)
    timer.stop()
    return time.perf_counter() - t0, gaps, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3, help="times each piece of work is measured")
    args = ap.parse_args()

    from PySide6.QtCore import QSettings

    tmp = Path(tempfile.mkdtemp(prefix="forms-pane-"))
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp / "settings"))
    from gui import settings
    from gui.app import make_application
    from gui.main_window import MainWindow
    from engine.forms.source import SourceChoice

    gc.callbacks.append(_on_collection)
    app = make_application(sys.argv[:1])
    settings.set_runs_root(tmp / "runs")
    window = MainWindow()  # the app as it starts, with what it does once its panes are built
    window.resize(1600, 1000)
    window.show()
    while "pane_forms" not in window.panes:
        app.processEvents()
    window.docks["pane_forms"].raise_()
    pane = window.panes["pane_forms"]
    settle = time.perf_counter() + SETTLE_S  # the other panes' first questions answered, the helpers idle
    while pane.derived is None or time.perf_counter() < settle:
        app.processEvents()
        time.sleep(0.01)
    choice = SourceChoice(depth=args.depth, heads=args.heads, residual=True, layer_norm=True, cross_entropy=True,
                          causal=True)
    rows = []

    def helpers_cpu() -> float:
        total = 0.0
        for pid in Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split():
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return total

    from ui_latency import percentile

    def measure(what, start, done):
        before = helpers_cpu()
        seconds, gaps, cpu = probed(app, start, done)
        rows.append((what, seconds, percentile(gaps, 0.99) if gaps else 0.0, max(gaps, default=0), max(cpu, default=0), len(gaps),
                     len(collections), max((ms for _, ms in collections), default=0), helpers_cpu() - before))

    for _ in range(args.rounds):
        pane.source.set_choice(SourceChoice(depth=2))  # the next round derives again
        while pane.derived is None or pane.derived.depth != 2 or pane.terms.loader.running:
            app.processEvents()
        measure(f"derive encoder({args.depth}, every option, heads={args.heads})",
                lambda: pane.source.set_choice(choice),
                lambda: pane.derived is not None and pane.state.source == choice and pane.derived.depth == args.depth
                and not pane.terms.loader.running)
        weight = max(pane.counts, key=pane.counts.get)
        pane.terms.weight = None  # listed again each round
        measure(f"list the terms of {weight} ({pane.counts[weight]:,})",
                lambda: pane.terms.select_weight(weight),
                lambda: len(pane.terms.table.terms) > 0 and not pane.terms.loader.running)
        walk = pane.walkthrough
        pane.tabs.setCurrentIndex(0)  # the walkthrough, of the whole form
        measure("walk through the whole form's stages", walk.refresh, lambda: not walk.busy)
        line = f"forms({args.depth})"
        console = pane.console
        pane.tabs.setCurrentIndex(2)
        measure(f"console: {line} (every term of the plain chain, as formulas)",
                lambda: (console.prompt.setText(line), console.prompt.returnPressed.emit()),
                lambda: not console.running)
        pane.tabs.setCurrentIndex(1)

    print(f"Forms pane work in the symbolic process, event-loop probe every {TICK_MS} ms "
          f"(goals: p99 gap ≤ {GOAL_MS:.0f} ms, longest ≤ {LONGEST_GOAL_MS:.0f} ms)")
    for what, seconds, p99, worst, cpu, ticks, full, longest, helpers in rows:
        print(f"  {what}: {seconds:.2f} s; gap p99 {p99:.1f} ms ({p99 / GOAL_MS:.2f} of the goal), "
              f"max {worst:.1f} ms ({worst / LONGEST_GOAL_MS:.2f} of the goal); GUI-thread CPU between ticks at "
              f"most {cpu:.1f} ms; {ticks} ticks; {full} garbage collections, the longest {longest:.0f} ms; the "
              f"helper processes' CPU {helpers:.2f} s")


if __name__ == "__main__":
    main()
