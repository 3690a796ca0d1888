"""The runs under a folder, summarised for the run browser, and the browser's rename and delete.

A summary reads only small files — config.toml, checkpoints/best.json and the last few kilobytes of
metrics.jsonl — and the sizes of the files in the run, so a folder of hundreds of runs lists in a blink
(benchmarks/run_list.py). It never builds a `Run` (which reads every metrics line) and never loads
weights. Every file is read through safe_io (regular files only, bounded reads, bounded nesting), so a
FIFO, a link to an endless device or a symbolic-link loop costs one refusal, not a hang or the memory;
a run that cannot be summarised is named in the listing's `damaged` with its reason, never left out
silently, and the rest are listed. A folder's size counts at most SIZE_ENTRIES entries.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..configs.config import ConfigError, ExperimentConfig
from ..errors import UserError
from .layout import BEST, CHECKPOINTS, CONFIG, METRICS, TOKENIZER, RunError, parse_step
from .run_tokenizer import newest_weights_file, read_tokenizer
from ..safe_io import CONFIG_CAP, JSONL_CAP, parse_json, read_tail, read_text

TAIL_BYTES = 4096  # a metrics line is ~200 bytes: the last complete one is in the last 4 kB
BEST_CAP = 4096    # best.json is one step and one loss
SIZE_ENTRIES = 100_000  # a run holds a few hundred files; a folder of millions is not walked whole


@dataclass(frozen=True)
class RunSummary:
    """One row of the run browser."""

    path: Path
    name: str               # the folder's name (what rename changes)
    preset: str             # the config's name: the preset or file it came from
    optimizer: str          # train.optimizer where the config has one, else AdamW (the trainer's default)
    steps_done: int
    steps_total: int
    best_val: float | None
    modified: float         # seconds since the epoch of the newest of config and metrics
    size_bytes: int

    @property
    def date(self) -> str:
        return datetime.fromtimestamp(self.modified).strftime("%Y-%m-%d %H:%M")


def is_run(path: Path) -> bool:
    return (path / CONFIG).is_file() and (path / TOKENIZER).is_file()


@dataclass(frozen=True)
class RunListing:
    """The run browser's answer about its folders: the runs, newest first, and the folders to watch for runs
    to come (gui/panes/runs/folder_watch.py): each folder listed that exists and is not itself a run, and the
    folders inside them that are not runs yet. A run's own folder is never watched: training writes into
    it every step."""

    runs: list[RunSummary]
    watch: list[Path]
    damaged: list[tuple[Path, str]] = ()  # folders holding a run's config that cannot be listed, and why


def list_folders(folders: list[Path]) -> RunListing:
    """The runs directly inside each folder (and each folder that is itself a run), the same run reached
    twice listed once, and the folders to watch; one pass over each folder's entries serves both."""
    seen, runs, watch, damaged = set(), [], [], []
    for folder in map(Path, folders):
        if _exists(folder / CONFIG):
            candidates = [folder]
        elif folder.is_dir():
            watch.append(folder)
            candidates = subfolders(folder)
        else:
            continue
        for path in candidates:
            if not _exists(path / CONFIG):  # not a run, or one being created (config.toml comes last)
                watch.append(path)
                continue
            key = os.path.realpath(path)
            if key in seen:
                continue
            seen.add(key)
            try:
                runs.append(summarise(path))
            except (OSError, ValueError) as e:  # UserError subclasses among them: the file is named
                damaged.append((path, str(e) if isinstance(e, UserError) else _reason(e)))
    return RunListing(sorted(runs, key=lambda s: s.modified, reverse=True), watch, damaged)


def _exists(path: Path) -> bool:
    return os.path.lexists(path)


def _reason(e: Exception) -> str:
    if isinstance(e, OSError) and e.strerror:
        return f"{Path(e.filename).name}: {e.strerror}" if e.filename else e.strerror
    return (str(e).splitlines() or [type(e).__name__])[0][:160]


def list_runs(folders: list[Path] | Path) -> list[RunSummary]:
    """Summaries of the runs directly inside each folder (and each folder that is itself a run), newest
    first; the same run reached twice appears once."""
    return list_folders([folders] if isinstance(folders, Path) else folders).runs


def subfolders(folder: Path) -> list[Path]:
    """The folders directly inside `folder` (hidden ones left out; none when it cannot be read). A link
    that loops or leads nowhere is not a folder: it is left out, not allowed to end the listing."""
    found = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for e in entries:
        try:
            if not e.name.startswith(".") and e.is_dir():
                found.append(Path(e.path))
        except OSError:  # ELOOP, EACCES on this entry alone
            continue
    return found


def summarise(path: Path) -> RunSummary:
    """The browser's row for one run; a file that Run would refuse (its config, a special or oversized
    tokenizer, metrics or best file) is a UserError or OSError naming it."""
    try:
        cfg = ExperimentConfig.from_toml(read_text(path / CONFIG, CONFIG_CAP, "config"))
    except ConfigError as e:
        raise ConfigError(f"{CONFIG}: {e}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{CONFIG} is not UTF-8 text") from None
    problems = cfg.validate()
    if problems:
        raise ConfigError(f"{CONFIG}: {problems[0]}")
    if not _exists(path / TOKENIZER):
        raise RunError(f"it has no {TOKENIZER}")
    check_tokenizer(path, cfg)
    last = last_metrics_row(path / METRICS)
    done = last["step"] if last else _imported_step(path)
    mtime = max(_mtime(path / CONFIG), _mtime(path / METRICS))
    return RunSummary(path=path, name=path.name, preset=cfg.name, optimizer=cfg.train.optimizer,
                      steps_done=done, steps_total=cfg.train.steps, best_val=_best_val(path), modified=mtime,
                      size_bytes=disk_size(path))


_CHECKED: dict[tuple, str | None] = {}  # what check_tokenizer found, by the files' identities


def check_tokenizer(path: Path, cfg: ExperimentConfig) -> None:
    """The check Run makes of tokenizer.json when it opens the run (engine/rundir/run_tokenizer.py), a BPE's file
    checked without building it; its verdict is kept until the tokenizer or the newest weights file changes, so
    a folder of GPT-2 runs, whose tokenizer.json is 2.4 MB, is read once, not at every listing."""
    weights = newest_weights_file(path)
    key = (str(path), _identity(path / TOKENIZER), _identity(weights), cfg.data.tokenizer, cfg.model.vocab_size)
    if key not in _CHECKED:
        try:
            read_tokenizer(path, cfg, build=False)
            _CHECKED[key] = None
        except UserError as e:
            _CHECKED[key] = str(e)
        if len(_CHECKED) > 4096:
            _CHECKED.pop(next(iter(_CHECKED)))
    if _CHECKED[key] is not None:
        raise RunError(_CHECKED[key])


def _identity(path: Path | None) -> tuple | None:
    try:
        st = os.stat(path) if path is not None else None
    except OSError:
        return None
    return None if st is None else (st.st_ino, st.st_mtime_ns, st.st_size)


def last_metrics_row(path: Path) -> dict | None:
    """The last complete JSON line of metrics.jsonl, read from its tail only (None when it has none or
    does not exist; a file that is not a regular one is refused by name)."""
    if not _exists(path):
        return None
    tail = read_tail(path, TAIL_BYTES, JSONL_CAP, METRICS)
    for raw in reversed(tail.splitlines()):
        try:
            row = parse_json(raw.decode("utf-8"), METRICS)
        except (UnicodeDecodeError, ValueError):
            continue  # a line cut by a crash, or the partial first line of the tail
        if isinstance(row, dict) and type(row.get("step")) is int:
            return row
    return None


def _best_val(path: Path) -> float | None:
    best_file = path / CHECKPOINTS / BEST
    if not _exists(best_file):
        return None
    try:
        best = parse_json(read_text(best_file, BEST_CAP, BEST), BEST)
    except UnicodeDecodeError:
        return None
    except ValueError as e:  # refused as a file (named) or not JSON (Run ignores it too)
        if isinstance(e, UserError):
            raise
        return None
    val = best.get("val_loss") if isinstance(best, dict) else None
    return float(val) if isinstance(val, (int, float)) and not isinstance(val, bool) else None


def _imported_step(path: Path) -> int:
    """A run without metrics (an import) has done the steps of its latest checkpoint."""
    steps = [parse_step(c.name) for c in subfolders(path / CHECKPOINTS)]
    return max((s for s in steps if s is not None), default=0)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def disk_size(path: Path) -> int:
    """Bytes in the files under path (links not followed; walked without recursion, so any depth is fine,
    and over at most SIZE_ENTRIES entries); a file with several names (a run's snapshot hard-linked to its
    checkpoint, runs.RunWriter.link_snapshot) counts once."""
    total, seen, folders, linked = 0, 0, [path], set()
    while folders and seen < SIZE_ENTRIES:
        try:
            with os.scandir(folders.pop()) as it:
                for e in it:
                    seen += 1
                    if seen > SIZE_ENTRIES:
                        break
                    total += _entry_size(e, folders, linked)
        except OSError:
            continue
    return total


def _entry_size(e: os.DirEntry, folders: list[Path], linked: set) -> int:
    """A regular file's size (0 for a further name of a file counted already); a folder is queued for the walk;
    anything else counts nothing."""
    try:
        st = e.stat(follow_symlinks=False)
    except OSError:
        return 0
    if stat.S_ISDIR(st.st_mode):
        folders.append(Path(e.path))
    if not stat.S_ISREG(st.st_mode):
        return 0
    if st.st_nlink > 1:
        if (st.st_dev, st.st_ino) in linked:
            return 0
        linked.add((st.st_dev, st.st_ino))
    return st.st_size


def human_bytes(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def rename_run(path: Path, new_name: str) -> Path:
    """Rename a run folder in place (same parent); the new name must be a plain, unused folder name."""
    new_name = new_name.strip()
    if not new_name or new_name in (".", "..") or "/" in new_name or os.sep in new_name:
        raise UserError(f"{new_name!r} is not a folder name")
    if not is_run(path):
        raise UserError(f"{path} is not a run directory")
    target = path.with_name(new_name)
    if target.exists():
        raise UserError(f"{target} already exists; choose another name")
    try:
        os.rename(path, target)
    except OSError as e:
        raise UserError(f"cannot rename {path.name} to {new_name}: {e.strerror}") from None
    return target


def delete_run(path: Path) -> None:
    """Delete a run folder, and only a run folder (it must hold config.toml and tokenizer.json)."""
    if path.is_symlink() or not is_run(path):
        raise UserError(f"{path} is not a run directory; nothing was deleted")
    try:
        shutil.rmtree(path)
    except OSError as e:
        raise UserError(f"cannot delete {path}: {e.strerror}") from None
