"""What `gpt-explorer train`'s options make, in one process or each of several (engine/cli/_parallel.py): the
config, the run directory (new, restarted or resumed, the options refused here before anything trains) and
the Trainer.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import time
from pathlib import Path

from ..errors import UserError


def build_config(args: argparse.Namespace, base=None):
    """The ExperimentConfig the options describe (a preset or file, else `base`, then the overrides)."""
    from ..configs.config import ExperimentConfig, parse_setting
    from ..configs.presets import DEFAULT_PRESET, load_preset

    if args.config:
        cfg = ExperimentConfig.load(args.config)
    else:
        cfg = base if base is not None and not args.preset else load_preset(args.preset or DEFAULT_PRESET)
    for setting in getattr(args, "set", None) or []:
        cfg = parse_setting(setting, cfg)
    train, data = cfg.train, cfg.data
    if args.corpus is not None:
        from ..text.corpus import BUNDLED

        corpus = args.corpus if args.corpus in BUNDLED else str(Path(args.corpus).expanduser().resolve())
        data = dataclasses.replace(data, corpus=corpus)
    overrides = {k: getattr(args, k) for k in ("steps", "device", "seed", "precision", "compile", "optimizer")
                 if getattr(args, k, None) is not None}
    return cfg.replace(train=dataclasses.replace(train, **overrides), data=data)


def refuse_a_missing_corpus(args: argparse.Namespace) -> None:
    """A corpus file the options name (--corpus, or a new run's config) that is not there, or is a folder, is
    refused before anything loads torch: that was ~1.5 s of CPU first, and the app's sample run, trained at low
    priority, said "corpus file not found" after 10 s on a loaded machine. A resumed run's own corpus is left to
    its resume, which may not need it."""
    from ..rundir.runs import CONFIG
    from ..text.corpus import BUNDLED, corpus_file

    if args.corpus is not None:
        corpus = args.corpus
    elif not getattr(args, "fork", None) and not (args.run and (Path(args.run) / CONFIG).is_file()):
        corpus = build_config(args).data.corpus  # a new run's
    else:
        return
    if corpus not in BUNDLED:
        corpus_file(corpus)


def default_run_dir(name: str) -> Path:
    slug = re.sub(r"[^\w.-]+", "-", name).strip("-.") or "run"
    base = Path("runs") / f"{slug}-{time.strftime('%Y%m%d-%H%M%S')}"
    path, i = base, 1
    while path.exists():
        i += 1
        path = base.with_name(f"{base.name}-{i}")
    return path


def plan_run(args: argparse.Namespace) -> tuple[Path, bool]:
    """The run directory and whether it is resumed; the options are refused here, before training."""
    from ..rundir.integrity import is_half_made
    from ..rundir.runs import CONFIG, MADE_FILES, Run, RunError

    run_dir = Path(args.run) if args.run else None
    if run_dir is not None and (run_dir / CONFIG).is_file():
        run = Run(run_dir)
        if not run.checkpoint_steps():
            if run.warnings_about("checkpoint"):  # it had checkpoints: never started afresh over them
                raise RunError(f"{run_dir} has no intact checkpoint to resume from: "
                               + "; ".join(run.warnings_about("checkpoint")))
            _restart(args, run_dir)
            return run_dir, False
        _check_resumable(args, run_dir)
        return run_dir, True
    if run_dir is not None and run_dir.exists() and not is_half_made(run_dir, MADE_FILES):
        raise RunError(f"{run_dir} is not a run directory (it has no {CONFIG}) and is not empty; "
                       "choose a new directory or an existing run")
    return run_dir or default_run_dir(build_config(args).name), False


def make_trainer(args: argparse.Namespace, run_dir: Path, resume: bool, group=None):
    """The Trainer of a planned run: resumed, or new (`group`: this process's place among several)."""
    from ..training.distributed import SOLO
    from ..training.trainer import Trainer

    group = group or SOLO
    if resume:
        from ..rundir.runs import Run

        edit = build_config(args, base=Run(run_dir).config) if _edits(args) else None
        corpus = None if args.corpus is None else build_config(args).data.corpus  # fine-tuning on other text
        return Trainer.resume(run_dir, config=edit, steps=args.steps, device=args.device, group=group, corpus=corpus,
                              precision=getattr(args, "precision", None), compile=getattr(args, "compile", None))
    return Trainer(getattr(args, "fresh_config", None) or build_config(args), run_dir, group=group)


def _restart(args: argparse.Namespace, run_dir: Path) -> None:
    """A run stopped before its first checkpoint has nothing to resume from: it is trained afresh with
    its own config (or the one the options give), which `make_trainer` finds in args.fresh_config."""
    from ..rundir.lock import RunLock
    from ..rundir.runs import CONFIG, Run

    cfg = Run(run_dir).config
    if args.preset or args.config or args.corpus is not None or args.seed is not None:
        cfg = build_config(args)
    else:
        overrides = {k: getattr(args, k) for k in ("steps", "device", "precision", "compile")
                     if getattr(args, k, None) is not None}
        cfg = cfg.replace(train=dataclasses.replace(cfg.train, **overrides))
    with RunLock(run_dir):  # not while another process is creating or training it
        (run_dir / CONFIG).unlink()  # what is left is a half-made run, which the Trainer clears
    args.fresh_config = cfg
    print(f"{run_dir} was stopped before its first checkpoint; starting it afresh", file=sys.stderr)


def _edits(args: argparse.Namespace) -> bool:
    """Whether the options edit the run's settings beyond what resuming always may change (steps, device,
    precision, compile, corpus)."""
    return bool(args.preset or args.config or args.seed is not None or args.optimizer or getattr(args, "set", None))


def _check_resumable(args: argparse.Namespace, run_dir: Path) -> None:
    """An edit of a run's settings continues the run when its weights can follow it; one that needs a new run
    (a new shape, a new vocabulary) is refused here, naming what that run would not keep
    (engine/training/continuation.py), since the command line cannot ask."""
    from ..rundir.runs import Run
    from ..training.continuation import CONTINUE, plan_edit

    if not _edits(args):
        return
    run = Run(run_dir)
    plan = plan_edit(run, build_config(args, base=run.config))
    if plan.action != CONTINUE:
        raise UserError(plan.refusal(run_dir))
