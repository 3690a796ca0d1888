"""What keeps a run directory's weights trustworthy: checksums, finiteness, shapes and repair.

- Every checkpoint holds `checksums.json` (sha256 of its model and state files) and every snapshot a
  sidecar `step-N.safetensors.sha256`; a reader verifies them, so garbled bytes inside a well-formed file
  are noticed (safetensors alone checks only the header). Every weights file also carries, in its own
  header, the sha256 of its tensors' bytes (`DIGEST_KEY`), so deleting the checksum files does not make
  garbled weights trusted. Only a file written before either existed is read unverified. The header also
  names the tokenizer the weights were trained with (engine/rundir/run_tokenizer.py): another tokenizer.json is
  refused.
- No non-finite weight is ever written (`require_finite`), and none is accepted on reading.
- Weights read from a run must have exactly the names and shapes the run's config builds
  (`expected_shapes`, computed on torch's meta device: nothing is allocated), and must give finite
  probabilities on the start of the run's probe (`check_outputs`): finite weights that have exploded (a
  diverged run, max |w| 1e10) overflow in the forward pass, so sampling and every view would get NaN.
- A file whose checksum file matched is not hashed a second time for its header's digest (the same bytes).
- `sweep_temporaries` removes what killed writers left (`.tmp-*`, `.old-*`, `.*.tmp<pid>`), and
  `clear_half_made` empties a run directory whose creation was killed before its config was written.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import UserError
from ..safe_io import JSON_CAP, UnsafeFileError, parse_json, read_text

if TYPE_CHECKING:  # torch is imported where tensors are handled: a run's files are listed and checked without it
    import torch

CHECKSUMS = "checksums.json"
SIDECAR = ".sha256"


class IntegrityError(UserError, ValueError):
    """Weights that fail a checksum, hold non-finite numbers, or do not fit the run's config."""


class NonFiniteWeights(IntegrityError):
    """Weights about to be written hold Inf or NaN; nothing was written."""


class Diverged(IntegrityError):
    """Finite weights whose forward pass overflows: they cannot give finite probabilities."""


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def write_checksums(folder: Path, names: list[str]) -> None:
    """checksums.json in a checkpoint directory (still under its temporary name, so written plainly)."""
    (folder / CHECKSUMS).write_text(json.dumps({n: sha256_of(folder / n) for n in names}), encoding="utf-8")


def recorded_checksums(folder: Path, where: str) -> dict | None:
    """checksums.json of a checkpoint directory (name -> sha256), None when it has none."""
    path = folder / CHECKSUMS
    if not path.exists():
        return None  # written before checksums existed, or deleted
    try:
        sums = parse_json(read_text(path, JSON_CAP, "checksum file"), "checksum file")
    except (OSError, ValueError, UnsafeFileError):
        raise IntegrityError(f"{where}/{CHECKSUMS} is corrupt") from None
    if not isinstance(sums, dict):
        raise IntegrityError(f"{where}/{CHECKSUMS} is corrupt")
    return sums


def verify_checksums(folder: Path, names: list[str], where: str) -> bool:
    """Refuse files whose bytes differ from checksums.json's; False when there is none to check against
    (then the digest in a weights file's header is its check)."""
    sums = recorded_checksums(folder, where)
    if sums is None:
        return False
    for name in names:
        if sums.get(name) != sha256_of(folder / name):
            raise IntegrityError(f"{where}/{name} does not match its checksum (its bytes changed after writing)")
    return True


def sidecar_of(path: Path) -> Path:
    return path.with_name(path.name + SIDECAR)


def write_sidecar(path: Path, digest: str) -> None:
    tmp = path.with_name(f".{path.name}{SIDECAR}.tmp{os.getpid()}")
    tmp.write_text(digest, encoding="utf-8")
    os.replace(tmp, sidecar_of(path))


def verify_sidecar(path: Path) -> bool:
    """Refuse a snapshot whose bytes differ from its sidecar's checksum; False when it has none."""
    side = sidecar_of(path)
    if not side.exists():
        return False
    try:
        want = read_text(side, 1024, "checksum file").strip()
    except (OSError, ValueError, UnsafeFileError):
        raise IntegrityError(f"{side.name} is corrupt") from None
    if want != sha256_of(path):
        raise IntegrityError(f"{path.name} does not match its checksum (its bytes changed after writing)")
    return True


DIGEST_KEY = "weights_sha256"  # in a safetensors file's metadata


def _digest(named: list[tuple[str, np.ndarray]]) -> str:
    h = hashlib.sha256()
    for name, data in sorted(named, key=lambda kv: kv[0]):
        h.update(f"{name}\0{data.nbytes}\0".encode())
        h.update(np.ascontiguousarray(data).reshape(-1).view(np.uint8))
    return h.hexdigest()


def tensors_digest(weights: dict[str, torch.Tensor]) -> str:
    """The sha256 of the tensors' names and bytes, written into a weights file's metadata."""
    import torch

    return _digest([(k, v.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy())
                    for k, v in weights.items()])


def arrays_digest(arrays: dict[str, np.ndarray]) -> str:
    """`tensors_digest` of the same weights read as numpy arrays (no torch call)."""
    return _digest(list(arrays.items()))


def verify_digest(metadata: dict | None, digest: str, where: str) -> None:
    """Refuse weights whose bytes differ from those their file's metadata says were written."""
    want = (metadata or {}).get(DIGEST_KEY)
    if want is not None and want != digest:
        raise IntegrityError(f"{where} does not match the checksum in its header (its bytes changed after writing)")


def non_finite(weights: dict[str, torch.Tensor]) -> list[str]:
    """Names of the floating-point tensors holding Inf or NaN."""
    return [k for k, v in weights.items() if v.is_floating_point() and not _all_finite(v)]


def _all_finite(v: torch.Tensor) -> bool:
    """A sum is finite only when every entry is (an Inf or a NaN makes it Inf or NaN), and summing took GPT-2
    small's weights 0.1 s where testing each entry took 1.1-1.4 s; a sum that overflowed is tested entry by entry."""
    import torch

    return bool(torch.isfinite(v.sum())) or bool(torch.isfinite(v).all())


def require_finite(weights: dict[str, torch.Tensor], step: int) -> None:
    bad = non_finite(weights)
    if bad:
        shown = ", ".join(bad[:4]) + (", …" if len(bad) > 4 else "")
        raise NonFiniteWeights(f"the weights after step {step} hold Inf or NaN ({shown}); they were not saved")


def largest_weight(weights: dict[str, torch.Tensor]) -> str:
    """Which weight holds the largest |w|, and that value: where a divergence shows first."""
    sizes = {k: float(v.detach().abs().max()) for k, v in weights.items() if v.is_floating_point() and v.numel()}
    name = max(sizes, key=lambda k: (sizes[k] != sizes[k], sizes[k]))  # NaN counts as the largest
    return f"the largest weight is {name}, max |w| = {sizes[name]:.3g}"


# The outputs are checked on the first tokens of the probe's first row: weights that exploded overflow at every
# position, and under a causal mask these positions' logits are the whole row's there. GPT-2 small's whole
# 1024-token row took 3-10 s at every opening, as long as the rest of opening its run.
CHECK_TOKENS = 32


def check_outputs(model, weights: dict[str, torch.Tensor], idx: torch.Tensor, where: str) -> None:
    """Refuse weights whose logits on `idx` (B, T) are not all finite. `model` is a GPT of the weights'
    config, reused between calls: the weights are assigned into it, not copied."""
    import torch

    model.load_state_dict(weights, assign=True)
    with torch.no_grad():
        logits, _ = model.eval()(idx)
    if not bool(torch.isfinite(logits).all()):
        raise Diverged(f"{where}: these weights cannot give finite probabilities (the forward pass overflows; "
                       f"{largest_weight(weights)}): the run diverged here, use an earlier step")


def expected_shapes(model_cfg) -> dict[str, tuple[int, ...]]:
    """The state dict's names and shapes for a model config, without allocating any weight."""
    import torch

    from ..model.gpt import GPT

    with torch.device("meta"):
        model = GPT(model_cfg)
    return {k: tuple(v.shape) for k, v in model.state_dict().items()}


def check_weights(weights: dict[str, torch.Tensor], expected: dict[str, tuple[int, ...]], where: str) -> None:
    """Refuse weights with missing, extra or misshapen tensors, or non-finite values."""
    missing, extra = sorted(set(expected) - set(weights)), sorted(set(weights) - set(expected))
    if missing or extra:
        what = f"is missing {', '.join(missing[:4])}" if missing else f"has unknown {', '.join(extra[:4])}"
        raise IntegrityError(f"{where} {what}")
    for k, shape in expected.items():
        if tuple(weights[k].shape) != shape:
            raise IntegrityError(f"{where}: {k} has shape {tuple(weights[k].shape)}, the config needs {shape}")
    bad = non_finite(weights)
    if bad:
        raise IntegrityError(f"{where}: {bad[0]} holds Inf or NaN")


# ---- repair -------------------------------------------------------------------------------------

def _is_temporary(name: str) -> bool:
    return name.startswith((".tmp-", ".old-")) or (name.startswith(".") and ".tmp" in name)


def sweep_temporaries(run_dir: Path, subfolders: tuple[str, ...]) -> list[str]:
    """Remove temporary files and folders killed writers left; call only while holding the run's lock."""
    removed = []
    for folder in (run_dir, *(run_dir / s for s in subfolders)):
        if not folder.is_dir() or folder.is_symlink():
            continue
        for p in folder.iterdir():
            if not _is_temporary(p.name):
                continue
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
            removed.append(p.name)
    return removed


def is_half_made(run_dir: Path, made_names: tuple[str, ...]) -> bool:
    """A directory holding only what run creation writes, and no config (creation was killed)."""
    return run_dir.is_dir() and all(p.name in made_names or _is_temporary(p.name) for p in run_dir.iterdir())


def clear_half_made(run_dir: Path, made_names: tuple[str, ...], keep: tuple[str, ...] = ()) -> bool:
    """Empty a half-made run directory but for `keep` (the lock being held); False, touching nothing,
    when anything else is in it."""
    if not is_half_made(run_dir, made_names):
        return False
    for p in run_dir.iterdir():
        if p.name in keep:
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink()
    return True
