"""Training throughput (docs/figures.md): our Trainer as the app runs it vs a bare PyTorch loop, same process.

    python benchmarks/throughput.py [--rounds 8] [--steps 250] [--preset nanogpt-cpu] [--threads N]

The same measurement as `gpt-explorer bench` (engine/training/bench_reference.py), with the preset and the torch
thread count selectable, and one line per round so the spread of a shared machine is visible. Prints the
median tokens/s of each and the median of the per-round ratios; the goal is ≥ 0.95.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from engine.training.bench_reference import compare


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="nanogpt-cpu")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--steps", type=int, default=None, help="steps per round (default: the evaluation period)")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: every core, as the app)")
    p.add_argument("--corpus", default=None)
    args = p.parse_args(argv)
    result = compare(args.preset, args.rounds, args.steps, corpus=args.corpus, threads=args.threads,
                     log=lambda line: print("  " + line, flush=True))
    spread = [a / b for a, b in zip(result.trainer_tps, result.bare_tps)]
    print(f"{args.preset}: {result.rounds} rounds x {result.steps_per_round} steps, {result.threads} thread(s)")
    print(f"trainer   {statistics.median(result.trainer_tps):,.0f} tokens/s")
    print(f"bare loop {statistics.median(result.bare_tps):,.0f} tokens/s")
    print(f"ratio     {result.ratio:.3f} (per round: {min(spread):.3f} … {max(spread):.3f}; goal ≥ 0.95)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
