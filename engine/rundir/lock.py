"""One writer per run: an OS file lock on `RUN/.lock`, held while a run is written.

The lock is the operating system's (flock on Linux and macOS, msvcrt.locking on Windows), not the file's
existence, so a writer that died — killed, crashed, power lost — holds nothing: its stale `.lock` file is
simply locked again by the next writer. The holder's process id is written into the file so that a second
writer is refused with one line naming it. Locks are per open file, so two writers in one process
exclude each other too. A `.lock` that is not a regular file (a folder, a FIFO, a link to a device or to
a file elsewhere) is refused in one line before it is opened for writing: it was not made by us.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import UserError
from ..safe_io import kind_of

LOCK_FILE = ".lock"
_PID_AT = 16  # the pid is written after the locked byte, which Windows makes unreadable to others

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None
    import msvcrt


class RunLockedError(UserError, ValueError):
    """Another process (or another writer in this one) is writing the run."""


class RunLock:
    """An exclusive, non-blocking lock on a run directory; `release()` (or garbage collection) frees it."""

    def __init__(self, run_dir: str | Path):
        self.path = Path(run_dir) / LOCK_FILE
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> RunLock:
        if self._fd is not None:
            return self
        fd = _open_lock_file(self.path)
        try:
            _lock(fd)
        except OSError:
            os.close(fd)
            holder = holder_pid(self.path)
            who = f"process {holder}" if holder is not None else "another process"
            raise RunLockedError(f"{self.path.parent} is being trained by {who}; stop it first, or train "
                                 "another run") from None
        os.lseek(fd, _PID_AT, os.SEEK_SET)
        os.write(fd, f"{os.getpid()}\n".encode())
        os.ftruncate(fd, _PID_AT + len(f"{os.getpid()}\n"))
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            _unlock(fd)
        finally:
            os.close(fd)

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()

    def __del__(self):
        try:
            self.release()
        except OSError:
            pass


class LockFileError(UserError, ValueError):
    """The run's `.lock` is something other than a lock file we wrote."""


_FLAGS = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


def _open_lock_file(path: Path) -> int:
    """A descriptor of the regular lock file at `path`, created if missing; nothing else is opened for
    writing (no link is followed, a FIFO is never waited on)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | _FLAGS, 0o644)
    except OSError as e:
        raise LockFileError(f"{path} cannot be used as the run's lock file ({_what_is(path) or e.strerror}); "
                            "remove it and try again") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise LockFileError(f"{path} is {_what_is(path) or 'not a regular file'}, not a lock file; remove it "
                            "and try again")
    return fd


def _what_is(path: Path) -> str | None:
    """What is at `path` when it is not a regular file (None when it is, or cannot be looked at)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) else kind_of(mode)


def holder_pid(path: Path) -> int | None:
    """The pid written by the lock's holder (None when unreadable)."""
    try:
        fd = os.open(path, os.O_RDONLY | _FLAGS)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        os.lseek(fd, _PID_AT, os.SEEK_SET)
        text = os.read(fd, 32).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)
    return int(text) if text.isdigit() else None


def _lock(fd: int) -> None:
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    else:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)


def _unlock(fd: int) -> None:
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
    else:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
