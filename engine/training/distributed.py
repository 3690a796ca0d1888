"""One run trained by several processes with torch.distributed: the process group and how a batch is shared.

The contract (`gpt-explorer train --nproc N`, or the same command launched by `torchrun`):

- `train.batch_size` is the global batch. At every step each of the N processes draws the whole batch
  from the run's seeded batch generator (B random offsets: cheap) and keeps rows [r·B/N, (r+1)·B/N).
  The shares are distinct and deterministic, and the generator's state after a step does not depend on
  N. DistributedDataParallel averages the gradients of equal shares, which is the gradient of the mean
  loss over the whole batch: N processes take the step one process takes on the concatenated batch, up
  to the order of float additions (and, under bf16 autocast, to bf16's coarser rounding of the products), and a run resumes with any N that divides the batch. Validation
  batches are shared the same way and their losses averaged.
- Dropout draws from each process's own torch generator; ranks above 0 are reseeded from (seed, rank,
  step) so their masks differ from rank 0's (whose stream the checkpoint keeps). With dropout a run is
  reproducible for a given N; without it, for any N.
- Rank 0 alone writes the run directory. Every rank reads the checkpoint when resuming, so across
  machines the run directory must be on a filesystem they all see (as nanoGPT's `out_dir`).
- Backends: NCCL on CUDA (one GPU per process, `cuda:LOCAL_RANK`), gloo on the CPU. `--nproc N`
  without torchrun spawns N processes (torch.multiprocessing, spawn) that meet on a free port of
  127.0.0.1; torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR/PORT) is read as is.

References: PyTorch "Getting started with DistributedDataParallel" and the torchrun documentation;
nanoGPT's train.py (DDP set-up from RANK, LOCAL_RANK and WORLD_SIZE).
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..errors import UserError

TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


@dataclass(frozen=True)
class Group:
    """This process's place among the processes training one run; `SOLO` is a run of one process."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0

    def place(self, device: torch.device) -> torch.device:
        """The device this process trains on: its own GPU when several share a machine."""
        if device.type == "cuda" and self.world > 1:
            torch.cuda.set_device(self.local_rank)
            return torch.device("cuda", self.local_rank)
        return device

    def shard(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """This process's rows of a batch drawn whole by every process."""
        if self.world == 1:
            return x, y
        b = x.shape[0] // self.world
        rows = slice(self.rank * b, (self.rank + 1) * b)
        return x[rows], y[rows]

    def wrap(self, module: torch.nn.Module, device: torch.device) -> torch.nn.Module:
        """DistributedDataParallel around the training module (gradients averaged in backward)."""
        if self.world == 1:
            return module
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(module, device_ids=[device.index] if device.type == "cuda" else None)

    def mean(self, t: torch.Tensor) -> torch.Tensor:
        """The mean of `t` over the processes (ReduceOp.AVG is NCCL-only, so a sum divided)."""
        if self.world == 1:
            return t
        import torch.distributed as dist

        t = t.clone()
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return t / self.world

    def share_of(self, batch_size: int) -> int:
        """Rows each process trains on; a batch that does not split evenly is the user's mistake."""
        if batch_size % self.world:
            raise UserError(f"train.batch_size {batch_size} does not split evenly over {self.world} processes; "
                            f"choose a batch size divisible by {self.world}")
        return batch_size // self.world


SOLO = Group()


def launched_by_torchrun() -> bool:
    """True in a process that torchrun (or another launcher speaking its protocol) started."""
    return all(v in os.environ for v in TORCHRUN_VARS) and int(os.environ["WORLD_SIZE"]) > 1


def join(device: torch.device) -> Group:
    """Join the process group the environment describes: NCCL for a CUDA device, gloo otherwise."""
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    if device.type == "cuda":
        if local >= torch.cuda.device_count():
            raise UserError(f"process {rank} wants GPU {local} but this machine has "
                            f"{torch.cuda.device_count()}; start at most one process per GPU")
        torch.cuda.set_device(local)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo", rank=rank, world_size=world)
    if rank and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # rank 0 decides when to stop, and checkpoints
    return Group(rank, world, local)


def leave() -> None:
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()


def broadcast(group: Group, value: object) -> object:
    """Rank 0's `value` on every rank (a small picklable object)."""
    if group.world == 1:
        return value
    import torch.distributed as dist

    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def reseed_dropout(group: Group, seed: int, step: int) -> None:
    """Give ranks above 0 their own dropout stream, derived from (seed, rank, step)."""
    if group.rank:
        torch.manual_seed((seed * 1_000_003 + group.rank * 7919 + step) % 2**63)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the rendezvous of spawned processes never leaves the machine)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn(n: int, target: Callable[..., int], args: tuple) -> int:
    """Run `target(*args)` in n fresh processes forming one group on 127.0.0.1; the exit status.

    SIGINT is ignored here while they run (the children inherit that): rank 0 installs its own handler,
    stops between steps and checkpoints, and its exit status (130) makes the others stop.
    """
    import torch.multiprocessing as mp

    port = free_port()
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        mp.spawn(_spawned, args=(n, port, target, args), nprocs=n, join=True)
    except mp.ProcessExitedException as e:
        return e.exit_code if e.exit_code > 0 else 1
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)
    return 0


def _spawned(rank: int, world: int, port: int, target: Callable[..., int], args: tuple) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
                      LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world))
    rc = target(*args)
    sys.stdout.flush()
    if rc:
        sys.exit(rc)
