"""`gpt-explorer bench`: training throughput of our Trainer, as the app runs it, against a bare PyTorch
loop of the same model and data (docs/figures.md#goals; the loop is engine/training/bench_reference.py)."""

from __future__ import annotations

import argparse
import statistics

GOAL = 0.95


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench", help="measure training throughput against a bare PyTorch loop",
        description="Train nanogpt-cpu with the app's Trainer (run directory, snapshots, checkpoints, "
                    "samples, weight copies and attention maps on) and with a bare PyTorch loop of the "
                    "same model and data, alternating in one process, and print tokens/s of each and "
                    f"their ratio (goal ≥ {GOAL}).")
    p.add_argument("--quick", action="store_true", help="a very short run (seconds): checks that it works")
    p.add_argument("--rounds", type=int, default=None, metavar="N", help="alternating rounds (default 4)")
    p.add_argument("--steps", type=int, default=None, metavar="N",
                   help="steps per round (default: the preset's evaluation period, 250)")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="torch threads for both loops (default: the preset's, every core, as the app)")
    p.add_argument("--corpus", default=None, metavar="shakespeare|PATH", help="text to train on (default: bundled)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..training.bench_reference import compare
    from ..errors import UserError

    rounds = (2 if args.quick else 4) if args.rounds is None else args.rounds  # 0 is refused, not the default
    steps = (4 if args.quick else None) if args.steps is None else args.steps
    if rounds < 1 or (steps is not None and steps < 1) or (args.threads is not None and args.threads < 0):
        raise UserError("--rounds and --steps must be at least 1, --threads at least 0")
    print(f"bench: nanogpt-cpu, {rounds} rounds, trainer and bare loop alternating", flush=True)
    # --quick checks the machinery in seconds: a short evaluation and sample, so not a measurement
    overrides = {"eval_batches": 2, "sample_tokens": 20} if args.quick else None
    result = compare("nanogpt-cpu", rounds, steps, corpus=args.corpus, threads=args.threads,
                     train_overrides=overrides, log=lambda line: print("  " + line, flush=True))
    print(f"({result.steps_per_round} steps a round)")
    print(f"trainer   {statistics.median(result.trainer_tps):,.0f} tokens/s (median)")
    print(f"bare loop {statistics.median(result.bare_tps):,.0f} tokens/s (median)")
    if args.quick:
        verdict = "--quick is a smoke test, not a measurement"
    else:
        verdict = f"{'meets' if result.ratio >= GOAL else 'misses'} the goal ≥ {GOAL}"
    print(f"ratio     {result.ratio:.3f} (median of per-round ratios; {verdict}; {result.threads} torch thread(s))")
    return 0
