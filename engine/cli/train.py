"""`gpt-explorer train`: train a model in the terminal, writing a run directory (docs/run-directory.md).

A new run comes from a preset (default `tiny`) or a config file, with the command line's overrides; if
`--run` names an existing run it is resumed from its latest checkpoint, exactly or with the options' edits of its
training (engine/training/continuation.py: an edit of its shape or vocabulary is refused); an imported pretrained
model (`import hf`, `import nanogpt`) is fine-tuned that way. `--corpus` with `--run` trains any run on other
text from there, with the run's own tokenizer.
Progress is one updating line on a terminal and plain lines otherwise. Ctrl-C stops between steps and
saves a checkpoint. Qt is never imported here (a test checks it).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UserError
from ._parallel import run_parallel
from ._plan import build_config, default_run_dir, make_trainer, plan_run, refuse_a_missing_corpus
from ._train_loop import train_in_terminal


def add_parser(sub: argparse._SubParsersAction) -> None:
    from ..configs.fields import BY_KEY, settings_help
    from ..configs.presets import DEFAULT_PRESET, preset_names

    def field(key: str) -> dict:
        """metavar and help of an option that sets a config field, from the fields' table."""
        f = BY_KEY[key]
        return {"metavar": "|".join(f.values), "help": f"{f.help}: {f.choices_text()}"}

    p = sub.add_parser(
        "train", help="train a model in the terminal (no window)",
        description="Train a GPT and write its run directory. With --run pointing at an existing run, "
                    "resume it from its latest checkpoint: exactly as it was, or with the edits the other "
                    "options make to its training (recorded in its changes.jsonl); an edit of the model's "
                    "shape or vocabulary needs a new run and is refused. Ctrl-C stops and saves a checkpoint.")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--preset", metavar="NAME",
                     help="a named experiment: " + ", ".join(
                         f"{n} (the default)" if n == DEFAULT_PRESET else n for n in preset_names()))
    src.add_argument("--config", metavar="FILE", help="an experiment TOML file (as written in a run's config.toml)")
    p.add_argument("--corpus", metavar="shakespeare|shakespeare-repeats|PATH",
                   help="'shakespeare' (bundled), 'shakespeare-repeats' (the same with every span of 10-30 "
                        "characters said twice: the induction lesson's corpus) or a UTF-8 text file; default: "
                        "the config's corpus. With --run naming an existing run (trained here or imported): the "
                        "text to train it on from its latest checkpoint, with its own tokenizer")
    p.add_argument("--steps", type=int, metavar="N", help="total optimizer steps (on resume: a new total)")
    p.add_argument("--device", **field("train.device"))
    p.add_argument("--seed", type=int, metavar="S", help="random seed (initialisation, batches, dropout)")
    p.add_argument("--precision", choices=BY_KEY["train.precision"].values, **field("train.precision"))
    p.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                   help="torch.compile the training step (falls back to eager, with a message, if it cannot)")
    p.add_argument("--nproc", type=int, metavar="N",
                   help="train with N processes (DistributedDataParallel: NCCL on CUDA, one GPU each; gloo "
                        "on the CPU) sharing each batch; also works when launched by torchrun")
    p.add_argument("--optimizer", **field("train.optimizer"))
    p.add_argument("--run", metavar="DIR",
                   help="run directory; default runs/<preset-or-name>-<timestamp>; an existing run is resumed")
    p.add_argument("--set", action="append", metavar="SECTION.FIELD=VALUE",
                   help="change one setting of the config, e.g. train.lr=3e-4 (repeatable); the settings are "
                        f"{settings_help()}; docs/config-fields.md says what each means")
    p.add_argument("--fork", metavar="PARENT",
                   help="a new run paired with the run PARENT: its config with --set's changes, the same "
                        "initial weights and batch order (the seed and data cannot change)")
    p.add_argument("--fork-step", type=int, metavar="S",
                   help="with --fork: start from PARENT's checkpoint at step S (default 0: the start)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    refuse_a_missing_corpus(args)  # before torch loads (engine/training/distributed.py imports it)
    from ..training.distributed import launched_by_torchrun
    from ..rundir.runs import RunError

    if getattr(args, "fork_step", None) is not None and not getattr(args, "fork", None):
        raise UserError("--fork-step applies with --fork PARENT only (the step of PARENT the fork starts from)")
    parallel = getattr(args, "nproc", None) not in (None, 1) or launched_by_torchrun()
    if parallel and getattr(args, "fork", None):
        raise RunError("--fork makes its run in one process; train the fork on with --run DIR --nproc N after")
    if parallel:
        return run_parallel(args)
    if getattr(args, "fork", None):
        return _fork(args, Path(args.run) if args.run else None)
    run_dir, resume = plan_run(args)
    return train_in_terminal(make_trainer(args, run_dir, resume), run_dir)


def _fork(args: argparse.Namespace, run_dir: Path | None) -> int:
    from ..rundir.fork import fork_record, fork_run
    from ..rundir.runs import Run

    parent = Run(args.fork)
    cfg = build_config(args, base=parent.config)
    run_dir = run_dir or default_run_dir(f"{parent.path.name}-fork")
    step = args.fork_step or 0
    trainer = fork_run(parent.path, run_dir, cfg, step)
    changed = "; ".join(f"{k} {a} -> {b}" for k, (a, b) in fork_record(run_dir)["changed"].items())
    print(f"fork of {parent.path} at step {step}: {changed}")
    return train_in_terminal(trainer, run_dir)
