"""How long the GUI thread is held while a run is opened, forked, renamed and deleted from the app (issue 37):
each the way the app does it now, alternating with the way it was before, in this one process.

- open: now a child process opens the run with every check (engine/rundir/runs.py's check_run, what
  gui/controller.py does for a run whose tokenizer file is large) and the GUI thread then builds
  `Run(path, checked=True)` and lists its checkpoints; before, `Run(path)` on the GUI thread;
- fork: now fork_into in a child (gui/child_work.py's ChildWork, as the Runs pane does); before, on the GUI thread;
- delete: the fork deleted, likewise (listing.delete_run);
- rename: one system call on the GUI thread, both times (listing.rename_run there and back): its cost is printed.

A 10 ms timer records the gaps between its ticks and the GUI thread's CPU time between them while each runs;
printed per piece of work: seconds, the longest gap and the gaps' 99th percentile against the goals (100 ms and
50 ms), the GUI thread's longest hold (its CPU between two ticks), and the longest gap as a ratio of the way
before's in the same round. The fork changes train.lr and starts at step 0; it is written into a temporary
folder and deleted there.

    python benchmarks/run_ops.py [--run RUN] [--rounds 2]

Without --run, a small BPE run is trained here first (seconds); issue 37's figure is on an imported
GPT-2-shaped run (`gpt-explorer import hf FOLDER --run RUN` of `benchmarks/gpt2_small.py --keep FOLDER`), whose
50,257-token tokenizer file is what the child reads.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.forms_pane import TICK_MS, probed  # noqa: E402  (the one probe of the GUI thread's holds)

GOAL_P99_MS, GOAL_MAX_MS = 50.0, 100.0


def small_run(folder: Path) -> Path:
    """A two-layer GPT with a 2,000-token BPE trained 20 steps (its tokenizer file is a BPE's, as a large run's)."""
    from engine.configs.config import DataConfig, ExperimentConfig, ModelConfig, TrainConfig
    from engine.training.trainer import Trainer

    cfg = ExperimentConfig(name="run-ops", model=ModelConfig(n_layer=2, n_head=4, d_model=64, d_ff=256, n_ctx=64),
                           train=TrainConfig(steps=20, batch_size=8, warmup_steps=2, eval_every=20,
                                             snapshot_every=10, checkpoint_every=20, device="cpu"),
                           data=DataConfig(tokenizer="bpe", max_vocab=2000))
    for _ in Trainer(cfg, folder / "run").steps():
        pass
    return folder / "run"


def apart(fn, *args, then=None):
    """(start, done) of fn(*args) in a child watched by ChildWork; `then(answer)` on the GUI thread after it."""
    from gui.child_work import ChildWork

    ended, held = [], []

    def start():
        work = ChildWork(fn, *args, name=fn.__name__)
        held.append(work)

        def finished(answer):
            if then is not None:
                then(answer)
            ended.append(True)

        def failed(message):
            raise SystemExit(f"{fn.__name__} failed in the child: {message}")

        work.sig_done.connect(finished)
        work.sig_failed.connect(failed)

    return start, lambda: bool(ended)


def here(fn, *args):
    """(start, done) of fn(*args) called on the GUI thread, as before."""
    ended = []
    return (lambda: (fn(*args), ended.append(True))), lambda: bool(ended)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", type=Path, help="the run opened and forked (default: a small BPE run trained here)")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of each piece of work, the two ways alternating")
    args = ap.parse_args()

    from PySide6.QtWidgets import QApplication

    from engine.rundir.fork import fork_into
    from engine.rundir.listing import delete_run, rename_run
    from engine.rundir.runs import TOKENIZER, Run, check_run
    from engine.text.data import Dataset
    from ui_latency import percentile

    app = QApplication.instance() or QApplication(sys.argv[:1])
    tmp = Path(tempfile.mkdtemp(prefix="run-ops-"))
    run_dir = args.run.resolve() if args.run else small_run(tmp)
    parent = Run(run_dir)
    cfg = parent.config.replace(train=dataclasses.replace(parent.config.train, lr=parent.config.train.lr * 2))
    Dataset.build(cfg.data, cfg.model.n_ctx)  # the corpus's token cache made before any fork is timed

    def open_apart():
        return apart(check_run, str(run_dir), then=lambda _warnings: Run(run_dir, checked=True).checkpoint_steps())

    def open_here():
        return here(lambda: Run(run_dir).checkpoint_steps())

    rows: list[tuple[str, str, float, float, float, float]] = []  # what, way, s, p99, longest gap, longest CPU

    def measure(what: str, way: str, start_done) -> None:
        seconds, gaps, cpu = probed(app, *start_done, timeout_s=1800.0)
        rows.append((what, way, seconds, percentile(gaps, 0.99) if gaps else 0.0, max(gaps, default=0.0),
                     max(cpu, default=0.0)))

    renames = []
    for r in range(args.rounds):
        for way in (("child", "GUI thread") if r % 2 == 0 else ("GUI thread", "child")):
            fork = tmp / f"fork-{r}-{'child' if way == 'child' else 'here'}"
            if way == "child":
                measure("open", way, open_apart())
                measure("fork", way, apart(fork_into, run_dir, fork, cfg, 0))
            else:
                measure("open", way, open_here())
                measure("fork", way, here(fork_into, run_dir, fork, cfg, 0))
            t0 = time.perf_counter()
            moved = rename_run(fork, fork.name + "-renamed")
            back = rename_run(moved, fork.name)
            renames.append(1000 * (time.perf_counter() - t0) / 2)
            measure("delete", way, apart(delete_run, back) if way == "child" else here(delete_run, back))

    size = sum(f.stat().st_size for f in run_dir.rglob("*") if f.is_file())
    print(f"{run_dir.name}: {parent.config.model.n_layer} layers, d_model {parent.config.model.d_model}, "
          f"vocabulary {parent.config.model.vocab_size:,} (tokenizer file {(run_dir / TOKENIZER).stat().st_size:,} "
          f"bytes), {size / 1e9:.2f} GB on disk; {args.rounds} rounds, the ways alternating; event-loop probe every "
          f"{TICK_MS} ms (goals: p99 gap ≤ {GOAL_P99_MS:.0f} ms, longest ≤ {GOAL_MAX_MS:.0f} ms)")
    for k, (what, way, seconds, p99, longest, cpu) in enumerate(rows):
        r = k // 6  # six measures a round: three pieces of work, two ways
        reference = next(row[4] for row in rows[6 * r:6 * r + 6] if row[0] == what and row[1] == "GUI thread")
        print(f"  round {r} {what:6s} {way:10s} {seconds:7.2f} s; gap p99 {p99:7.1f} ms, longest {longest:7.1f} ms "
              f"({longest / GOAL_MAX_MS:.2f} of the goal, {longest / reference:.3f} of the GUI thread's); "
              f"GUI-thread CPU between ticks at most {cpu:6.1f} ms")
    print(f"  rename (one system call, on the GUI thread): {max(renames):.2f} ms at most of {len(renames)}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
