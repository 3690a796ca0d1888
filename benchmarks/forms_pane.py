"""How long the GUI thread waits while the Forms pane's work runs on Qt's thread pool in the app's own process
(docs/design.md#processes-threads-and-caches), in the window as the app starts it: deriving the note's deepest
chain with every option, listing a weight's terms, walking through the whole form's stages, and a console line
that lists every term of a chain. This work is pure Python on a pool thread, sharing the interpreter lock with
the GUI thread; the question is whether that stalls the event loop, so that it must move to a helper process as
run analysis did.

A 10 ms timer probe records the wall gap between ticks (and the GUI thread's CPU between them) while each
piece of work runs, with the cyclic collector's passes and the helper processes' CPU meanwhile; the gaps' 99th
percentile is printed against the event-loop goal (50 ms, issue 23). `--console-sleeps` replaces the console
line's work by a sleep as long, returning the same outputs: what is left is the GUI thread's own share.

    python benchmarks/forms_pane.py [--depth 6] [--heads 4] [--console-sleeps]
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
    ticks of a TICK_MS timer, in ms)."""
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
    last[:] = time.perf_counter(), time.thread_time()
    start()
    while not done():
        if time.perf_counter() - t0 > timeout_s:
            raise SystemExit("timed out")
        app.processEvents()
        time.sleep(0.001)
    timer.stop()
    return time.perf_counter() - t0, gaps, cpu


def sleep_instead_of_console_work(line: str) -> None:
    from engine.forms.console import interpreter

    t0 = time.perf_counter()
    outputs = interpreter.Console().run(line)
    seconds = time.perf_counter() - t0
    interpreter.Console.run = lambda self, _line: time.sleep(seconds) or outputs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--console-sleeps", action="store_true",
                    help="the console line sleeps as long as its work takes and answers the same outputs")
    args = ap.parse_args()
    if args.console_sleeps:
        sleep_instead_of_console_work(f"forms({args.depth})")

    from PySide6.QtCore import QSettings

    tmp = Path(tempfile.mkdtemp(prefix="forms-pane-"))
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp / "settings"))
    from gui import settings
    from gui.app import make_application
    from gui.main_window import MainWindow
    from gui.panes.forms.source import SourceChoice

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
    while pane.forms is None or time.perf_counter() < settle:
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

    measure(f"derive encoder({args.depth}, every option, heads={args.heads})",
            lambda: pane.source.set_choice(choice),
            lambda: pane.forms is not None and pane.state.source == choice and pane.counts
            and pane.forms.net.spec.depth == args.depth)
    weight = max(pane.counts, key=pane.counts.get)
    measure(f"list the terms of {weight} ({pane.counts[weight]:,})",
            lambda: pane.terms.select_weight(weight),
            lambda: len(pane.terms.table.terms) > 0 and not pane.terms.loader.running)
    walk = pane.walkthrough
    pane.tabs.setCurrentIndex(0)  # the walkthrough, of the whole form
    measure("walk through the whole form's stages", walk.refresh, lambda: not walk._job.busy)
    line = f"forms({args.depth})"
    console = pane.console
    measure(f"console: {line} (every term of the plain chain, as formulas)",
            lambda: (console.prompt.setText(line), console.prompt.returnPressed.emit()),
            lambda: not console._job.busy)

    print(f"Forms pane work on Qt's thread pool, event-loop probe every {TICK_MS} ms "
          f"(goal: p99 gap ≤ {GOAL_MS:.0f} ms)")
    for what, seconds, p99, worst, cpu, ticks, full, longest, helpers in rows:
        print(f"  {what}: {seconds:.2f} s; gap p99 {p99:.1f} ms ({p99 / GOAL_MS:.2f} of the goal), "
              f"max {worst:.1f} ms; GUI-thread CPU between ticks at most {cpu:.1f} ms; {ticks} ticks; "
              f"{full} garbage collections, the longest {longest:.0f} ms; the helper processes' CPU {helpers:.2f} s")


if __name__ == "__main__":
    main()
