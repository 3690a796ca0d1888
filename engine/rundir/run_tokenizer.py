"""A run's tokenizer.json, read as data and held to the run: its kind and size against config.toml, and its digest
against the one its weights were trained with, which every weights file's header records (`TOKENIZER_KEY`).

This is the check both `Run` (opening a run) and the run list (engine/rundir/listing.py) make, so a run the list
shows as sound opens, and one that would not open is named there. No torch here: a safetensors header is
eight bytes of length and a JSON object, read directly, and a BPE's file can be checked without building it.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path

from ..configs.config import ExperimentConfig
from ..errors import UserError
from .layout import CHECKPOINTS, MODEL_FILE, SNAPSHOTS, TOKENIZER, RunError, step_name, steps_in
from ..safe_io import JSON_CAP, WEIGHTS_CAP, UnsafeFileError, check_regular, parse_json, read_text

TOKENIZER_KEY = "tokenizer_sha256"  # in a run's weights files: the digest of the tokenizer they were trained with
HEADER_CAP = 16 << 20  # a safetensors header lists the tensors' names, types and offsets: kilobytes


def read_tokenizer(run_dir: Path, config: ExperimentConfig, build: bool = True):
    """The run's tokenizer.json, read as data (engine/text/tokenizer.py): its kind and size checked against
    `config` before anything is built, and against the tokenizer the run's newest weights name; a RunError
    naming the file otherwise. `build=False` checks a BPE's file without building it (the run list's way)."""
    from ..text.tokenizer import tokenizer_from_dict

    where = run_dir / TOKENIZER
    try:
        d = parse_json(read_text(where, JSON_CAP, "tokenizer file"), "tokenizer file")
    except (OSError, ValueError, UserError) as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
        raise RunError(f"{where} is missing or corrupt: {first}") from None
    try:
        tokenizer = tokenizer_from_dict(d, str(where), kind=config.data.tokenizer,
                                        vocab_size=config.model.vocab_size, build=build)
    except UserError as e:
        raise RunError(str(e)) from None
    try:
        verify_tokenizer(weights_metadata(newest_weights_file(run_dir)), lambda: tokenizer.digest, "")
    except UserError:
        raise RunError(f"{where} is not the tokenizer this run's weights were trained with (another run's, or an "
                       "edited one)") from None
    return tokenizer


def verify_tokenizer(metadata: dict | None, digest: Callable[[], str], where: str) -> None:
    """Refuse weights whose header names another tokenizer than the run's (`digest()`, computed only when the
    header names one: files written before it was recorded are read as before)."""
    want = (metadata or {}).get(TOKENIZER_KEY)
    if want is not None and want != digest():
        raise RunError(f"{where} was trained with another tokenizer than the run's tokenizer.json (another run's, "
                       "or an edited one)")


def newest_weights_file(run_dir: Path) -> Path | None:
    """The weights file of the run's newest saved step (its snapshot, else its checkpoint's model file)."""
    snapshots, checkpoints = steps_in(run_dir / SNAPSHOTS, False), steps_in(run_dir / CHECKPOINTS, True)
    step = max(snapshots + checkpoints, default=None)
    if step is None:
        return None
    if step in snapshots:
        return run_dir / SNAPSHOTS / f"{step_name(step)}.safetensors"
    return run_dir / CHECKPOINTS / step_name(step) / MODEL_FILE


def weights_metadata(path: Path | None) -> dict | None:
    """The `__metadata__` of a safetensors file's header, or None when there is no readable one (no file, a
    damaged one: whoever loads its tensors names it)."""
    if path is None:
        return None
    try:
        check_regular(path, WEIGHTS_CAP, "weights")
        with open(path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            if n > HEADER_CAP:
                return None
            header = json.loads(f.read(n))
    except (OSError, ValueError, UnsafeFileError, struct.error):
        return None
    meta = header.get("__metadata__") if isinstance(header, dict) else None
    return meta if isinstance(meta, dict) else None
