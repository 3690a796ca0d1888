"""Our training step against nanoGPT's own `train.py` on its CPU config (issue 42, docs/figures.md): CPU-ms a step,
each in a process of its own, alternating, and both validation losses after the same number of steps.

    python benchmarks/nanogpt_peer.py --nanogpt PATH/TO/nanoGPT [--steps 300] [--rounds 4] [--threads 1]
                                      [--corpus FILE] [--compile] [--precision float32]

nanoGPT is not ours to ship, so this runs the reader's own checkout of it (`git clone
https://github.com/karpathy/nanoGPT`), unmodified, with the command its README gives for a CPU (4 layers, 4 heads,
d_model 128, context 64, batches of 12, no dropout, learning rate 1e-3 decaying over 2000 steps) stopped after
--steps steps. Its data is written to a temporary folder in its own format (train.bin, val.bin, meta.pkl: the
corpus's characters sorted, the first 90% for training) from the corpus both train on: the bundled plays by
default, or --corpus FILE (nanoGPT's own tinyshakespeare input.txt gives its usual losses). Ours is the
`nanogpt-cpu` preset's Trainer as `gpt-explorer train` runs it, writing its run folder (a temporary one), on the
same 2000-step schedule stopped after --steps steps.

A round runs each once, in turn (A B, then B A), so a shared machine's drift falls on both. Each process stamps
its own CPU time (user + system) after every step: train.py's per-iteration line is stamped by a wrapper around
`print` (the only change to how it runs), ours after every StepReport. A step's CPU-ms is the difference of two
stamps, and the figure is the median over steps 1 … steps-1 (the evaluations before the first and after the last
are outside; our snapshots every 100 steps are inside but the median passes them by; the mean, printed too,
does not). Both validate after the last step on 200 batches (nanoGPT's random ones, our fixed ones): the same
losses mean the same training, not the same bits (the initial draws and batches differ). The wall-clock ratio
is printed too: at two threads a waiting thread's spin counts as CPU time (nanoGPT leaves OpenMP's long spin on,
we shorten it: engine/training/thread_policy.py).
Goal (docs/figures.md): nanoGPT's CPU-ms / ours ≥ 1.2 at one thread, with validation losses within noise. The default,
`--precision float32`, is nanoGPT's own arithmetic, and there the two are level: about two thirds of either step is
matrix products at the same speed (MKL). `--precision auto` is what the app trains in by default: bf16 autocast
where the CPU multiplies bf16 itself, and that is where the goal is met, at the same loss.
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
EVAL_BATCHES = 200  # nanoGPT's own eval_iters; the README's CPU command lowers it to 20 for speed
# nanoGPT's README, "I only have a macbook": the CPU run, less its step count (set by --steps)
NANOGPT_CPU = ["config/train_shakespeare_char.py", "--device=cpu", "--compile=False", "--log_interval=1",
               "--block_size=64", "--batch_size=12", "--n_layer=4", "--n_head=4", "--n_embd=128",
               "--lr_decay_iters=2000", "--dropout=0.0"]
GET_NANOGPT = "git clone https://github.com/karpathy/nanoGPT  (then pass its folder with --nanogpt)"

# Runs train.py as `python train.py ...` would (its folder as the working directory), printing the process's
# CPU time after each of its per-iteration lines.
STAMPED_TRAIN_PY = r"""
import builtins, runpy, sys, time
_print = builtins.print
def _stamped(*args, **kwargs):
    _print(*args, **kwargs)
    if args and isinstance(args[0], str) and args[0].startswith("iter "):
        _print(f"CPU {time.process_time():.6f} {time.perf_counter():.6f}", flush=True)
builtins.print = _stamped
sys.argv = ["train.py", *sys.argv[1:]]
runpy.run_path("train.py", run_name="__main__")
"""


def write_nanogpt_data(text: str, folder: Path) -> None:
    """`text` as nanoGPT's data/shakespeare_char/prepare.py writes it: characters sorted, ids as uint16, the first
    90% for training."""
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    ids = np.fromiter((stoi[c] for c in text), dtype=np.uint16, count=len(text))
    n = int(len(text) * 0.9)
    folder.mkdir(parents=True, exist_ok=True)
    ids[:n].tofile(folder / "train.bin")
    ids[n:].tofile(folder / "val.bin")
    with open(folder / "meta.pkl", "wb") as f:
        pickle.dump({"vocab_size": len(chars), "itos": dict(enumerate(chars)), "stoi": stoi}, f)


def per_step_ms(lines: list[str], steps: int) -> tuple[list[float], list[float]]:
    """CPU-ms and wall-ms of steps 1 … steps-1 from a run's stamps ("CPU <process time> <clock>", one after
    each step; the first stamp follows step 0, which nanoGPT begins with an evaluation)."""
    stamps = [tuple(map(float, line.split()[1:])) for line in lines if line.startswith("CPU ")][:steps]
    return ([(b[0] - a[0]) * 1e3 for a, b in zip(stamps, stamps[1:])],
            [(b[1] - a[1]) * 1e3 for a, b in zip(stamps, stamps[1:])])


Timed = tuple[tuple[list[float], list[float]], float]  # (CPU-ms and wall-ms of each step, validation loss)


def run_nanogpt(checkout: Path, data: Path, out: Path, steps: int, threads: int) -> Timed:
    args = NANOGPT_CPU + [f"--max_iters={steps}", f"--eval_interval={steps}", f"--eval_iters={EVAL_BATCHES}",
                          f"--dataset={data}", f"--out_dir={out}", "--dtype=float32"]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    done = subprocess.run([sys.executable, "-c", STAMPED_TRAIN_PY, *args], cwd=checkout, env=env,
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"nanoGPT's train.py failed:\n{done.stderr[-2000:]}")
    lines = done.stdout.splitlines()
    vals = [float(line.rsplit("val loss", 1)[1]) for line in lines if line.startswith(f"step {steps}:")]
    return per_step_ms(lines, steps), vals[0]


def run_ours(corpus: str, out: Path, steps: int, threads: int, compile_: bool, precision: str) -> Timed:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, __file__, "--ours-worker", str(out), "--steps", str(steps), "--threads", str(threads),
           "--corpus", corpus, "--precision", precision] + (["--compile"] if compile_ else [])
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"our trainer failed:\n{done.stderr[-2000:]}")
    lines = done.stdout.splitlines()
    val = [float(line.split()[1]) for line in lines if line.startswith("VAL ")][0]
    return per_step_ms(lines, steps), val


def ours_worker(out: Path, steps: int, threads: int, corpus: str, compile_: bool, precision: str) -> None:
    """In our measuring process: nanogpt-cpu's Trainer, stamped after every step; validation after the last."""
    import dataclasses
    import time

    from engine.configs.presets import load_preset
    from engine.training.trainer import Trainer

    cfg = load_preset("nanogpt-cpu")
    train = dataclasses.replace(cfg.train, torch_threads=threads, eval_every=steps, eval_batches=EVAL_BATCHES,
                                report_every=1, compile=compile_, precision=precision)
    trainer = Trainer(cfg.replace(train=train, data=dataclasses.replace(cfg.data, corpus=corpus)), out)
    stamp = lambda: print(f"CPU {time.process_time():.6f} {time.perf_counter():.6f}", flush=True)  # noqa: E731
    stamp()
    val = None
    for report in trainer.steps(steps):
        stamp()
        val = report.val_loss if report.val_loss is not None else val
    print(f"VAL {val}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nanogpt", type=Path, help="a checkout of github.com/karpathy/nanoGPT")
    p.add_argument("--steps", type=int, default=300, help="training steps of each run")
    p.add_argument("--rounds", type=int, default=4, help="runs of each, alternating")
    p.add_argument("--threads", type=int, default=1, help="torch threads of both")
    p.add_argument("--corpus", default=None, help="a text file (default: the bundled Shakespeare)")
    p.add_argument("--compile", action="store_true", help="ours with train.compile on")
    p.add_argument("--precision", default="float32", help="ours: float32 (nanoGPT's arithmetic on a CPU), auto or bf16")
    p.add_argument("--ours-worker", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.ours_worker:
        ours_worker(args.ours_worker, args.steps, args.threads, args.corpus, args.compile, args.precision)
        return 0
    if args.nanogpt is None or not (args.nanogpt / "train.py").is_file():
        print(f"this compares against nanoGPT's own train.py, which is not part of GPT Explorer: {GET_NANOGPT}",
              file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT))
    from engine.text.corpus import load_corpus

    corpus = args.corpus or "shakespeare"
    text = load_corpus(corpus)
    ratios, wall_ratios = [], []
    with tempfile.TemporaryDirectory(prefix="nanogpt-peer-") as tmp:
        data = Path(tmp) / "data"
        write_nanogpt_data(text, data)
        for r in range(args.rounds):
            order = ("nanoGPT", "ours") if r % 2 == 0 else ("ours", "nanoGPT")
            got = {}
            for who in order:
                out = Path(tmp) / f"{who}-{r}"
                got[who] = (run_nanogpt(args.nanogpt.resolve(), data, out, args.steps, args.threads) if who == "nanoGPT"
                            else run_ours(corpus, out, args.steps, args.threads, args.compile, args.precision))
            ((t_cpu, t_wall), t_val), ((o_cpu, o_wall), o_val) = got["nanoGPT"], got["ours"]
            med = statistics.median
            ratios.append(med(t_cpu) / med(o_cpu))
            wall_ratios.append(med(t_wall) / med(o_wall))
            print(f"round {r + 1}/{args.rounds}: CPU-ms a step, median (mean): nanoGPT {med(t_cpu):.1f} "
                  f"({statistics.mean(t_cpu):.1f}), ours {med(o_cpu):.1f} ({statistics.mean(o_cpu):.1f}), ratio "
                  f"{ratios[-1]:.3f}; wall-ms ratio {wall_ratios[-1]:.3f}; validation after {args.steps} steps: "
                  f"nanoGPT {t_val:.4f}, ours {o_val:.4f}; load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"nanoGPT's train.py / ours, CPU-ms a step: median {statistics.median(ratios):.3f} (rounds "
          f"{min(ratios):.3f} … {max(ratios):.3f}; goal ≥ 1.2); wall-ms: {statistics.median(wall_ratios):.3f}; "
          f"{args.threads} thread(s), ours in {args.precision}{', compiled' if args.compile else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
