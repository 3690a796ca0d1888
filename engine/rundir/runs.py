"""The run directory (docs/run-directory.md): `RunWriter` fills it while training, `Run` reads it back.

    RUN/config.toml          the resolved ExperimentConfig (vocab_size set from the tokenizer)
    RUN/tokenizer.json       the tokenizer's vocabulary, so a run samples without its corpus
    RUN/probe.json           the fixed probe batch (token ids x, y), the heatmap prompt and the induction
                             probe (random tokens repeated twice; derived from the seed for older runs)
    RUN/metrics.jsonl        one JSON object per logged step
    RUN/samples.jsonl        text sampled at evaluation steps
    RUN/checkpoints/step-000500/{model.safetensors, state.pt}   weights + optimizer and RNG state
    RUN/checkpoints/best.json                                    which checkpoint has the best val loss
    RUN/snapshots/step-000100.safetensors, snapshots/index.json  weights for the timeline, thinned to a budget

Whole files are written to a temporary name and renamed into place; a checkpoint is a directory written
and verified under a temporary name, so a bad one never replaces a good one. JSON-lines files are
appended one whole line per write, so a crash can only truncate the last line, which readers skip with a
warning. Weights are safetensors and the state is loaded with ``weights_only=True``: opening someone's
run never runs their code. Everything is read onto the CPU whatever device wrote it (a run trained on
CUDA opens on a machine without one); a Trainer then moves weights and optimizer state to its own device.
The latest checkpoint is the one with the highest step.

Every file is read through `safe_io` (regular files only, size-capped), a run's config is validated like
user input, weights carry sha256 checksums and are checked for names, shapes and finiteness
(`run_integrity`); a damaged newest checkpoint is skipped, named in `warnings`, for the newest intact one.
A RunWriter holds the run's OS lock (`run_lock`) and never writes through a symlink inside the run.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from safetensors import safe_open

from . import integrity as integrity
from ..configs.config import ConfigError, ExperimentConfig
from ..errors import UserError
from ..model.weight_layout import weight_names
from .layout import (BEST, CHANGES, CHECKPOINTS, CONFIG, IMPORT, INDEX, LOGS, MADE_FILES, METRICS, MODEL_FILE,
                     NUMERIC, PROBE, SAMPLES, SNAPSHOTS, STATE_FILE, TOKENIZER, UPDATES, RunError,
                     incomplete_checkpoints, step_name, steps_in, steps_listed)
from .run_tokenizer import TOKENIZER_KEY, read_tokenizer, verify_tokenizer
from .lock import LOCK_FILE, RunLock
from ..safe_io import (JSON_CAP, JSONL_CAP, WEIGHTS_CAP, RefusedPickle, UnsafeFileError, check_inside, check_regular,
                      load_weights_only, parse_json, read_text)

if TYPE_CHECKING:  # torch is imported where weights are handled: opening a run with every check needs none of
    import torch   # it (engine/rundir/runs.py's check_run, in a child of the app: torch took most of its time)



@dataclass(frozen=True)
class Probe:
    """The run's fixed probe batch (forms, coefficients, head scores), its heatmap prompt and its induction
    probe (`probes.induction_probe`)."""

    x: np.ndarray  # (B, T) int64 token ids, a held-out validation batch
    y: np.ndarray  # (B, T) next-token targets
    prompt: str
    induction: np.ndarray | None = None  # (B, 2·⌊n_ctx/2⌋) random tokens repeated twice
    induction_derived: bool = False      # True when probe.json predates it and it was derived from the seed


def atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def append_jsonl(f, row: dict) -> None:
    """Append one whole line to an open file and flush it: a crash can cut only this line."""
    f.write(json.dumps(_finite(row), ensure_ascii=False) + "\n")
    f.flush()


def read_jsonl(path: Path) -> tuple[list[dict], str | None]:
    """Rows of a JSON-lines file and a warning naming the lines skipped (truncated or corrupt)."""
    if not path.exists():
        return [], None
    try:
        check_regular(path, JSONL_CAP, "log")
    except (OSError, UnsafeFileError) as e:
        return [], str(e)
    rows, bad = [], []
    with open(path, "rb") as f:
        for i, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                row = parse_json(raw.decode("utf-8"), "log line")
            except (UnicodeDecodeError, ValueError):
                bad.append(i)
                continue
            if isinstance(row, dict) and type(row.get("step")) is int and all(
                    type(row.get(k)) in (int, float, type(None)) for k in NUMERIC):
                rows.append(row)
            else:
                bad.append(i)
    if not bad:
        return rows, None
    return rows, f"{path.name}: skipped {len(bad)} corrupt or truncated line(s) (line {bad[0]} first)"


def _finite(row: dict) -> dict:
    """JSON has no NaN or Infinity: write them as null."""
    return {k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in row.items()}


# ---- checkpoints -------------------------------------------------------------------------------

def write_checkpoint(folder: Path, step: int, weights: dict[str, torch.Tensor], state: dict,
                     tokenizer: str | None = None) -> Path:
    """Write checkpoints/step-N under a temporary name, verify it loads back equal, then rename it in;
    `tokenizer` is the digest of the run's tokenizer, which the weights' header records."""
    import torch

    integrity.require_finite(weights, step)
    final = folder / step_name(step)
    tmp = folder / f".tmp-{step_name(step)}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        save_weights(weights, tmp / MODEL_FILE, step, tokenizer)
        torch.save(state, tmp / STATE_FILE)
        integrity.write_checksums(tmp, [MODEL_FILE, STATE_FILE])
        # the checksums were just computed from these bytes: what reading back checks is that they decode to
        # the weights and state written
        loaded, loaded_state = read_checkpoint(tmp, verify=False)
        if loaded.keys() != weights.keys() or loaded_state.get("step") != step or not all(
                torch.equal(loaded[k], weights[k].cpu()) for k in weights):
            raise RunError("it does not read back as written")
    except (OSError, RunError) as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise RunError(f"checkpoint at step {step} could not be written ({e}); the previous one is kept") from None
    if final.exists():
        old = folder / f".old-{step_name(step)}-{os.getpid()}"
        os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, final)
    return final


def save_weights(weights: dict[str, torch.Tensor], path: Path, step: int, tokenizer: str | None = None) -> None:
    """A safetensors file whose header holds its step, the digest of its tensors (run_integrity) and the digest
    of the tokenizer they were trained with (`tokenizer`, when given)."""
    from safetensors.torch import save_file

    metadata = {"step": str(step), integrity.DIGEST_KEY: integrity.tensors_digest(weights)}
    if tokenizer is not None:
        metadata[TOKENIZER_KEY] = tokenizer
    save_file({k: v.contiguous() for k, v in weights.items()}, str(path), metadata=metadata)


def load_weights_file(path: Path, where: str, tokenizer: Callable[[], str] | None = None,
                      checksum: Callable[[], bool] = lambda: False) -> dict[str, torch.Tensor]:
    """The tensors of a safetensors file, refused (IntegrityError) when they differ from the digest its
    header was written with, or were trained with another tokenizer than the one `tokenizer()` digests;
    safetensors' own errors pass through for the caller to word. `checksum()`, called once the file reads as
    safetensors, verifies it against its checksum file and says whether there was one: then its bytes are
    known to be those written, and they are not hashed a second time for the digest.

    The tensors are views of the file's memory map, not copies: a page is read when first touched, and one
    written to becomes the process's own (a private mapping; the file never changes). Windows cannot delete
    a mapped file, and a run's writer deletes old checkpoints and thins snapshots, so there they are copied."""
    with safe_open(str(path), framework="pt", device="cpu") as f:
        metadata = f.metadata()
        if tokenizer is not None:
            verify_tokenizer(metadata, tokenizer, where)
        weights = {k: f.get_tensor(k) for k in f.keys()}
    if os.name == "nt":
        weights = {k: v.clone() for k, v in weights.items()}
    if not checksum():
        integrity.verify_digest(metadata, integrity.tensors_digest(weights), where)
    return weights


def read_checkpoint(path: Path, tokenizer: Callable[[], str] | None = None,
                    verify: bool = True) -> tuple[dict[str, torch.Tensor], dict]:
    """Weights and training state of one checkpoint directory; anything unreadable is a RunError (also weights
    trained with another tokenizer than the one `tokenizer()` digests). Without `verify` the bytes are not
    checked against their checksums (a checkpoint being written, read back)."""
    where = f"{path.parent.name}/{path.name}"
    try:
        for name in (MODEL_FILE, STATE_FILE):
            check_regular(path / name, WEIGHTS_CAP, f"checkpoint file {where}/{name}")
    except FileNotFoundError as e:
        raise RunError(f"checkpoint {where} has no {Path(e.filename).name}") from None
    except (UserError, OSError) as e:
        raise RunError(str(e)) from None
    try:  # garbled bytes inside well-formed files; the header's digest checks a checkpoint without checksums
        weights = load_weights_file(path / MODEL_FILE, f"checkpoint {where}/{MODEL_FILE}", tokenizer,
                                    lambda: not verify or integrity.verify_checksums(path, [MODEL_FILE], where))
    except FileNotFoundError:
        raise RunError(f"checkpoint {where} has no {MODEL_FILE}") from None
    except UserError as e:
        raise RunError(str(e)) from None
    except Exception as e:  # safetensors raises its own error type for truncated or garbage files
        raise RunError(f"checkpoint {where}/{MODEL_FILE} is corrupt or truncated: {_first_line(e)}") from None
    try:
        # mapped, as the weights are, and for the same reason copied where a mapped file cannot be deleted
        state = load_weights_only(path / STATE_FILE, mmap=os.name != "nt")
    except FileNotFoundError:
        raise RunError(f"checkpoint {where} has no {STATE_FILE}") from None
    except RefusedPickle as e:
        raise RunError(f"checkpoint {where}/{STATE_FILE}: {e}") from None
    except Exception as e:  # zip, pickle and weights_only refusals all mean: not a checkpoint we wrote
        raise RunError(f"checkpoint {where}/{STATE_FILE} is corrupt or truncated: {_first_line(e)}") from None
    if not isinstance(state, dict) or type(state.get("step")) is not int or state["step"] < 0:
        raise RunError(f"checkpoint {where}/{STATE_FILE} is not a training state")
    try:
        if verify:
            integrity.verify_checksums(path, [STATE_FILE], where)
    except UserError as e:
        raise RunError(str(e)) from None
    return weights, state


def _first_line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return text[0][:160] if text else type(e).__name__


def _read_json(path: Path) -> dict | None:
    try:
        d = parse_json(read_text(path, JSON_CAP, "run file"), f"run file {path.name}")
    except (OSError, ValueError, UnsafeFileError):
        return None
    return d if isinstance(d, dict) else None


# ---- the write side ----------------------------------------------------------------------------

class RunWriter:
    """Writes one run directory while a Trainer trains (one writer per run at a time)."""

    def __init__(self, path: Path, cfg: ExperimentConfig, tokenizer: str | None = None):
        self.path = Path(path)
        self.cfg = cfg
        self.tokenizer = tokenizer  # the tokenizer's digest, recorded in every weights file's header
        for name in (CONFIG, *MADE_FILES):  # a symlink in the run would carry writes out of it
            try:
                check_inside(self.path, self.path / name)
            except UnsafeFileError as e:
                raise RunError(str(e)) from None
        self.lock = RunLock(self.path).acquire()  # before anything is written: one writer per run
        self.swept = integrity.sweep_temporaries(self.path, (CHECKPOINTS, SNAPSHOTS))
        best = _read_json(self.path / CHECKPOINTS / BEST) or {}
        self.best_step: int | None = best.get("step") if isinstance(best.get("step"), int) else None
        self.best_val: float = best.get("val_loss") if isinstance(best.get("val_loss"), float) else float("inf")
        index = _read_json(self.path / SNAPSHOTS / INDEX) or {}
        self.thinned: list[int] = _int_list(index.get("thinned"))
        self._logs: dict[str, object] = {}  # open append handles: reopening per line cost 0.6% of training

    @classmethod
    def create(cls, path: str | Path, cfg: ExperimentConfig, tokenizer, probe: Probe) -> RunWriter:
        path = Path(path)
        if (path / CONFIG).exists():
            raise RunError(f"{path} is already a run; resume it instead of starting a new one there")
        if path.exists() and not path.is_dir():
            raise RunError(f"run directory {path} is a file")
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise RunError(f"cannot create run directory {path}: {e.strerror}") from None
        w = cls(path, cfg, tokenizer.digest)
        # a creation killed before its config.toml (written last) left only run files: start it again
        if not integrity.clear_half_made(path, MADE_FILES, keep=(LOCK_FILE,)):
            w.lock.release()
            raise RunError(f"{path} is not a run directory (it has no {CONFIG}) and is not empty; "
                           "choose a new directory or an existing run")
        try:
            (path / CHECKPOINTS).mkdir(exist_ok=True)
            (path / SNAPSHOTS).mkdir(exist_ok=True)
        except OSError as e:
            raise RunError(f"cannot create run directory {path}: {e.strerror}") from None
        atomic_write_text(path / TOKENIZER, json.dumps(tokenizer.to_dict(), ensure_ascii=False))
        atomic_write_text(path / PROBE, json.dumps(
            {"x": probe.x.tolist(), "y": probe.y.tolist(), "prompt": probe.prompt,
             **({} if probe.induction is None else {"induction": probe.induction.tolist()})}, ensure_ascii=False))
        for name in LOGS:
            (path / name).touch()
        w.write_config(cfg)
        return w

    @classmethod
    def reopen(cls, run: Run, step: int) -> RunWriter:
        """Continue a run from a checkpoint at `step`: logged rows after it are dropped (they will be
        logged again, identically, since resume is exact), and so is a line cut short by a crash."""
        w = cls(run.path, run.config, run.tokenizer.digest)
        for name in LOGS:
            rows, _ = read_jsonl(run.path / name)
            kept = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows if r["step"] <= step)
            atomic_write_text(run.path / name, kept)
        return w

    def write_config(self, cfg: ExperimentConfig) -> None:
        self.cfg = cfg
        atomic_write_text(self.path / CONFIG, cfg.to_toml())

    def log_metrics(self, row: dict) -> None:
        append_jsonl(self._log(METRICS), row)

    def log_sample(self, row: dict) -> None:
        append_jsonl(self._log(SAMPLES), row)

    def log_changes(self, step: int, changed: dict[str, list]) -> None:
        """An edit the run continues with from `step` (engine/training/continuation.py)."""
        append_jsonl(self._log(CHANGES), {"step": step, "changed": changed})

    def log_updates(self, step: int, ratios: dict[str, float]) -> None:
        """Each measured weight's ‖ΔW‖ / ‖W‖ at `step` (engine/training/update_ratio.py)."""
        append_jsonl(self._log(UPDATES), {"step": step, "ratios": _finite(ratios)})

    def _log(self, name: str):
        if name not in self._logs:
            self._logs[name] = open(self.path / name, "a", encoding="utf-8")
        return self._logs[name]

    def close(self) -> None:
        """Close the log files (they reopen on the next line logged) and let go of the run's lock."""
        for f in self._logs.values():
            f.close()
        self._logs.clear()
        self.lock.release()

    def hold(self) -> None:
        """Take the run's lock again after `close()`; refused while another writer has it."""
        self.lock.acquire()

    def save_checkpoint(self, step: int, weights: dict[str, torch.Tensor], state: dict,
                        val_loss: float | None = None) -> Path:
        """Write a checkpoint, mark it best if its val loss is the lowest yet, and keep the last N."""
        folder = self.path / CHECKPOINTS
        final = write_checkpoint(folder, step, weights, state, self.tokenizer)
        if val_loss is not None and val_loss < self.best_val:
            self.best_step, self.best_val = step, val_loss
            atomic_write_text(folder / BEST, json.dumps({"step": step, "val_loss": val_loss}))
        steps = steps_in(folder, want_dir=True)
        keep = set(steps[-(self.cfg.train.keep_checkpoints + 1):]) | {self.best_step}
        for s in steps:
            if s not in keep:  # renamed first: a reader never meets a checkpoint folder half deleted
                old = folder / f".old-{step_name(s)}-{os.getpid()}"
                try:
                    os.replace(folder / step_name(s), old)
                except OSError:
                    continue
                shutil.rmtree(old, ignore_errors=True)
        return final

    def save_snapshot(self, step: int, weights: dict[str, torch.Tensor]) -> Path:
        """Weights at `step` for the timeline; then thin older snapshots to fit the disk budget."""
        integrity.require_finite(weights, step)
        path, tmp = self._snapshot_names(step)
        save_weights(weights, tmp, step, self.tokenizer)
        return self._place_snapshot(step, tmp, integrity.sha256_of(tmp))

    def link_snapshot(self, step: int, checkpoint: Path) -> Path:
        """The snapshot at `step` as a second name of the weights file of `checkpoint`, written at that step:
        a hard link (a copy where the file system has none), its checksum the checkpoint's, so a run created
        whole (create.py) writes and hashes its weights once. Writers replace files, never write into them, so
        the two names never part."""
        path, tmp = self._snapshot_names(step)
        source = checkpoint / MODEL_FILE
        try:
            os.link(source, tmp)
        except OSError:
            shutil.copyfile(source, tmp)
        sums = integrity.recorded_checksums(checkpoint, checkpoint.name) or {}
        return self._place_snapshot(step, tmp, sums.get(MODEL_FILE) or integrity.sha256_of(tmp))

    def _snapshot_names(self, step: int) -> tuple[Path, Path]:
        path = self.path / SNAPSHOTS / f"{step_name(step)}.safetensors"
        return path, path.with_name(f".{path.name}.tmp{os.getpid()}")

    def _place_snapshot(self, step: int, tmp: Path, digest: str) -> Path:
        """Rename a whole snapshot file into place with its sidecar; then thin the snapshots to the budget."""
        path = tmp.with_name(f"{step_name(step)}.safetensors")
        integrity.sidecar_of(path).unlink(missing_ok=True)  # killed before the new one: read unverified
        os.replace(tmp, path)
        integrity.write_sidecar(path, digest)
        self.thinned = sorted(set(self.thinned) - {step})
        self._thin(path.parent)
        return path

    def _thin(self, folder: Path) -> None:
        """Over budget, delete the snapshot whose neighbours are closest (ties: the oldest), so the
        timeline stays evenly spaced and the older part thins first; every deletion is recorded."""
        budget = self.cfg.train.snapshot_budget_mb * 1e6
        steps = steps_in(folder, want_dir=False)
        sizes = {s: (folder / f"{step_name(s)}.safetensors").stat().st_size for s in steps}
        while sum(sizes[s] for s in steps) > budget and len(steps) > 1:
            if len(steps) == 2:
                victim = steps[0]
            else:
                gaps = [steps[i + 1] - steps[i - 1] for i in range(1, len(steps) - 1)]
                victim = steps[1 + gaps.index(min(gaps))]
            (folder / f"{step_name(victim)}.safetensors").unlink(missing_ok=True)
            integrity.sidecar_of(folder / f"{step_name(victim)}.safetensors").unlink(missing_ok=True)
            steps.remove(victim)
            self.thinned.append(victim)
        index = {"budget_mb": self.cfg.train.snapshot_budget_mb, "steps": steps,
                 "thinned": sorted(set(self.thinned))}
        atomic_write_text(folder / INDEX, json.dumps(index))


# ---- the read side -----------------------------------------------------------------------------

class Run:
    """An existing run directory, read-only. Only config.toml and tokenizer.json are essential; any
    other damaged file is named in `warnings` and the rest still loads.

    `checked`: the run was just opened with every check in another process (`check_run`, which the app runs in
    a child), so its tokenizer is read when first used instead of here: a GPT-2 vocabulary's tokenizer.json
    takes ~3 s of Python to parse, check and hash, all of it holding the interpreter lock of the app."""

    def __init__(self, path: str | Path, *, checked: bool = False):
        self.path = Path(path)
        if not self.path.is_dir():
            raise RunError(f"run directory not found: {self.path}")
        if not (self.path / CONFIG).is_file():
            raise RunError(f"{self.path} is not a run directory (it has no {CONFIG})")
        try:
            self.config = ExperimentConfig.load(self.path / CONFIG)
        except ConfigError as e:
            raise RunError(str(e)) from None
        problems = self.config.validate()  # a run's config is user input: refused before anything is built
        if problems:
            raise RunError(f"{self.path / CONFIG}: " + "; ".join(map(str, problems)))
        self._tokenizer = None
        if not checked:
            self._tokenizer = read_tokenizer(self.path, self.config)
        self._warnings: dict[str, str] = {}
        self._shapes: dict[str, tuple[int, ...]] | None = None
        self._checker = None  # a GPT of the config, for check_outputs
        self._sound: set[str] = set()  # weights files whose outputs were found finite
        self.metrics(), self.samples(), self._probe_or_none(), self.checkpoint_steps()

    @property
    def tokenizer(self):
        if self._tokenizer is None:
            self._tokenizer = read_tokenizer(self.path, self.config)
        return self._tokenizer

    @property
    def tokenizer_if_read(self):
        """The tokenizer if it was read already, else None (a checked run's, until something asks for it)."""
        return self._tokenizer

    def _tokenizer_digest(self) -> str:
        return self.tokenizer.digest

    @property
    def warnings(self) -> list[str]:
        return list(self._warnings.values())

    def warnings_about(self, what: str) -> list[str]:
        """The warnings about one kind of file ("checkpoint", "snapshot")."""
        return [w for k, w in self._warnings.items() if k.split(" ")[0] == what]

    def _rows(self, name: str) -> list[dict]:
        rows, warning = read_jsonl(self.path / name)
        if warning:
            self._warnings[name] = warning
        else:
            self._warnings.pop(name, None)
        return rows

    def metrics(self) -> list[dict]:
        """metrics.jsonl rows (read afresh each call, so a live run shows its newest steps)."""
        return self._rows(METRICS)

    def samples(self) -> list[dict]:
        return self._rows(SAMPLES)

    def updates(self) -> list[tuple[int, dict[str, float]]]:
        """(step, {weight: ‖ΔW‖ / ‖W‖}) of every measured step, in order; a row that names no weight of this
        run or holds no number is skipped (a run written before the measure has no rows)."""
        names = set(weight_names(self.config.model))
        out = []
        for row in self._rows(UPDATES):
            ratios = row.get("ratios")
            if isinstance(ratios, dict):
                kept = {k: float(v) for k, v in ratios.items() if k in names and type(v) in (int, float)}
                if kept:
                    out.append((row["step"], kept))
        return out

    def _probe_or_none(self) -> Probe | None:
        d = _read_json(self.path / PROBE)
        try:
            x, y = np.asarray(d["x"], dtype=np.int64), np.asarray(d["y"], dtype=np.int64)
            ok = x.ndim == 2 and x.shape == y.shape and isinstance(d["prompt"], str)
            ok = ok and x.size > 0 and 0 <= x.min() and max(x.max(), y.max()) < self.config.model.vocab_size
        except (TypeError, KeyError, ValueError):
            ok = False
        if not ok:
            self._warnings[PROBE] = f"{PROBE} is missing or corrupt"
            return None
        induction = self._stored_induction(d)
        if induction is None:
            return Probe(x, y, d["prompt"], self._derived_induction(), True)
        return Probe(x, y, d["prompt"], induction)

    def _stored_induction(self, d: dict) -> np.ndarray | None:
        try:
            a = np.asarray(d["induction"], dtype=np.int64)
        except (KeyError, TypeError, ValueError):
            return None
        ok = a.ndim == 2 and a.shape[1] >= 2 and a.size > 0 and 0 <= a.min() and a.max() < self.config.model.vocab_size
        return a if ok else None

    def _derived_induction(self) -> np.ndarray:
        """What the trainer stores now, drawn from the run's seed (runs from before it was stored)."""
        from ..model.probes import induction_probe

        m, t = self.config.model, self.config.train
        return induction_probe(m.vocab_size, m.n_ctx, t.seed, t.probe_batch)

    def probe(self) -> Probe:
        p = self._probe_or_none()
        if p is None:
            raise RunError(f"{self.path / PROBE} is missing or corrupt")
        return p

    def checkpoint_steps(self) -> list[int]:
        """The steps whose checkpoint holds both its files; a folder that lacks one is skipped, and named in
        `warnings`."""
        for step, missing in incomplete_checkpoints(self.path / CHECKPOINTS).items():
            self._warnings[f"checkpoint {step}"] = (f"{CHECKPOINTS}/{step_name(step)} has no {missing}; it was "
                                                     "skipped")
        return steps_in(self.path / CHECKPOINTS, want_dir=True)

    def snapshot_steps(self) -> list[int]:
        return steps_in(self.path / SNAPSHOTS, want_dir=False)

    def saved_steps(self) -> list[int]:
        """Every step whose weights can be loaded (snapshots and checkpoints), ascending."""
        return sorted(set(self.snapshot_steps()) | set(self.checkpoint_steps()))

    def thinned_steps(self) -> list[int]:
        """Snapshot steps deleted to keep within the disk budget (recorded, never silently dropped)."""
        index = _read_json(self.path / SNAPSHOTS / INDEX) or {}
        return _int_list(index.get("thinned"))

    def import_record(self) -> dict | None:
        """import.json of an imported run — where its weights came from ("source") and at which step
        ("step") — or None for a run trained here (or imported before the record was kept)."""
        d = _read_json(self.path / IMPORT)
        if d is None:
            return None
        source, step = d.get("source"), d.get("step")
        # the imported step's checkpoint is the run's first: no step before 0 or after its newest checkpoint
        if not (isinstance(source, str) and type(step) is int and 0 <= step <= max(self.checkpoint_steps(), default=0)):
            self._warnings[IMPORT] = f"{IMPORT} is not a record of an import (its source or step); ignored"
            return None
        return {"source": source, "step": step}

    def changes(self) -> list[dict]:
        """The edits this run was continued with (changes.jsonl): {"step", "changed": {setting: [old, new]}}."""
        return [r for r in self._rows(CHANGES) if isinstance(r.get("changed"), dict)]

    def best_step(self) -> int | None:
        step = (_read_json(self.path / CHECKPOINTS / BEST) or {}).get("step")
        return step if isinstance(step, int) and step in self.checkpoint_steps() else None

    def latest_step(self) -> int:
        """The last step whose weights were saved (checkpoint or snapshot); 0 when none were."""
        return max(self.saved_steps(), default=0)

    def load_checkpoint(self, step: int | None = None) -> tuple[dict[str, torch.Tensor], dict]:
        """Weights and training state of the checkpoint at `step` (None: the latest)."""
        steps = self.checkpoint_steps()
        if not steps:
            raise RunError(f"{self.path} has no checkpoint yet")
        if step is not None:
            if step not in steps:
                raise RunError(f"{self.path} has no checkpoint at step {step} (it has {steps_listed(steps)})")
            return self._checked_checkpoint(step)
        return self._newest_intact(steps, self._checked_checkpoint, lambda s: f"{CHECKPOINTS}/{step_name(s)}",
                                   "checkpoint")[1]

    def _newest_intact(self, steps: list[int], load, name, what: str) -> tuple[int, object]:
        """(step, load(step)) of the newest of `steps` that loads intact; each damaged newer one is named in
        `warnings[what]`, and all of them in the RunError when none does."""
        skipped = []
        for s in reversed(steps):
            try:
                got = load(s)
            except RunError as e:
                skipped.append(f"skipped {name(s)} ({e})")
                continue
            if skipped:
                self._warnings[what] = "; ".join(skipped) + f"; using step {s}"
            return s, got
        raise RunError(f"{self.path} has no intact {what}: " + "; ".join(skipped))

    def _checked_checkpoint(self, step: int) -> tuple[dict[str, torch.Tensor], dict]:
        weights, state = read_checkpoint(self.path / CHECKPOINTS / step_name(step), self._tokenizer_digest)
        if state["step"] != step:
            raise RunError(f"checkpoint {step_name(step)} holds the state of step {state['step']}")
        self._check_weights(weights, f"checkpoint {step_name(step)}")
        return weights, state

    def _check_weights(self, weights: dict[str, torch.Tensor], where: str) -> None:
        """Names, shapes, finiteness, and finite probabilities on one row of the probe (once per file)."""
        if self._shapes is None:
            self._shapes = integrity.expected_shapes(self.config.model)
        try:
            integrity.check_weights(weights, self._shapes, where)
            if where not in self._sound:
                integrity.check_outputs(self._model_for_checks(), weights, self._check_row(), where)
                self._sound.add(where)
        except UserError as e:
            raise RunError(str(e)) from None

    def _model_for_checks(self):
        import torch

        from ..model.gpt import GPT

        if self._checker is None:
            with torch.device("meta"):  # no weights of its own: check_outputs assigns each file's
                self._checker = GPT(self.config.model)
        return self._checker

    def _check_row(self) -> torch.Tensor:
        """The first tokens of the probe batch's first row (integrity.CHECK_TOKENS; token 0 repeated when
        probe.json is unreadable)."""
        import torch

        n = min(integrity.CHECK_TOKENS, self.config.model.n_ctx)
        probe = self._probe_or_none()
        if probe is None:
            return torch.zeros((1, n), dtype=torch.long)
        return torch.from_numpy(probe.x[:1, :n])

    def newest_intact_step(self) -> int:
        """The newest saved step whose weights load intact (0 when none are saved): what a command given
        no step uses, as `load_checkpoint` falls back for a resume; each damaged newer step is named in
        `warnings`."""
        steps = self.saved_steps()
        if not steps:
            return 0
        return self._newest_intact(steps, self.load_weights, lambda s: f"the weights at step {s}", "weights")[0]

    def load_weights(self, step: int | None = None) -> dict[str, torch.Tensor]:
        """step=None: the latest checkpoint's weights; else the snapshot, or checkpoint, at exactly step."""
        if step is None or step not in self.snapshot_steps():
            if step is not None and step not in self.checkpoint_steps():
                raise RunError(f"{self.path} has no weights saved at step {step} "
                               f"(it has {steps_listed(self.saved_steps())})")
            return self.load_checkpoint(step)[0]
        path = self.path / SNAPSHOTS / f"{step_name(step)}.safetensors"
        try:
            check_regular(path, WEIGHTS_CAP, "snapshot")
            weights = load_weights_file(path, f"snapshot {path.name}", self._tokenizer_digest,
                                        lambda: integrity.verify_sidecar(path))
        except UserError as e:
            damaged = f"snapshot {path.name} is damaged: {_first_line(e)}"
        except Exception as e:  # safetensors' own error type for truncated or garbage files
            damaged = f"snapshot {path.name} is corrupt or truncated: {_first_line(e)}"
        else:
            try:
                self._check_weights(weights, f"snapshot {path.name}")
                return weights
            except RunError as e:
                damaged = str(e)
        if step in self.checkpoint_steps():  # the same weights, saved twice
            self._warnings[f"snapshot {step}"] = f"{damaged}; using the checkpoint at step {step}"
            return self.load_checkpoint(step)[0]
        raise RunError(damaged)

    def build_model(self, step: int | None = None, dtype: torch.dtype | None = None):
        """The GPT with the weights at `step`, on the CPU, in eval mode: the file's memory-mapped tensors
        themselves (GPT.from_weights; copied only to change their dtype, float32 unless given)."""
        import torch

        from ..model.gpt import GPT

        try:
            model = GPT.from_weights(self.config.model, self.load_weights(step))
        except RuntimeError as e:
            raise RunError(f"saved weights do not fit the run's config: {_first_line(e)}") from None
        return model.to(torch.float32 if dtype is None else dtype).eval()


def check_run(path: str | Path) -> list[str]:
    """Open the run at `path` with every check (RunError in one line if it cannot be used) and return its
    warnings: what the app runs in a child process before it opens a run with `Run(path, checked=True)`."""
    return Run(path).warnings


def _int_list(v) -> list[int]:
    """The ints of a list read from a run file (anything else there is ignored)."""
    return [s for s in v if type(s) is int] if isinstance(v, list) else []
