"""Bounded, regular-file-only reads and writes that stay inside a folder: the one gate every run file,
config and corpus passes through.

A file named by a user or found in a run directory may be a FIFO (a read never ends), a device such as
/dev/zero or /dev/urandom (a read never ends, or fills the memory), a symlink to one of those, or simply
far larger than anything GPT Explorer writes. `read_bytes` refuses all of these before reading, with the
file named, and never reads more than its cap, so a hostile file costs at most one cap of memory.
`check_regular` is the same check for files a library opens itself (safetensors, torch.load).
`parse_json` and `parse_toml` bound how deeply a document may nest (a 100,000-deep one would otherwise
raise RecursionError in the parser or in whatever walks the result); `read_tail` reads the end of a
log without ever reading more than it asks for.
`check_inside` refuses a write path under a folder when any part of it below that folder is a symlink,
so nothing written into a run lands outside it (a symlinked `cache/` would otherwise redirect writes).
`write_whole` writes a file the user named (an export, with its further pages) where it can be seen only
whole: under a temporary name first, renamed once complete, and never at all if the writing fails or is
cancelled.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import tempfile
import tomllib
import zipfile
from collections.abc import Callable
from pathlib import Path

from .errors import UserError

KB, MB, GB = 1 << 10, 1 << 20, 1 << 30
CONFIG_CAP = 1 * MB        # a config.toml is a few hundred bytes
JSON_CAP = 64 * MB         # tokenizer.json (a word vocabulary), probe.json, index.json, best.json
JSONL_CAP = 1 * GB         # metrics.jsonl and samples.jsonl of a very long run
WEIGHTS_CAP = 64 * GB      # a checkpoint or snapshot file (memory-mapped, not read whole)
CORPUS_CAP = 2 * GB        # a text corpus
MAX_DEPTH = 32             # nesting of any JSON or TOML we read: ours is at most 3 deep (probe.json's ids)


class UnsafeFileError(UserError, ValueError):
    """A file that is not a regular file, too large, or reached through a symlink out of its folder."""


def check_regular(path: str | Path, cap: int, what: str = "file") -> int:
    """The size of `path` if it is a regular file (after symlinks) of at most `cap` bytes; else refuse."""
    path = Path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise  # the caller names a missing file in its own words
    except OSError as e:
        raise UnsafeFileError(f"cannot read {what} {path}: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeFileError(f"{what} {path} is {kind_of(st.st_mode)}, not a regular file")
    if st.st_size > cap:
        raise UnsafeFileError(f"{what} {path} is {st.st_size / MB:,.1f} MB, more than the {cap / MB:,.0f} MB "
                              "such a file may have")
    return st.st_size


def kind_of(mode: int) -> str:
    """What a file is, in words, from its st_mode (lstat's for a link itself)."""
    return ("a symbolic link" if stat.S_ISLNK(mode) else "a directory" if stat.S_ISDIR(mode)
            else "a pipe (FIFO)" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a regular file" if stat.S_ISREG(mode) else "a socket or other special file")


def read_bytes(path: str | Path, cap: int, what: str = "file") -> bytes:
    """The bytes of a regular file of at most `cap` bytes; FileNotFoundError passes through."""
    path = Path(path)
    check_regular(path, cap, what)
    # O_NONBLOCK: should the file be swapped for a FIFO after the check, opening it does not wait
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafeFileError(f"{what} {path} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(cap + 1)
    finally:
        os.close(fd)
    if len(data) > cap:
        raise UnsafeFileError(f"{what} {path} grew past the {cap / MB:,.0f} MB such a file may have")
    return data


def copy_regular(src: str | Path, dst: str | Path, cap: int, what: str = "file") -> None:
    """Copy the regular file `src` (not a symlink to one) of at most `cap` bytes to `dst`, written under a
    temporary name and renamed; what a copy reads is counted, so a file growing meanwhile stops at the cap."""
    src, dst = Path(src), Path(dst)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    if src.is_symlink():  # O_NOFOLLOW's own refusal (ELOOP) is not portable to name
        raise UnsafeFileError(f"{what} {src} is a symbolic link; only the files themselves are copied")
    fd = os.open(src, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFileError(f"{what} {src} is not a regular file")
        if st.st_size > cap:
            raise UnsafeFileError(f"{what} {src} is {st.st_size / MB:,.1f} MB, more than the {cap / MB:,.0f} MB "
                                  "such a file may have")
        tmp = dst.with_name(f".{dst.name}.tmp{os.getpid()}")
        with os.fdopen(fd, "rb", closefd=False) as f, open(tmp, "wb") as out:
            copied = 0
            while chunk := f.read(1 << 20):
                copied += len(chunk)
                if copied > cap:
                    out.close()
                    tmp.unlink(missing_ok=True)
                    raise UnsafeFileError(f"{what} {src} grew past the {cap / MB:,.0f} MB such a file may have")
                out.write(chunk)
        os.replace(tmp, dst)
    finally:
        os.close(fd)


def read_text(path: str | Path, cap: int, what: str = "file") -> str:
    """`read_bytes` decoded as UTF-8; bad bytes are UnicodeDecodeError for the caller to name."""
    return read_bytes(path, cap, what).decode("utf-8")


class RefusedPickle(ValueError):
    """A torch file that `load_weights_only` would not read: its message is the reason, one line."""


def load_weights_only(path: str | Path, mmap: bool = False):
    """torch.load(path, weights_only=True) on the CPU: tensors and plain containers only, so no code in the file
    runs. torch's warnings (a pickle protocol it did not expect) stay off stderr, and its refusal, a paragraph
    that suggests loading the file unsafely, becomes one line: a RefusedPickle naming what the file asked to load
    ("it asks to load os.system"), or a ValueError for bytes its reader stopped at (garbage, an instruction it
    does not allow). Other errors (a truncated zip) pass through for the caller to word.

    `mmap`: the tensors of a file in torch's zip format are views of its private memory map, read when first
    touched, instead of copies made by torch's zip reader, which holds the interpreter lock for each whole tensor
    (GPT-2 small's optimizer state, 1 GB: 0.1-0.3 s at a time beside the GUI thread; issue 37)."""
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            # a file that is not torch's zip (an older torch.save, a plain pickle) is read, and refused, as before
            return torch.load(path, map_location="cpu", weights_only=True, mmap=mmap and zipfile.is_zipfile(path))
        except Exception as e:  # noqa: BLE001 — torch raises pickle's errors, RuntimeError and its own
            text = str(e)
            if "Weights only load failed" not in text:
                raise
        found = re.search(r"GLOBAL (\S+)", text)
        if found:
            raise RefusedPickle(f"it is a pickle that asks to load {found.group(1)}; it was refused without "
                                "running it")
        found = re.search(r"Unsupported operand (\d+)", text)
        where = f" (opcode {found.group(1)})" if found else ""
        raise ValueError(f"not a file of tensors: torch's weights-only reader stopped at an instruction it does "
                         f"not allow{where}")


class TooDeepError(ValueError):
    """A JSON or TOML document nested more deeply than MAX_DEPTH (a ValueError, as a parse error is)."""


def _deeper_than(value, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:  # iterative: the check itself must not recurse
        v, depth = stack.pop()
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in (v.values() if isinstance(v, dict) else v)
                     if isinstance(c, (dict, list)))
    return False


def _bounded(parse, text, what: str):
    try:
        value = parse(text)
    except RecursionError:
        raise TooDeepError(f"{what} is nested more than {MAX_DEPTH} levels deep") from None
    if isinstance(value, (dict, list)) and _deeper_than(value, MAX_DEPTH):
        raise TooDeepError(f"{what} is nested more than {MAX_DEPTH} levels deep")
    return value


def parse_json(text: str | bytes, what: str = "JSON file"):
    """json.loads with nesting bounded: a ValueError (JSONDecodeError or TooDeepError) when not readable."""
    return _bounded(json.loads, text, what)


def parse_toml(text: str, what: str = "TOML file") -> dict:
    """tomllib.loads with nesting bounded: a ValueError (TOMLDecodeError or TooDeepError) when not readable."""
    return _bounded(tomllib.loads, text, what)


def read_tail(path: str | Path, n: int, cap: int, what: str = "file") -> bytes:
    """The last `n` bytes of a regular file of at most `cap` bytes (refused as `read_bytes` refuses)."""
    path = Path(path)
    check_regular(path, cap, what)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFileError(f"{what} {path} is not a regular file")
        os.lseek(fd, max(st.st_size - n, 0), os.SEEK_SET)
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(n)
    finally:
        os.close(fd)


def check_inside(root: str | Path, path: str | Path) -> Path:
    """`path` (under `root`) if no part of it below `root` is a symlink; the last part may not exist yet."""
    root, path = Path(root), Path(path)
    try:
        rel = path.relative_to(root)
    except ValueError:
        raise UnsafeFileError(f"{path} is not inside {root}") from None
    if ".." in rel.parts:
        raise UnsafeFileError(f"{path} leaves {root}")
    here = root
    for part in rel.parts:
        here = here / part
        if here.is_symlink():
            raise UnsafeFileError(f"{here} is a symbolic link; GPT Explorer writes only to regular paths "
                                  f"inside {root}")
    return path


def check_output_path(out: str | Path) -> Path:
    """Refuse, before any work, an output file whose folder is missing or unwritable, or that exists as
    something other than a regular file (a directory, a device)."""
    out = Path(out)
    if out.exists() and not out.is_file():
        raise UnsafeFileError(f"cannot write {out}: it is {'a directory' if out.is_dir() else 'not a regular file'}")
    if not out.parent.is_dir():
        raise UnsafeFileError(f"cannot write {out}: the folder {out.parent} does not exist")
    if not os.access(out.parent, os.W_OK):
        raise UnsafeFileError(f"cannot write {out}: the folder {out.parent} is not writable")
    return out


def write_failed(out: str | Path, e: OSError) -> UnsafeFileError:
    """The one line for an output file that could not be written after all."""
    return UnsafeFileError(f"cannot write {out}: {e.strerror or e}")


def written(paths: list[Path]) -> str:
    """Where an export wrote, in words: the path, or how many pages, in which folder, first and last."""
    if len(paths) == 1:
        return str(paths[0])
    if len(paths) == 2 and paths[0].stem == paths[1].stem:  # a file and its data beside it (a .py and its .npz)
        return f"{paths[0]} and {paths[1].name} beside it"
    return f"{len(paths)} pages in {paths[0].parent}: {paths[0].name} … {paths[-1].name}"


def write_whole(path: str | Path, write: Callable[[Path], object]) -> list[Path]:
    """Run write(tmp), `tmp` being `path`'s name in a new hidden folder beside it, then move every file it
    made there into `path`'s folder, `path` last (each a rename: a file appears under its name only whole)
    and remove the folder. If write raises (a failure, a cancel), the folder goes with all it holds and no
    file under a name asked for has changed. Returns the files written: `path` first, then the others (the
    further pages of a sheet) in the order of their names' numbers."""
    path = check_output_path(path)
    try:
        folder = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent))
    except OSError as e:
        raise write_failed(path, e) from None
    try:
        write(folder / path.name)
        made = sorted((p for p in folder.iterdir() if p.is_file() and p.name != path.name), key=_natural)
        if (folder / path.name).is_file():
            made.append(folder / path.name)
        if not made:
            raise UserError(f"the export wrote nothing to {path}")
        for src in made:
            os.replace(src, path.parent / src.name)
    except OSError as e:
        raise write_failed(path, e) from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    done = [path.parent / p.name for p in made]
    return done[-1:] + done[:-1] if made[-1].name == path.name else done


def _natural(p: Path) -> list:
    """A sort key that puts name-p2 before name-p10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", p.name)]
