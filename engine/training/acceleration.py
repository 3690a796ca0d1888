"""How the training step runs fast: mixed precision (`torch.autocast`) and `torch.compile`, with fallbacks.

Precision (TrainConfig.precision): `auto` means bfloat16 autocast on a CUDA GPU that supports it
(`torch.cuda.is_bf16_supported()`, Ampere and later) and float32 everywhere else; `float32` never
autocasts; `bf16` autocasts on CUDA or the CPU when asked for explicitly (on most CPUs it is slower than
float32, so `auto` never picks it there: measured for issue 28 on a CPU with AVX512-bf16 but no AMX tiles,
nanogpt-cpu's forward + backward at one thread took 1.09x as long under bf16 autocast, benchmarks/cpu_bf16.py),
and is refused, in one line, on a GPU without bfloat16 or on MPS.
Only the training forward and its loss run under autocast, as in the PyTorch AMP recipe and nanoGPT; the
weights, gradients and AdamW state stay float32, so checkpoints, snapshots, forms, probes and the autograd
check see float32 weights whatever precision trained them. Validation loss and logged samples run in
float32 too: the validation loss is then the loss of the saved weights, comparable across precisions.
bfloat16 has float32's exponent range, so no loss scaling is needed (unlike float16).

Compile (TrainConfig.compile): `torch.compile` compiles lazily, at the first forward and backward, so a
missing compiler or an unsupported operation would surface in the middle of the first step. `compile_or_eager`
therefore runs one trial forward and backward on a batch of the training shape at set-up (with torch's
random state saved and restored, and the gradients cleared), and on any failure trains eagerly and says so
in one line. References: PyTorch "Automatic Mixed Precision" recipe; torch.compile tutorial; nanoGPT train.py.
"""

from __future__ import annotations

import contextlib

import torch

from ..errors import UserError

COMPILE_BACKEND = "inductor"  # tests set "eager" to exercise the compiled path without a C++ toolchain


class PrecisionError(UserError, ValueError):
    """A precision this device cannot train in."""


def autocast_dtype(precision: str, device: torch.device) -> torch.dtype | None:
    """The autocast dtype of the training step, or None for plain float32."""
    if precision == "float32":
        return None
    if precision == "auto":
        cuda_bf16 = device.type == "cuda" and torch.cuda.is_bf16_supported()
        return torch.bfloat16 if cuda_bf16 else None
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
