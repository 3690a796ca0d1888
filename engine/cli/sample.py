"""`gpt-explorer sample`: text from a trained run, read from its run directory alone (no corpus needed)."""

from __future__ import annotations

import argparse
import sys

from ..errors import UserError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sample", help="generate text from a trained run",
        description="Print the prompt followed by text the run's model writes after it. The weights are "
                    "the latest checkpoint's, or those saved at --step.")
    p.add_argument("--run", metavar="DIR", required=True, help="the run directory to sample from")
    p.add_argument("--prompt", metavar="TEXT",
                   help="text to continue; default: the run's heatmap prompt (a line of its corpus)")
    p.add_argument("--tokens", type=int, default=500, metavar="N", help="tokens to generate (default 500)")
    p.add_argument("--temperature", type=float, default=0.8, metavar="T",
                   help="softmax temperature; lower is more conservative, 0 always takes the likeliest (default 0.8)")
    p.add_argument("--top-k", type=int, default=None, metavar="K",
                   help="sample only among the K likeliest tokens (default: all)")
    p.add_argument("--seed", type=int, default=None, metavar="S", help="random seed, for repeatable samples")
    p.add_argument("--step", type=int, default=None, metavar="S",
                   help="use the weights saved at this step (a snapshot or checkpoint)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..configs.limits import MAX_SAMPLE_TOKENS, MAX_SEED
    from ..rundir.runs import Run, RunError
    from ..training.trainer import generate_text

    if args.tokens < 1:
        raise UserError("--tokens must be at least 1")
    if args.tokens > MAX_SAMPLE_TOKENS:
        raise UserError(f"--tokens must be at most {MAX_SAMPLE_TOKENS:,} (sample again for more)")
    if args.seed is not None and not 0 <= args.seed <= MAX_SEED:
        raise UserError("--seed must be from 0 to 2^63 − 1")
    if not 0 <= args.temperature < float("inf"):
        raise UserError("--temperature must be 0 or more")
    if args.top_k is not None and args.top_k < 1:
        raise UserError("--top-k must be at least 1")
    run_ = Run(args.run)
    prompt = args.prompt
    if prompt is None:
        try:
            prompt = run_.probe().prompt
        except RunError:  # already named in the warnings above
            prompt = "\n"
    model = run_.build_model(args.step)
    for warning in run_.warnings:  # after loading: a damaged checkpoint skipped is named too
        print(f"gpt-explorer: warning: {warning}", file=sys.stderr)
    text = generate_text(model, run_.tokenizer, prompt, args.tokens, args.temperature, args.top_k, args.seed)
    sys.stdout.write(prompt + text + ("" if text.endswith("\n") else "\n"))
    return 0
