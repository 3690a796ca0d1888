"""Training on a busy machine (issue 28): the trainer's thread policy against one thread, under load and quiet.

    python benchmarks/busy_machine.py [--rounds 4] [--seconds 4] [--preset nanogpt-cpu] [--busy-per-core 2]

Each measurement is a fresh process (OpenMP reads its waiting policy once, when torch loads) that builds the
preset's Trainer without a run directory, trains a few steps to warm up, then trains for --seconds and prints
its tokens/s. The arms:

    policy    the trainer as the app runs it: every core, OpenMP spinning briefly before it sleeps
              (engine/training/thread_policy.py)
    one       the same trainer at torch_threads = 1
    spinning  OpenMP's own waiting: every core, libgomp spinning 300000 times before it sleeps

Under load, --busy-per-core processes per core spin in pure Python for the whole phase (started before its
first round, stopped by their ids after its last); quiet, none. Each round runs every arm once, in an order
that alternates from round to round, so drift of a shared machine hits them alike. Prints every round and
the medians. Goals: under load, policy/one median ≥ 0.8 and no round below 0.5; quiet, policy/spinning ≈ 1.
The worker is this file run again with --worker (and this checkout's engine on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

ARMS = ("policy", "one", "spinning")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
WARMUP_STEPS = 2  # few: a spinning trainer under load takes seconds a step


def worker(arm: str, preset: str, seconds: float) -> None:
    """In the measuring process: train the preset for `seconds` and print tokens/s and the threads used."""
    import dataclasses

    from engine.configs.presets import load_preset
    from engine.training.trainer import Trainer

    cfg = load_preset(preset)
    threads = 1 if arm == "one" else 0
    train = dataclasses.replace(cfg.train, steps=10**6, torch_threads=threads, eval_every=10**6,
                                snapshot_every=10**6, checkpoint_every=10**6, sample_tokens=0)
    trainer = Trainer(cfg.replace(train=train))
    steps = trainer.steps()
    for _ in range(WARMUP_STEPS):
        next(steps)
    start, n = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        next(steps)
        n += 1
    elapsed = time.perf_counter() - start
    print(f"{n * train.batch_size * cfg.model.n_ctx / elapsed:.1f} {trainer.threads}")


def measure(arm: str, preset: str, seconds: float) -> tuple[float, int]:
    env = dict(os.environ)
    for k in ("OMP_WAIT_POLICY", "KMP_BLOCKTIME", "GOMP_SPINCOUNT"):
        env.pop(k, None)
    if arm == "spinning":
        env["GOMP_SPINCOUNT"] = "300000"  # libgomp's default; any setting keeps the policy's away
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")]))  # this checkout's engine
    out = subprocess.run([sys.executable, __file__, "--worker", arm, "--preset", preset, "--seconds", str(seconds)],
                         env=env, capture_output=True, text=True, check=True)
    tps, threads = out.stdout.split()[-2:]
    return float(tps), int(threads)


def busy_processes(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def phase(name: str, args: argparse.Namespace, busy: int) -> dict[str, list[float]]:
    procs = busy_processes(busy)
    tps: dict[str, list[float]] = {arm: [] for arm in ARMS}
    try:
        for r in range(args.rounds):
            order = ARMS if r % 2 == 0 else ARMS[::-1]
            line = []
            for arm in order:
                value, threads = measure(arm, args.preset, args.seconds)
                tps[arm].append(value)
                line.append(f"{arm} {value:,.0f} tok/s ({threads} thr)")
            ratio = tps["policy"][-1] / tps["one"][-1]
            print(f"  {name} round {r + 1}/{args.rounds}: " + ", ".join(line) + f"; policy/one {ratio:.2f}",
                  flush=True)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    return tps


def summary(name: str, tps: dict[str, list[float]]) -> None:
    per_round = [a / b for a, b in zip(tps["policy"], tps["one"])]
    vs_spin = [a / b for a, b in zip(tps["policy"], tps["spinning"])]
    print(f"{name}: policy/one median {statistics.median(per_round):.2f} (rounds {min(per_round):.2f} … "
          f"{max(per_round):.2f}); policy/spinning median {statistics.median(vs_spin):.2f} "
          f"(rounds {min(vs_spin):.2f} … {max(vs_spin):.2f})")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="nanogpt-cpu")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--seconds", type=float, default=4.0, help="training time of one measurement")
    p.add_argument("--busy-per-core", type=int, default=2, help="competing busy processes per core under load")
    p.add_argument("--worker", choices=ARMS, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker(args.worker, args.preset, args.seconds)
        return 0
    from engine.training.thread_policy import usable_cores

    cores = usable_cores()
    busy = args.busy_per_core * cores
    print(f"{args.preset}, {cores} cores; under load: {busy} busy processes; {args.seconds:g} s a measurement")
    loaded = phase("loaded", args, busy)
    quiet = phase("quiet", args, 0)
    summary(f"under load ({busy} busy)", loaded)
    summary("quiet", quiet)
    print("goals: under load policy/one median ≥ 0.8, no round < 0.5; quiet policy/spinning ≈ 1")
    return 0


if __name__ == "__main__":
    sys.exit(main())
