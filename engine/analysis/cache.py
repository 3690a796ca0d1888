"""The one cache policy of RunAnalysis: derived results in memory, keyed by what they were computed from.

A result is stored under (analysis name, step, parameters) with the fingerprint of the weights file it
came from (size and modification time: a snapshot rewritten or thinned away changes it). `sync` is the one
place where results are invalidated when the run changes: entries whose step's file changed are dropped,
and so are the entries marked `spans_steps` (they read the next saved step, e.g. an update ΔW) whenever
the list of saved steps changes. Memory is bounded by the bytes of the numpy arrays the results hold
(`nbytes`), least recently used first.

On disk (RUN/cache/), records that are expensive and large (coefficient records) are kept by
`engine.coefficients.cache.CoefficientStore` under the same fingerprint (`weights_fingerprint`).
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

import numpy as np

from ..rundir.runs import CHECKPOINTS, MODEL_FILE, SNAPSHOTS, RunError, step_name


def weights_file(run_path: Path, step: int) -> Path:
    """The file holding the weights saved at `step`: its snapshot, else its checkpoint's model."""
    snap = run_path / SNAPSHOTS / f"{step_name(step)}.safetensors"
    return snap if snap.is_file() else run_path / CHECKPOINTS / step_name(step) / MODEL_FILE


def weights_fingerprint(run_path: Path, step: int) -> str:
    """Size and mtime of the weights at `step`: what a cached result at that step was computed from."""
    try:
        st = weights_file(run_path, step).stat()
    except OSError:
        raise RunError(f"{run_path} has no weights saved at step {step}") from None
    return f"{st.st_size}:{st.st_mtime_ns}"


def nbytes(value: Any) -> int:
    """Bytes of the numpy arrays in a result (dataclasses, dicts, tuples and lists looked into)."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(nbytes(getattr(value, f.name)) for f in dataclasses.fields(value))
    if isinstance(value, dict):
        return sum(nbytes(v) for v in value.values())
    if isinstance(value, (tuple, list)):
        return sum(nbytes(v) for v in value)
    return 0


class ResultCache:
    """Thread-safe: a worker computes while another thread may `peek`."""

    def __init__(self, run_path: Path, max_bytes: int = 128 * 2**20):
        self.run_path, self.max_bytes = run_path, max_bytes
        self._lock = threading.RLock()
        self._entries: OrderedDict[tuple, tuple[str, bool, Any]] = OrderedDict()  # key -> (fp, spans, value)
        self._sizes: dict[tuple, int] = {}
        self._bytes = 0
        self._steps: tuple[int, ...] | None = None

    def peek(self, name: str, step: int, params: Hashable = ()) -> Any | None:
        with self._lock:
            got = self._entries.get((name, step, params))
            if got is None:
                return None
            self._entries.move_to_end((name, step, params))
            return got[2]

    def get(self, name: str, step: int, params: Hashable, compute: Callable[[], Any],
            spans_steps: bool = False) -> Any:
        """The result stored under (name, step, params), computed by `compute()` when missing."""
        got = self.peek(name, step, params)
        if got is not None:
            return got
        fingerprint = weights_fingerprint(self.run_path, step)
        value = compute()
        key, size = (name, step, params), nbytes(value)
        with self._lock:
            if key not in self._entries:
                self._entries[key], self._sizes[key] = (fingerprint, spans_steps, value), size
                self._bytes += size
            while self._bytes > self.max_bytes and len(self._entries) > 1:
                self._drop(next(iter(self._entries)))
        return value

    def _drop(self, key: tuple) -> None:
        del self._entries[key]
        self._bytes -= self._sizes.pop(key)

    def sync(self, saved_steps: list[int]) -> bool:
        """Drop what the run's growth (or a rewritten file) made stale; True when the steps changed."""
        steps = tuple(saved_steps)
        with self._lock:
            grew = self._steps is not None and steps != self._steps
            self._steps = steps
            for key, (fingerprint, spans, _) in list(self._entries.items()):
                step = key[1]
                if (grew and spans) or step not in steps or self._stale(step, fingerprint):
                    self._drop(key)
        return grew

    def _stale(self, step: int, fingerprint: str) -> bool:
        try:
            return weights_fingerprint(self.run_path, step) != fingerprint
        except RunError:
            return True

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
