"""The runs under a folder, summarised for the run browser, and the browser's rename and delete.

A summary reads only small files — config.toml, checkpoints/best.json and the last few kilobytes of
metrics.jsonl — and the sizes of the files in the run, so a folder of hundreds of runs lists in a blink
(benchmarks/run_list.py). It never builds a `Run` (which reads every metrics line) and never loads
weights. A folder that is not readable as a run is left out of the list rather than failing it.
"""

from __future__ import annotations

import json
import os
import shutil
import tomllib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from .errors import UserError
from .runs import BEST, CHECKPOINTS, CONFIG, METRICS, TOKENIZER

TAIL_BYTES = 4096  # a metrics line is ~200 bytes: the last complete one is in the last 4 kB


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
    to come (gui/widgets/folder_watch.py): each folder listed that exists and is not itself a run, and the
    folders inside them that are not runs yet. A run's own folder is never watched: training writes into
    it every step."""

    runs: list[RunSummary]
    watch: list[Path]


def list_folders(folders: list[Path]) -> RunListing:
    """The runs directly inside each folder (and each folder that is itself a run), the same run reached
    twice listed once, and the folders to watch; one pass over each folder's entries serves both."""
    seen, runs, watch = set(), [], []
    for folder in map(Path, folders):
        if is_run(folder):
            candidates = [folder]
        elif folder.is_dir():
            watch.append(folder)
            candidates = subfolders(folder)
        else:
            continue
        for path in candidates:
            if not is_run(path):
                watch.append(path)
                continue
            key = os.path.realpath(path)
            if key in seen:
                continue
            seen.add(key)
            summary = summarise(path)
            if summary is not None:
                runs.append(summary)
    return RunListing(sorted(runs, key=lambda s: s.modified, reverse=True), watch)


def list_runs(folders: list[Path] | Path) -> list[RunSummary]:
    """Summaries of the runs directly inside each folder (and each folder that is itself a run), newest
    first; the same run reached twice appears once."""
    return list_folders([folders] if isinstance(folders, Path) else folders).runs


def subfolders(folder: Path) -> list[Path]:
    """The folders directly inside `folder` (hidden ones left out; none when it cannot be read)."""
    try:
        return [Path(e.path) for e in os.scandir(folder) if e.is_dir() and not e.name.startswith(".")]
    except OSError:
        return []


def summarise(path: Path) -> RunSummary | None:
    """The browser's row for one run, or None when its config cannot be read."""
    try:
        cfg = tomllib.loads((path / CONFIG).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    train = cfg.get("train") if isinstance(cfg.get("train"), dict) else {}
    last = last_metrics_row(path / METRICS)
    best = _best_val(path)
    done = last.get("step", 0) if last else _imported_step(path)
    total = train.get("steps", 0)
    mtime = max(_mtime(path / CONFIG), _mtime(path / METRICS))
    return RunSummary(path=path, name=path.name, preset=str(cfg.get("name", "")),
                      optimizer=str(train.get("optimizer", "adamw")),
                      steps_done=done if isinstance(done, int) else 0,
                      steps_total=total if isinstance(total, int) else 0,
                      best_val=best, modified=mtime, size_bytes=disk_size(path))


def last_metrics_row(path: Path) -> dict | None:
    """The last complete JSON line of metrics.jsonl, read from its tail only."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(f.tell() - TAIL_BYTES, 0))
            tail = f.read()
    except OSError:
        return None
    for raw in reversed(tail.splitlines()):
        try:
            row = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            continue  # a line cut by a crash, or the partial first line of the tail
        if isinstance(row, dict) and isinstance(row.get("step"), int):
            return row
    return None


def _best_val(path: Path) -> float | None:
    try:
        best = json.loads((path / CHECKPOINTS / BEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    val = best.get("val_loss") if isinstance(best, dict) else None
    return float(val) if isinstance(val, (int, float)) else None


def _imported_step(path: Path) -> int:
    """A run without metrics (an import) has done the steps of its latest checkpoint."""
    from .runs import parse_step

    steps = [parse_step(c.name) for c in subfolders(path / CHECKPOINTS)]
    return max((s for s in steps if s is not None), default=0)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def disk_size(path: Path) -> int:
    """Bytes in the files under path (links not followed)."""
    total = 0
    try:
        entries = list(os.scandir(path))
    except OSError:
        return 0
    for e in entries:
        try:
            if e.is_dir(follow_symlinks=False):
                total += disk_size(Path(e.path))
            elif e.is_file(follow_symlinks=False):
                total += e.stat(follow_symlinks=False).st_size
        except OSError:
            continue
    return total


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
