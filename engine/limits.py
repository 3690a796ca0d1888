"""What a config may ask of this machine: sizes, memory, threads, seeds and hyperparameters, checked
before anything is allocated.

A config reaches the engine from the builder, a preset, `--config`, or a run directory someone else
wrote; any of them may hold `d_model = 1000000`, `lr = inf` or `seed = 2**80`. `problems(cfg)` (part of
`ExperimentConfig.validate()`) refuses absurd values and a model whose weights and buffers alone would
not fit in this machine's memory, so opening such a run costs nothing. `training_problems(cfg)` adds what
only training needs: the training-memory estimate the builder shows (`memory_estimate_bytes`) against the
memory of the device it will train on, and a thread count within a small factor of the cores.
"""

from __future__ import annotations

import dataclasses
import math
import os

from .config import Problem, memory_estimate_bytes, parameter_count

# Far beyond any model GPT Explorer trains, far below what would exhaust memory on the way to a refusal.
MAX_SIZE = {"n_layer": 4096, "n_head": 4096, "d_model": 1 << 16, "d_ff": 1 << 18, "n_ctx": 1 << 16,
            "vocab_size": 1 << 22, "band": 1 << 16}
MAX_TRAIN = {"steps": 10 ** 9, "batch_size": 1 << 16, "eval_every": 10 ** 9, "eval_batches": 1 << 16,
             "report_every": 10 ** 9, "checkpoint_every": 10 ** 9, "keep_checkpoints": 10 ** 4,
             "snapshot_every": 10 ** 9, "probe_batch": 1 << 10, "warmup_steps": 10 ** 9}
MAX_SAMPLE_TOKENS = 100_000  # `sample --tokens` and train.sample_tokens: minutes of generation at most
MAX_THREADS = 1024           # torch_threads in any config
THREADS_PER_CORE = 4         # when training: torch_threads at most this many times the usable cores
MAX_LR = 10.0                # AdamW with lr > 10 diverges on the first step
MAX_SEED = 2 ** 63 - 1       # torch and numpy generators take 64-bit seeds; the trainer adds steps to it
MAX_BUDGET_MB = 1e7          # snapshot budget: 10 TB


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


MASK_PEAK_BYTES = 6  # per n_ctx² entry while the model builds its masks (engine/masks.py): the float mask
#                      being filled, a bool mask and its negation; 5 of them stay (mask_add and mask_ok)


def model_memory_bytes(m) -> int:
    """Peak bytes of building the model: float32 weights, the masks at their peak while built (n_ctx²) and
    the positions (n_ctx·d: a float64 angle, its sine, cosine and the choice of the two, as
    engine/positional.py computes them)."""
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
    """Absurd sizes and hyperparameters, and a model that would not fit in this machine's memory."""
    m, t = cfg.model, cfg.train
    p = [Problem(f"model.{k}", f"{getattr(m, k):,} is more than {hi:,}") for k, hi in MAX_SIZE.items()
         if getattr(m, k) > hi]
    p += [Problem(f"train.{k}", f"{getattr(t, k):,} is more than {hi:,}") for k, hi in MAX_TRAIN.items()
          if getattr(t, k) > hi]
    if t.sample_tokens > MAX_SAMPLE_TOKENS:
        p.append(Problem("train.sample_tokens", f"at most {MAX_SAMPLE_TOKENS:,}"))
    if t.torch_threads > MAX_THREADS:
        p.append(Problem("train.torch_threads", f"at most {MAX_THREADS}"))
    if not 0 <= t.seed <= MAX_SEED:
        p.append(Problem("train.seed", "must be from 0 to 2^63 − 1"))
    for name in ("lr", "min_lr", "weight_decay", "grad_clip", "beta1", "beta2", "snapshot_budget_mb"):
        if not math.isfinite(getattr(t, name)):
            p.append(Problem(f"train.{name}", "must be a finite number"))
    if math.isfinite(t.lr) and t.lr > MAX_LR:
        p.append(Problem("train.lr", f"a learning rate above {MAX_LR:g} only diverges"))
    if math.isfinite(t.snapshot_budget_mb) and t.snapshot_budget_mb > MAX_BUDGET_MB:
        p.append(Problem("train.snapshot_budget_mb", f"at most {MAX_BUDGET_MB:,.0f}"))
    if not math.isfinite(m.dropout):
        p.append(Problem("model.dropout", "must be a finite number"))
    if not p:
        need, have = model_memory_bytes(m), machine_memory()
        if have is not None and need > have:
            p.append(Problem("model.d_model", f"the model alone needs ≈ {gib(need)}, more than this "
                                              f"machine's {gib(have)} of memory"))
    return p


def training_problems(cfg, device_memory: int | None = None) -> list[Problem]:
    """What training needs beyond `problems`: memory for its estimate, and threads for the cores."""
    from .device import usable_cores

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
