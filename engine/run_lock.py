"""One writer per run: an OS file lock on `RUN/.lock`, held while a run is written.

The lock is the operating system's (flock on Linux and macOS, msvcrt.locking on Windows), not the file's
existence, so a writer that died — killed, crashed, power lost — holds nothing: its stale `.lock` file is
simply locked again by the next writer. The holder's process id is written into the file so that a second
writer is refused with one line naming it. Locks are per open file, so two writers in one process
exclude each other too.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import UserError

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
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o644)
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


def holder_pid(path: Path) -> int | None:
    """The pid written by the lock's holder (None when unreadable)."""
    try:
        with open(path, "rb") as f:
            f.seek(_PID_AT)
            text = f.read(32).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
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
