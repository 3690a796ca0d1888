"""The test suite beside a competing load (issue 42): it must pass as often as it does on a quiet machine.

    python benchmarks/suite_under_load.py [--rounds 1] [--busy-per-core 2] [--loaded-only] [-- PYTEST ARGS]

Each round runs README's test command (`python -m pytest`, pyproject's addopts: two workers) twice, in an
order that alternates from round to round: once beside --busy-per-core processes per core spinning in pure
Python (started before the run, stopped by their ids after it), once quiet. Arguments after `--` go to
pytest (a folder, `-x`, `-n 0`…). Prints each run's outcome, failing tests and wall time, and the loaded/quiet
time ratio of each round; exits 1 when any run failed. A CI job runs it as it runs the suite: not part of
the suite itself (it runs the suite).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.busy_machine import busy_processes  # noqa: E402

SUMMARY = re.compile(r"=+ (.*\bin [0-9.]+s.*) =+\s*$")


def run_suite(pytest_args: list[str], busy: int) -> tuple[int, float, str, list[str]]:
    """README's test command beside `busy` spinning processes: (exit code, wall s, pytest's summary line,
    the failing tests)."""
    procs = busy_processes(busy)
    try:
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *pytest_args],
                             cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - start
    finally:
        for p in procs:
            p.kill()
            p.wait()
    lines = out.stdout.splitlines()
    summary = next((m.group(1) for line in reversed(lines) if (m := SUMMARY.match(line))), lines[-1] if lines else "")
    failed = [line.split(" ", 1)[1].split(" - ")[0] for line in lines if line.startswith(("FAILED ", "ERROR "))]
    return out.returncode, wall, summary, failed


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    pytest_args = argv[argv.index("--") + 1:] if "--" in argv else []
    ours = argv[:argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--busy-per-core", type=int, default=2, help="competing busy processes per core under load")
    p.add_argument("--loaded-only", action="store_true", help="no quiet run to compare with")
    args = p.parse_args(ours)
    cores = len(os.sched_getaffinity(0))
    busy = args.busy_per_core * cores
    print(f"{cores} cores; under load: {busy} busy processes; pytest {' '.join(pytest_args) or '(README)'}",
          flush=True)
    arms = ["loaded"] if args.loaded_only else ["loaded", "quiet"]
    failures = 0
    for r in range(args.rounds):
        walls = {}
        for arm in arms if r % 2 == 0 else arms[::-1]:
            rc, walls[arm], summary, failed = run_suite(pytest_args, busy if arm == "loaded" else 0)
            failures += rc != 0
            print(f"round {r + 1}/{args.rounds} {arm}: rc {rc}, {walls[arm]:.0f} s wall: {summary}", flush=True)
            for test in failed:
                print(f"    failed: {test}", flush=True)
        if len(walls) == 2:
            print(f"round {r + 1}: loaded/quiet wall {walls['loaded'] / walls['quiet']:.2f}", flush=True)
    print("goal: every run passes, loaded as quiet")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
