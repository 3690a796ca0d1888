"""Where training runs and on how many threads: `pick_device` and `set_threads`.

`auto` takes the first present of config_fields.AUTO_DEVICES (CUDA, then Apple's MPS, then the CPU),
the order the builder and the command line's help state. Asking for a device that is unknown or not present
is a user's mistake (one line on the command line), not a crash.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

from .thread_policy import usable_cores
from ..configs.config import DEVICES
from ..configs.fields import AUTO_DEVICES
from ..errors import UserError


class DeviceError(UserError, ValueError):
    """A device that does not exist on this machine or is not a device at all."""


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps and mps.is_available())


def _present(device: str) -> bool:
    return {"cuda": torch.cuda.is_available, "mps": _mps_available}.get(device, lambda: True)()


def pick_device(name: str) -> torch.device:
    """'auto' → the first of AUTO_DEVICES present (CUDA, then MPS, then CPU); 'cpu' | 'cuda' | 'mps' must
    be present."""
    if name == "auto":
        return torch.device(next(d for d in AUTO_DEVICES if _present(d)))
    if name == "cpu":
        return torch.device("cpu")
    if name == "cuda":
        if not torch.cuda.is_available():
            raise DeviceError("device 'cuda' was asked for but no CUDA GPU is available (try --device auto)")
        return torch.device("cuda")
    if name == "mps":
        if not _mps_available():
            raise DeviceError("device 'mps' was asked for but Apple's MPS is not available (try --device auto)")
        return torch.device("mps")
    raise DeviceError(f"unknown device {name!r}; choose one of {', '.join(DEVICES)}")


def analysis_device() -> torch.device:
    """Where a run's analyses compute: CUDA when present (GPT-2 small's are backward passes and forwards over
    its whole probe), else the CPU, MPS included (it lacks the float64 some analyses take)."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def set_threads(n: int) -> int:
    """Set torch's intra-op thread count; 0 means every usable core. Returns the count in force.

    The default (0) comes from measurement (see TrainConfig.torch_threads): training may use every core
    as long as the GUI thread sleeps between events.
    """
    want = usable_cores() if n <= 0 else n
    if torch.get_num_threads() != want:
        torch.set_num_threads(want)
    return want


@contextmanager
def single_thread() -> Iterator[None]:
    """Run a block on one torch thread, then restore the count (in this thread).

    For batch-1 work such as sampling text: measured here (nanogpt-cpu, 200 tokens) one thread is as fast
    as two on an idle 2-core machine, and 15-25x faster when another process holds a core, because
    OpenMP's threads wait for each other at every tiny operation.
    """
    saved = torch.get_num_threads()
    if saved != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if saved != 1:
            torch.set_num_threads(saved)
