"""How the training step runs fast: mixed precision (`torch.autocast`) and `torch.compile`, with fallbacks.

Precision (TrainConfig.precision): `auto` means bfloat16 autocast where the hardware multiplies bfloat16 itself:
a CUDA GPU that supports it (`torch.cuda.is_bf16_supported()`, Ampere and later) or a CPU with AVX512-BF16 or
AMX tiles; float32 everywhere else (MPS, older CPUs, which would emulate it slowly). `float32` never autocasts;
`bf16` autocasts on CUDA or the CPU when asked for explicitly, and is refused, in one line, on a GPU without
bfloat16 or on MPS. Measured for issue 42 on a CPU with AVX512-BF16 but no AMX (AMD Zen 4), nanogpt-cpu at one
thread: bf16 autocast trains 1.45x as fast as float32 (the whole step, 2000 steps each, alternating), and both
reach the same validation loss (1.8950 and 1.8949, 100 fixed batches of 64); the matrix products run ~2.3x as
fast in bfloat16. The attention itself stays float32 on the CPU (engine/model/gpt.py `fused_attention`): the
CPU's bfloat16 attention kernel's backward is ~13x slower than float32's at these shapes, and made bf16 1.09x
slower than float32 before (issue 28).
Only the training forward and its loss run under autocast, as in the PyTorch AMP recipe and nanoGPT; the
weights, gradients and AdamW state stay float32, so checkpoints, snapshots, forms, probes and the autograd
check see float32 weights whatever precision trained them. Validation loss and logged samples run in
float32 too: the validation loss is then the loss of the saved weights, comparable across precisions.
bfloat16 has float32's exponent range, so no loss scaling is needed (unlike float16).

Compile (TrainConfig.compile): `torch.compile` compiles lazily, at the first forward and backward, so a
missing compiler or an unsupported operation would surface in the middle of the first step. `compile_or_eager`
therefore runs one trial forward and backward on a batch of the training shape at set-up (with torch's
random state saved and restored, and the gradients cleared), and on any failure trains eagerly and says so
in one line. What inductor compiles is kept in the user's cache folder (engine/user_cache.py, `torch-compile`)
unless $TORCHINDUCTOR_CACHE_DIR says elsewhere: its default, the system's temporary folder, is emptied by a reboot,
and nanogpt-cpu's step compiled in 217 s cold against 17.7 s from the cache (one thread, 2-core machine at load
9.5). References: PyTorch "Automatic Mixed Precision" recipe; torch.compile tutorial; nanoGPT train.py.
"""

from __future__ import annotations

import contextlib
import os

import torch

from ..errors import UserError
from ..user_cache import root as user_cache_root

COMPILE_BACKEND = "inductor"  # tests set "eager" to exercise the compiled path without a C++ toolchain
INDUCTOR_CACHE = "TORCHINDUCTOR_CACHE_DIR"  # where inductor keeps what it compiled (read when it first writes)


class PrecisionError(UserError, ValueError):
    """A precision this device cannot train in."""


def cpu_multiplies_bf16() -> bool:
    """Whether this CPU has bfloat16 dot-product instructions (AVX512-BF16) or AMX tiles."""
    probes = (getattr(torch.cpu, "_is_avx512_bf16_supported", None), getattr(torch.cpu, "_is_amx_tile_supported", None))
    return any(probe() for probe in probes if probe is not None)


def autocast_dtype(precision: str, device: torch.device) -> torch.dtype | None:
    """The autocast dtype of the training step, or None for plain float32."""
    if precision == "float32":
        return None
    if precision == "auto":
        native = (device.type == "cuda" and torch.cuda.is_bf16_supported()) or (
            device.type == "cpu" and cpu_multiplies_bf16())
        return torch.bfloat16 if native else None
    if precision != "bf16":
        raise PrecisionError(f"unknown precision {precision!r}; choose auto, float32 or bf16")
    if device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise PrecisionError("precision bf16 was asked for but this GPU has no bfloat16; use float32 or auto")
    if device.type not in ("cuda", "cpu"):
        raise PrecisionError(f"precision bf16 is available on CUDA and the CPU, not on {device.type}")
    return torch.bfloat16


def precision_name(dtype: torch.dtype | None) -> str:
    return "float32" if dtype is None else "bf16"


def autocast(device: torch.device, dtype: torch.dtype | None) -> contextlib.AbstractContextManager:
    """The context the training forward runs in: autocast to `dtype`, or nothing."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


def compile_or_eager(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor,
                     dtype: torch.dtype | None) -> tuple[torch.nn.Module, str | None]:
    """`torch.compile(model)` if one trial forward and backward on (x, y) succeeds, else `model` itself.

    Returns the module to train with and a one-line message when compiling failed. The trial leaves no
    trace: torch's random state is restored (dropout draws nothing from the training stream) and the
    gradients it made are cleared.
    """
    os.environ.setdefault(INDUCTOR_CACHE, str(user_cache_root() / "torch-compile"))  # one the user set stays
    try:
        compiled = torch.compile(model, backend=COMPILE_BACKEND)
        devices = [x.device] if x.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            with autocast(x.device, dtype):
                _, loss = compiled(x, y)
            loss.backward()
    except Exception as e:  # a missing compiler, an unsupported op, a backend bug: all mean "train eagerly"
        reason = (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
        return model, f"torch.compile could not compile this model ({reason}); training runs eagerly"
    finally:
        model.zero_grad(set_to_none=True)
    return compiled, None
