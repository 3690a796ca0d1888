"""What a config may ask of this machine: memory and threads, checked before anything is allocated.

A config reaches the engine from the builder, a preset, `--config`, or a run directory someone else
wrote; any of them may hold `d_model = 1000000`, `lr = inf` or `seed = 2**80`. The table of
engine/configs/fields.py bounds every field (absurd sizes, non-finite numbers, seeds beyond 64 bits);
`problems(cfg)` (part of `ExperimentConfig.validate()`, after the table's checks pass) refuses a model
whose weights and buffers alone would not fit in this machine's memory, so opening such a run costs
nothing. `training_problems(cfg)` adds what only training needs: the training-memory estimate the builder
shows (`memory_estimate_bytes`) against the memory of the device it will train on, and a thread count
within a small factor of the cores.
"""

from __future__ import annotations

import dataclasses
import os

from .fields import BY_KEY
from .problem import Problem
from .sizes import memory_estimate_bytes, parameter_count
from ..training.thread_policy import usable_cores

# Bounds a command-line option shares with a config field (the fields' own are in config_fields's table).
MAX_SAMPLE_TOKENS = int(BY_KEY["train.sample_tokens"].hi)  # `sample --tokens` as train.sample_tokens
MAX_SEED = int(BY_KEY["train.seed"].hi)                    # `sample --seed` as train.seed
THREADS_PER_CORE = 4  # when training: torch_threads at most this many times the usable cores


def machine_memory() -> int | None:
    """Physical memory in bytes (None where the OS does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        pass
    try:  # Windows
        import ctypes

        class MemoryStatus(ctypes.Structure):
            _fields_ = [("length", ctypes.c_ulong), ("load", ctypes.c_ulong), ("total", ctypes.c_ulonglong),
                        ("avail", ctypes.c_ulonglong), ("rest", ctypes.c_ulonglong * 5)]
        status = MemoryStatus(length=ctypes.sizeof(MemoryStatus))
        ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(status))
        return int(status.total)
    except Exception:  # noqa: BLE001 — no way to know: the size bounds still hold
        return None


def gib(n: float) -> str:
    return f"{n / 2 ** 30:,.1f} GiB" if n >= 2 ** 30 else f"{n / 2 ** 20:,.1f} MiB"


MASK_PEAK_BYTES = 6  # per n_ctx² entry while the model builds its masks (engine/model/masks.py): the float mask
#                      being filled, a bool mask and its negation; 5 of them stay (mask_add and mask_ok)


def model_memory_bytes(m) -> int:
    """Peak bytes of building the model: float32 weights, the masks at their peak while built (n_ctx²) and
    the positions (n_ctx·d: a float64 angle, its sine, cosine and the choice of the two, as
    engine/model/positional.py computes them)."""
    return 4 * parameter_count(m) + MASK_PEAK_BYTES * m.n_ctx * m.n_ctx + 32 * m.n_ctx * m.d_model


WARN_SHARE = 0.5  # a run that would take more than half the memory leaves the rest of the machine crawling


def memory_warning(cfg, device_memory: int | None = None) -> str | None:
    """A warning when training fits but would take more than WARN_SHARE of the memory; else None."""
    need = memory_estimate_bytes(cfg)
    have = device_memory if device_memory is not None else machine_memory()
    if have is None or not WARN_SHARE * have < need <= have:
        return None
    return (f"training memory ≈ {gib(need)} is {need / have:.0%} of this machine's {gib(have)}; lower "
            "batch_size or n_ctx to leave room for the rest")


def problems(cfg) -> list[Problem]:
    """A model that would not fit in this machine's memory (sizes within the table's bounds)."""
    need, have = model_memory_bytes(cfg.model), machine_memory()
    if have is not None and need > have:
        return [Problem("model.d_model", f"the model alone needs ≈ {gib(need)}, more than this "
                                         f"machine's {gib(have)} of memory")]
    return []


def training_problems(cfg, device_memory: int | None = None) -> list[Problem]:
    """What training needs beyond `problems`: memory for its estimate, and threads for the cores."""
    p = []
    cores = usable_cores()
    if cfg.train.torch_threads > THREADS_PER_CORE * cores:
        p.append(Problem("train.torch_threads", f"{cfg.train.torch_threads} threads on {cores} core(s): at "
                                                f"most {THREADS_PER_CORE * cores}"))
    need = memory_estimate_bytes(cfg)
    have = device_memory if device_memory is not None else machine_memory()
    if have is not None and need > have:
        p.append(Problem(_driving_field(cfg, need), f"training memory ≈ {gib(need)} is more than this "
                                                    f"machine's {gib(have)}; lower batch_size, n_ctx or "
                                                    "the model's size"))
    return p


def _driving_field(cfg, need: int) -> str:
    """The field a memory problem is shown beside: n_ctx where the T² attention maps and masks take most of
    it (halving n_ctx then saves more than half), batch_size where other activations do, else d_model."""
    m = cfg.model
    half = dataclasses.replace(cfg, model=dataclasses.replace(m, n_ctx=max(1, m.n_ctx // 2)))
    if 2 * memory_estimate_bytes(half) < need:
        return "model.n_ctx"
    return "train.batch_size" if need > 8 * model_memory_bytes(m) else "model.d_model"
