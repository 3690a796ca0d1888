"""What pressing Train holds the interpreter lock for, as the app's training thread does it (gui/worker.py):
the corpus made ready in a child process (engine/training/preparation.py), then the trainer built, its first step
and its close (a checkpoint) on this process's thread. A probe thread sleeps 5 ms and records how late it wakes
(the lock held by the other thread); the GUI thread of the app waits as long. The probe collects garbage as the
app's GUI thread does (every second, automatic collection off, what is alive at the start frozen). Rounds
alternate with the way it was before issue 37 (`in thread`: no child, the trainer tokenises the corpus itself),
each on an empty token cache, so both see the same work and the same neighbours' load; late wakes over 50 ms are
named by the line the training thread was on. `--stretches` adds what does not depend on the load: the training
thread's longest stretches of its own CPU time inside one C call.

    python benchmarks/train_start.py [--run RUN --corpus FILE] [--rounds 2] [--child-only] [--stretches]
    (default: tiny with a 5,000-token BPE)
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import sys
import tempfile
import threading
import time
import traceback
from contextlib import nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GOAL_MS = 100.0  # the longest gap the event loop may see (issue 37)
HOLD_MS = 50.0  # the longest the GUI process's interpreter may be held at a time


class Probe:
    """A thread that sleeps 5 ms at a time and records how late it wakes, with the watched thread's line."""

    def __init__(self, watched: int):
        self.watched, self.late, self.where = watched, [], []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *_):
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        last = collected = time.perf_counter()
        while not self._stop.is_set():
            time.sleep(0.005)
            if time.perf_counter() - collected >= 1.0:  # the app's collector, on its GUI thread (gui/app.py)
                collect_as_the_app_does()
                collected = time.perf_counter()
            now = time.perf_counter()
            late = 1000 * (now - last - 0.005)
            self.late.append(late)
            if late > HOLD_MS:
                frame = sys._current_frames().get(self.watched)
                f = traceback.extract_stack(frame)[-1] if frame is not None else None
                self.where.append((late, f"{Path(f.filename).name}:{f.lineno}" if f else "?"))
            last = now


def collect_as_the_app_does() -> None:
    """pyqtgraph's GarbageCollector.check, which the app runs every second on its GUI thread with automatic
    collection off (gui/app.py): each generation collected when its count passes its threshold."""
    (l0, l1, l2), (t0, t1, t2) = gc.get_count(), gc.get_threshold()
    if l0 > t0:
        gc.collect(0)
        if l1 > t1:
            gc.collect(1)
            if l2 > t2:
                gc.collect(2)


class Stretches:
    """With `--stretches`: the training thread's longest runs of its own CPU time between two Python-level events
    (a call or a return, of Python or of C), each a C call or a collection that may hold the lock, whatever the
    machine's load; a torch operation lets go of the lock while it computes, so its stretches hold nothing."""

    def __init__(self):
        self.found: list[tuple[float, str]] = []
        self._last, self._what = 0.0, ""

    def __enter__(self):
        self._last = time.thread_time()
        sys.setprofile(self._event)
        return self

    def __exit__(self, *_):
        sys.setprofile(None)

    def _event(self, frame, event, arg) -> None:
        now = time.thread_time()
        name = getattr(arg, "__name__", "?") if event.startswith("c_") else frame.f_code.co_name
        here = f"{name} at {Path(frame.f_code.co_filename).name}:{frame.f_lineno}"
        if now - self._last > 0.01:
            self.found.append((1000 * (now - self._last), f"{self._what} .. {event} {here}"))
        self._last, self._what = time.thread_time(), f"{event} {here}"


def start(args, way: str) -> list[tuple[str, float, list[float], list, list]]:
    """The phases of one Train press, each (name, seconds, late wakes, where, stretches)."""
    from engine.child_job import ChildJob
    from engine.configs.presets import load_preset
    from engine.rundir.runs import Run
    from engine.training.preparation import corpus_preparation
    from engine.training.trainer import Trainer

    os.environ["GPT_EXPLORER_CACHE"] = tempfile.mkdtemp(prefix="train-start-cache-")  # cold, both ways
    if args.run:
        config = Run(args.run, checked=True).config  # as the app opens it: its tokenizer read by the trainer only
        data = dataclasses.replace(config.data, corpus=args.corpus) if args.corpus else config.data
        prepare = corpus_preparation(data, config.model.n_ctx, args.run)

        def build():
            return Trainer.resume(args.run, corpus=args.corpus)
    else:
        cfg = load_preset("tiny")
        cfg = cfg.replace(data=dataclasses.replace(cfg.data, tokenizer="bpe", max_vocab=5000))
        prepare = corpus_preparation(cfg.data, cfg.model.n_ctx)
        folder = tempfile.mkdtemp(prefix="train-start-")

        def build():
            return Trainer(cfg, Path(folder) / "run")
    phases = []

    def phase(name, fn):
        with Probe(threading.get_ident()) as probe, Stretches() if args.stretches else nullcontext() as cpu:
            t0 = time.perf_counter()
            out = fn()
            phases.append((name, time.perf_counter() - t0, probe.late, probe.where, cpu.found if cpu else []))
        return out

    if way == "child":
        phase("corpus, in a child", lambda: ChildJob(prepare).wait()[-1])
    trainer = phase("trainer built", build)
    steps = trainer.steps()
    phase("first step", lambda: next(steps))
    phase("close (checkpoint)", steps.close)
    return phases


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", help="a run to resume (an import fine-tunes), e.g. an imported GPT-2-shaped run")
    ap.add_argument("--corpus", help="the corpus an import fine-tunes on")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--stretches", action="store_true",
                    help="also name the training thread's longest stretches of CPU between Python-level events "
                         "(the probe's waits are longer then: the profiler slows the thread)")
    ap.add_argument("--child-only", action="store_true",
                    help="only the app's way (the corpus in a child); each round resumes the checkpoint the "
                         "last one's close wrote, so a second round reads an optimizer's state")
    args = ap.parse_args()
    from engine.training.thread_policy import prepare_openmp  # noqa: F401 — as the app's entry point
    from engine.training.trainer import Trainer  # noqa: F401 — torch and the engine, loaded before the freeze
    import engine.text.bpe  # noqa: F401 — with torch, as the app's window loads it (gui/torch_import.py)

    # as the app: collection only from its GUI thread (here the probe's), and what is alive once it is built kept
    # out of full collections (gui/main_window.py)
    gc.disable()
    gc.freeze()

    for r in range(args.rounds):
        ways = ("child", "in thread") if r % 2 == 0 else ("in thread", "child")
        for way in ("child",) if args.child_only else ways:
            print(f"round {r + 1}, {way}:")
            for name, seconds, late, where, stretches in start(args, way):
                worst = max(late, default=0.0)
                print(f"  {name}: {seconds:.2f} s; the probe's longest wait {worst:.0f} ms "
                      f"({worst / GOAL_MS:.2f} of the goal), {sum(x > GOAL_MS for x in late)} over {GOAL_MS:.0f} ms, "
                      f"{sum(x > HOLD_MS for x in late)} over {HOLD_MS:.0f} ms")
                for ms, line in sorted(where, reverse=True)[:4]:
                    print(f"      {ms:.0f} ms at {line}")
                for ms, line in sorted(stretches, reverse=True)[:6]:
                    print(f"      CPU {ms:.0f} ms: {line}")


if __name__ == "__main__":
    main()
