"""`gpt-explorer train --nproc N`, and `gpt-explorer train` launched by torchrun: one run, several processes.

The command-line side of engine/training/distributed.py. The run is planned (its directory, new or resumed) and
every option refused before any process trains; then each process joins the group, builds its Trainer
and trains its share of every batch. Rank 0 prints the progress and writes the run directory, the others
train silently; Ctrl-C reaches rank 0, which checkpoints between steps and exits with 130, and the
launcher (spawn here, or torchrun) then ends the others.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ._plan import build_config, make_trainer, plan_run
from ._train_loop import train_in_terminal
from ..errors import UserError


def run_parallel(args: argparse.Namespace) -> int:
    from ..training.distributed import launched_by_torchrun, spawn

    if launched_by_torchrun():
        world = int(os.environ["WORLD_SIZE"])
        if args.nproc not in (None, world):
            raise UserError(f"--nproc {args.nproc} disagrees with torchrun's {world} processes; "
                            "leave --nproc out under torchrun")
        return run_rank(args, *_plan(args, world))
    if args.nproc < 1:
        raise UserError("--nproc must be at least 1")
    if args.nproc == 1:
        run_dir, resume = plan_run(args)
        return train_in_terminal(make_trainer(args, run_dir, resume), run_dir)
    return spawn(args.nproc, run_rank, (args, *_plan(args, args.nproc)))


def _plan(args: argparse.Namespace, world: int) -> tuple[Path, bool, str]:
    """(run directory, resumed?, device name), refusing here what every process would refuse."""
    from ..configs.config import ConfigError
    from ..training.distributed import Group
    from ..rundir.runs import Run

    run_dir, resume = plan_run(args)
    cfg = Run(run_dir).config if resume else build_config(args)
    problems = cfg.validate()
    if problems:
        raise ConfigError("; ".join(map(str, problems)))
    Group(world=world).share_of(cfg.train.batch_size)
    return run_dir, resume, args.device or cfg.train.device


def run_rank(args: argparse.Namespace, run_dir: Path, resume: bool, device_name: str) -> int:
    """One process's part: join the group, train, leave. The exit status: 0 done, 1 a non-finite loss,
    2 a refusal (printed here: a spawned process has no CLI around it), 130 stopped by Ctrl-C."""
    from ..training.device import pick_device
    from ..training.distributed import broadcast, join, leave, reseed_dropout

    rank = os.environ.get("RANK", "?")
    try:
        group = join(pick_device(device_name))
        # under torchrun each process planned alone: rank 0's plan (and timestamped directory) wins
        run_dir, resume = broadcast(group, (str(run_dir), resume))
        run_dir = Path(run_dir)
        trainer = make_trainer(args, run_dir, resume, group)
        _share_cores(trainer)
        reseed_dropout(group, trainer.cfg.train.seed, trainer.step)
        rc = train_in_terminal(trainer, run_dir) if group.rank == 0 else _follow(trainer)
    except UserError as e:
        where = "" if rank == "0" else f" (process {rank})"
        print(f"gpt-explorer: error{where}: {e}", file=sys.stderr, flush=True)
        return 2
    if rc in (0, 1):  # every process got here together; a stopped rank 0 leaves the others mid-step
        leave()
    return rc


def _follow(trainer) -> int:
    """Train silently (ranks above 0): the same steps as rank 0, in lockstep through the all-reduces."""
    last = None
    for last in trainer.steps():
        pass
    return 1 if last is not None and last.event == "nan" else 0


def _share_cores(trainer) -> None:
    """On the CPU the processes on one machine share its cores instead of each taking all of them."""
    from ..training.device import set_threads
    from ..training.thread_policy import usable_cores

    if trainer.device.type == "cpu" and trainer.cfg.train.torch_threads == 0:
        local = int(os.environ.get("LOCAL_WORLD_SIZE", trainer.group.world))
        trainer.threads = set_threads(max(1, usable_cores() // local))
