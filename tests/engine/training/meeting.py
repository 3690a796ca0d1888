"""What a process spawned by test_distributed.py does: a module of its own, so that the process imports
torch and engine/training/distributed.py and not the test module's imports."""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch

from engine.training.distributed import broadcast, join, leave


def meet(out_dir: str, status: int) -> int:
    """Join the group spawn set up, average a tensor, take rank 0's value, report; rank 1 exits with `status`."""
    group = join(torch.device("cpu"))
    mean = group.mean(torch.tensor([float(group.rank + 1)])).item()
    said = broadcast(group, f"from rank {group.rank}")
    env = {k: os.environ[k] for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR")}
    Path(out_dir, f"rank{group.rank}.json").write_text(json.dumps(
        {"rank": group.rank, "world": group.world, "mean": mean, "said": said, "env": env}))
    group.mean(torch.zeros(1))  # both have reported before either exits
    leave()
    return status if group.rank else 0
