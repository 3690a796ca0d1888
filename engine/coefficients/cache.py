"""`CoefficientStore`: a run's coefficient records (engine/coefficients/__init__.py), cached in memory and on disk.

    RUN/cache/coefficients/<dtype>/<weight>/step-NNNNNN.npz

Each file holds one StepCoefficient and a fingerprint of what it was computed from (the weights file's size
and mtime, the probe batch, a format version); one that does not match, or does not read, is computed
again and rewritten (atomically: a temporary name, then a rename). The cache is safe to delete and Run never
reads it. In memory, records are kept least-recently-used within a byte budget; the small per-step
summaries the charts draw are kept for every step computed. Thread-safe: a job thread computes while the
GUI thread peeks at what is in memory (`peek`, `summaries`), which never blocks on a computation.

What every weight of one step shares is computed once per step and kept while that step is asked about:
autograd's −∂L/∂W of all weights (one backward) and the forms bound to the weights and the probe batch. On
GPT-2 small each took 10–25 s, and both were made again for every weight; there the bound forms (~4.5 GB on
its 1024-token probe) are made again for each split rather than kept, so the process does not stay at
~9 GB while the pane is open. A large model's first answer
(`first`) is G alone (`StepCoefficient.pending`); `record` then splits it.
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from .. import coefficients as co
from ..rundir import integrity as integrity
from ..analysis.cache import weights_fingerprint
from ..training.device import analysis_device
from ..errors import UserError
from ..rundir.runs import CHECKPOINTS, MODEL_FILE, SNAPSHOTS, Run, RunError, atomic_write_bytes, step_name
from ..safe_io import WEIGHTS_CAP, UnsafeFileError, check_inside, check_regular

CACHE_DIR = Path("cache") / "coefficients"
VERSION = 3  # 2: a record may be unsplit (over the split's budget) and says why; 3: classes kept as rows


def read_array(run_path: Path, step: int, weight: str, shape: tuple[int, ...]) -> np.ndarray:
    """One weight at a saved step, through the checks Run.load_weights makes (a regular file, its
    checksums, the digest in its header, the shape, finite values) with numpy alone; a damaged snapshot
    falls back to the checkpoint of its step, as there, and is otherwise a RunError naming the file."""
    snap = run_path / SNAPSHOTS / f"{step_name(step)}.safetensors"
    ckpt = run_path / CHECKPOINTS / step_name(step) / MODEL_FILE
    if not os.path.lexists(snap):
        return _checked_array(run_path, ckpt, step, weight, shape)
    try:
        return _checked_array(run_path, snap, step, weight, shape)
    except RunError:
        if not ckpt.is_file():
            raise
        return _checked_array(run_path, ckpt, step, weight, shape)


def _checked_array(run_path: Path, path: Path, step: int, weight: str, shape: tuple[int, ...]) -> np.ndarray:
    from safetensors import safe_open

    where = path.relative_to(run_path).as_posix()
    try:
        check_regular(path, WEIGHTS_CAP, f"weights file {where}")
        if path.parent.name == SNAPSHOTS:
            verified = integrity.verify_sidecar(path)
        else:
            verified = integrity.verify_checksums(path.parent, [MODEL_FILE], f"{CHECKPOINTS}/{path.parent.name}")
        with safe_open(str(path), framework="numpy") as f:
            if verified:  # the file's bytes are those written: read the one weight asked for
                metadata, arrays = f.metadata(), {weight: f.get_tensor(weight)} if weight in f.keys() else {}
            else:
                metadata, arrays = f.metadata(), {k: f.get_tensor(k) for k in f.keys()}
                integrity.verify_digest(metadata, integrity.arrays_digest(arrays), where)
    except FileNotFoundError:
        raise RunError(f"the weights at step {step} are missing ({where})") from None
    except UserError as e:
        raise RunError(f"the weights at step {step} ({where}) are damaged: {e}") from None
    except Exception as e:  # safetensors' own error type for a truncated or foreign file
        raise RunError(f"{where} is corrupt or truncated: {str(e).splitlines()[0][:160]}") from None
    a = arrays.get(weight)
    if a is None or a.shape != tuple(shape):
        raise RunError(f"{where}: {weight} is {'missing' if a is None else f'of shape {a.shape}'}, the config "
                       f"needs {tuple(shape)}")
    if not np.isfinite(a).all():
        raise RunError(f"{where}: {weight} holds Inf or NaN")
    return a


class CoefficientStore:
    """`compute(weight, step) -> StepCoefficient`, when given, replaces computing in this thread (the
    weight pane computes in another process, so the GUI thread never waits for this one's interpreter)."""

    def __init__(self, run: Run, dtype: str = "float32", memory_mb: float = 256, disk: bool = True,
                 compute=None):
        if dtype not in co.DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(co.DTYPES)}")
        self.run, self.dtype, self.disk, self._compute = run, dtype, disk, compute
        self.cfg = run.config.model
        probe = run.probe()
        self.x, self.y = probe.x, probe.y
        self._probe_hash = hashlib.sha1(probe.x.tobytes() + probe.y.tobytes()).hexdigest()
        self._budget = int(memory_mb * 1e6)
        self._lock = threading.RLock()
        self._records: OrderedDict[tuple, object] = OrderedDict()  # (kind, weight, step) -> record/Update
        self._bytes = 0
        self._summaries: dict[str, dict[int, co.Summary]] = {}
        self._geometry: dict[str, dict[int, tuple[float, float, float]]] = {}  # step -> (cos, ratio, ‖ΔW‖)
        self._weights: tuple[int, dict] | None = None
        self._shared: tuple[int, dict] | None = None  # (step, what its weights share: grads, snapshot)
        self.progressive = co.progressive(self.cfg, int(np.asarray(self.x).size))
        self.device = analysis_device()  # where its backward passes run (CUDA when present)
        self.computed = 0  # records computed (not read from a cache): tests and the benchmark read it

    # ---- what there is --------------------------------------------------------------------------

    def steps(self) -> list[int]:
        """Saved steps (snapshots and checkpoints), listed afresh: a live run keeps adding them."""
        return self.run.saved_steps()

    def weight_names(self) -> list[str]:
        from ..model.gpt import weight_names

        return weight_names(self.cfg)

    def folder(self, weight: str) -> Path:
        return self.run.path / CACHE_DIR / self.dtype / weight

    # ---- GUI-thread reads (memory only, never compute) ------------------------------------------

    def peek(self, weight: str, step: int) -> co.StepCoefficient | None:
        with self._lock:
            return self._get(("record", weight, step))

    def peek_update(self, weight: str, step: int) -> co.Update | None:
        with self._lock:
            return self._get(("update", weight, step))

    def summaries(self, weight: str) -> dict[int, co.Summary]:
        with self._lock:
            return dict(self._summaries.get(weight, {}))

    def geometry(self, weight: str) -> dict[int, tuple[float, float, float]]:
        """step -> (cos(ΔW, G), ‖ΔW‖/‖G‖, ‖ΔW‖) for the updates computed so far."""
        with self._lock:
            return dict(self._geometry.get(weight, {}))

    # ---- job-thread reads (compute when needed) -------------------------------------------------

    def record(self, weight: str, step: int) -> co.StepCoefficient:
        """The whole record: G split into its classes (unless over the split's budget)."""
        got = self.peek(weight, step)
        if got is not None and not got.pending:
            return got
        got = self._read(weight, step)
        if got is None:
            if self._compute is not None:
                got = self._compute(weight, step)
            else:
                got = self._computed(weight, step, split=True)
            self.computed += 1
            self._write(got)
        self._keep(("record", weight, step), got, replace=True)
        return got

    def first(self, weight: str, step: int) -> co.StepCoefficient:
        """What can be shown first: the whole record when it is known or the model is small, else G alone
        (`pending`: one autograd backward for the step, shared by all its weights)."""
        got = self.peek(weight, step)
        if got is not None:
            return got
        if not self.progressive or self._compute is not None:
            return self.record(weight, step)
        got = self._read(weight, step)
        if got is None:
            got = self._computed(weight, step, split=False)
        self._keep(("record", weight, step), got)
        return got

    def _computed(self, weight: str, step: int, split: bool) -> co.StepCoefficient:
        weights, grads = self.gradients(step)
        shared = self._shared_at(step, weights)

        def snapshot():
            got = shared.get("snapshot")
            if got is None:
                from ..forms import Snapshot

                got = Snapshot(self.cfg, weights, self.x, self.y, co.DTYPES[self.dtype])
                if not self.progressive:  # GPT-2 small's bound forms are ~4.5 GB: made again for each split
                    shared["snapshot"] = got
            return got

        return co.step_coefficient(self.cfg, weights, self.x, self.y, weight, step, co.DTYPES[self.dtype],
                                   snapshot=snapshot, grads=grads, split=split, by_module=self.progressive,
                                   device=self.device)

    def _shared_at(self, step: int, weights: dict) -> dict:
        """What the weights of `step` share (kept for the newest step asked about only: GPT-2 small's
        gradients are 0.5 GB and its bound forms more)."""
        with self._lock:
            if self._shared is None or self._shared[0] != step or self._shared[1].get("of") is not weights:
                self._shared = (step, {"of": weights})
            return self._shared[1]

    def gradients(self, step: int) -> tuple[dict, dict]:
        """(the weights at `step`, autograd's −∂L/∂W of every weight there as numpy): one backward pass, shared
        with the records of that step."""
        weights = self._load(step)
        shared = self._shared_at(step, weights)
        if "grads" not in shared:
            grads = co.autograd_coefficients(self.cfg, weights, self.x, self.y, co.DTYPES[self.dtype], self.device)
            shared["grads"] = {k: v.numpy() for k, v in grads.items()}
        return weights, shared["grads"]

    def update(self, weight: str, step: int) -> co.Update | None:
        """ΔW = W(step) − W(previous saved step), against G there (None at the first saved step)."""
        got = self.peek_update(weight, step)
        if got is not None:
            return got
        earlier = [s for s in self.steps() if s < step]
        if not earlier:
            return None
        rec = self.first(weight, earlier[-1])  # G alone serves (a large model's is not split for this)
        got = co.update_between(rec, step, self._array(step, weight, rec.W.shape))
        self._keep(("update", weight, step), got)
        with self._lock:
            self._geometry.setdefault(weight, {})[step] = (got.cosine, got.ratio, co.norm(got.dW))
        return got

    def stack(self, weight: str, steps: list[int] | None = None, part: str | None = None) -> np.ndarray:
        """(steps, *shape): G (or one class or term) at every step, in order."""
        steps = self.steps() if steps is None else steps
        return np.stack([self.record(weight, s).part(part) for s in steps])

    def norms_table(self, weight: str, steps: list[int] | None = None) -> dict[str, list[float]]:
        """Columns for a CSV: step, ‖G‖, ‖grad‖, agreement, each class's and term's norm, and the
        update's ‖ΔW‖, cosine and ratio (the update that reached the step: NaN at the first step)."""
        steps = self.steps() if steps is None else steps
        recs = [self.record(weight, s).summary() for s in steps]
        ups = [self.update(weight, s) for s in steps]
        cols: dict[str, list[float]] = {"step": [int(s) for s in steps], "norm_G": [r.norm for r in recs],
                                        "norm_grad": [r.grad_norm for r in recs],
                                        "agreement": [r.agreement for r in recs]}
        for kind, attr in (("class", "class_norms"), ("term", "term_norms")):
            names = list(dict.fromkeys(k for r in recs for k in getattr(r, attr)))
            for k in names:
                cols[f"{kind}:{k}"] = [getattr(r, attr).get(k, 0.0) for r in recs]
        nan = float("nan")
        cols["norm_dW"] = [co.norm(u.dW) if u else nan for u in ups]
        cols["cos_dW_G"] = [u.cosine if u else nan for u in ups]
        cols["ratio_dW_G"] = [u.ratio if u else nan for u in ups]
        return cols

    # ---- memory ---------------------------------------------------------------------------------

    def _get(self, key):
        got = self._records.get(key)
        if got is not None:
            self._records.move_to_end(key)
        return got

    def _keep(self, key, value, replace: bool = False) -> None:
        size = value.nbytes if isinstance(value, co.StepCoefficient) else value.dW.nbytes
        with self._lock:
            if isinstance(value, co.StepCoefficient):
                self._summaries.setdefault(value.weight, {})[value.step] = value.summary()
            if key in self._records:
                if not replace:
                    return
                old = self._records.pop(key)
                self._bytes -= old.nbytes if isinstance(old, co.StepCoefficient) else old.dW.nbytes
            self._records[key] = value
            self._bytes += size
            while self._bytes > self._budget and len(self._records) > 1:
                _, old = self._records.popitem(last=False)
                self._bytes -= old.nbytes if isinstance(old, co.StepCoefficient) else old.dW.nbytes

    def _array(self, step: int, weight: str, shape: tuple[int, ...]) -> np.ndarray:
        """One weight at a saved step, read with numpy alone: a thread that only waits for another
        process never calls into torch (torch was seen to hang when a second thread used it while the
        trainer's thread imported its lazily loaded parts)."""
        a = read_array(self.run.path, step, weight, shape)
        return a.astype(np.float64 if self.dtype == "float64" else np.float32)

    def _load(self, step: int) -> dict:
        with self._lock:
            if self._weights is not None and self._weights[0] == step:
                return self._weights[1]
        weights = self.run.load_weights(step)
        with self._lock:
            self._weights = (step, weights)
        return weights

    # ---- disk -----------------------------------------------------------------------------------

    def _fingerprint(self, step: int) -> str:
        return f"v{VERSION}:{weights_fingerprint(self.run.path, step)}:{self._probe_hash}"

    def _inside(self, path: Path) -> bool:
        try:
            check_inside(self.run.path, path)
        except UnsafeFileError:
            return False
        return True

    def _path(self, weight: str, step: int) -> Path:
        return self.folder(weight) / f"{step_name(step)}.npz"

    def _read(self, weight: str, step: int) -> co.StepCoefficient | None:
        path = self._path(weight, step)
        if not self.disk or not path.is_file() or not self._inside(path):
            return None
        try:
            with np.load(path, allow_pickle=False) as z:
                if str(z["fingerprint"]) != self._fingerprint(step):
                    return None
                stacked = iter(z["classes"])  # the classes kept whole, in order; the others as their rows
                classes = {str(name): (co.RowSparse(z[f"rows_{k}"], z[f"values_{k}"], tuple(z["W"].shape))
                                       if f"rows_{k}" in z.files else next(stacked))
                           for k, name in enumerate(z["class_names"])}
                terms = dict(zip(map(str, z["term_ids"]), z["terms"])) if len(z["term_ids"]) else {}
                return co.StepCoefficient(weight, step, z["W"], z["G"], z["grad"], float(z["agreement"]),
                                          classes, terms, int(z["term_count"]), unsplit=str(z["unsplit"]))
        except RunError:
            raise
        except Exception:  # truncated, corrupt or foreign: compute again and overwrite
            return None

    def _write(self, rec: co.StepCoefficient) -> None:
        if not self.disk or rec.pending:
            return
        shape = rec.W.shape
        buf = io.BytesIO()
        whole = [m for m in rec.classes.values() if not isinstance(m, co.RowSparse)]
        rows = {f"{part}_{k}": getattr(m, part) for k, m in enumerate(rec.classes.values())
                if isinstance(m, co.RowSparse) for part in ("rows", "values")}
        np.savez(buf, fingerprint=np.array(self._fingerprint(rec.step)), W=rec.W, G=rec.G, grad=rec.grad,
                 agreement=np.array(rec.agreement), term_count=np.array(rec.term_count),
                 unsplit=np.array(rec.unsplit),
                 class_names=np.array(list(rec.classes), dtype=str), **rows,
                 classes=np.stack(whole) if whole else np.zeros((0, *shape)),
                 term_ids=np.array(list(rec.terms), dtype=str),
                 terms=np.stack(list(rec.terms.values())) if rec.terms else np.zeros((0, *shape)))
        if not self._inside(self._path(rec.weight, rec.step)):
            return  # a symlink in the cache's path: never write outside the run
        try:
            self.folder(rec.weight).mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(self._path(rec.weight, rec.step), buf.getvalue())
        except OSError:  # a read-only run still shows everything; it only computes again next time
            pass


__all__ = ["CoefficientStore", "CACHE_DIR", "VERSION"]
