"""`gpt-explorer heads`: every attention head's scores, roles and formation steps, from a run directory.

Scores are computed at every saved step (cached under RUN/cache/heads/, engine/analysis/head_timeline.py)
and printed at --step; roles formed at the first saved step from which they stay above their threshold.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import UserError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "heads", help="print every attention head's scores, roles and when each role formed",
        description="Score every head at every saved step of the run on its fixed probes (previous-token, "
                    "induction, duplicate-token, first-token, mean distance, entropy, copying, the loss its "
                    "mean-ablation costs, its direct logit attribution) and print them at --step with the "
                    "roles that pass their thresholds and the saved step each formed at. Cached in RUN/cache.")
    p.add_argument("--run", metavar="DIR", required=True, help="the run directory to read")
    p.add_argument("--step", type=int, metavar="S", help="a saved step (default: the newest)")
    p.add_argument("--format", choices=("text", "csv"), default="text",
                   help="text: a table and the role labels (default); csv: one line per head")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..analysis.head_export import format_csv, format_text, head_rows
    from ..analysis.run_analysis import RunAnalysis
    from ..rundir.layout import steps_listed

    a = RunAnalysis(args.run)  # as the panes ask, so the two cannot disagree
    run_ = a.run
    steps = run_.saved_steps()
    if args.step is not None and args.step not in steps:
        raise UserError(f"{run_.path} has no weights saved at step {args.step} (it has {steps_listed(steps)})")
    timeline = a.head_timeline(_progress if sys.stderr.isatty() else None)
    timeline = timeline.upto(steps[-1] if args.step is None else args.step)
    rows = head_rows(timeline)
    sys.stdout.write(format_csv(rows) if args.format == "csv" else format_text(rows, timeline))
    for warning in a.warnings:  # after scoring: a snapshot read from its step's checkpoint is named too
        print(f"gpt-explorer: warning: {warning}", file=sys.stderr)
    return 0


def _progress(done: int, total: int) -> None:
    print(f"\rscoring heads: step {done} of {total}", end="" if done < total else "\n", file=sys.stderr, flush=True)
