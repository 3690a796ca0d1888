"""Code run as in a fresh interpreter (`python -c CODE ARGS…`): which of some modules a step of the app loads (the
test process itself has loaded nearly everything, so only a new one can tell: torch's compiler, sympy,
matplotlib are tens of MB each in a process that needs none of them), what a command prints, how it exits.

Most such runs import torch, ~2 s of CPU each before their own work (a dozen runs in the suite). So they are
forked from one fresh interpreter per test process that has imported `engine` and torch and nothing else (the
"zygote", Qt-free, its OpenMP never started): a run then starts where a fresh `python -c` that imports torch
would be after its import (the 12 such tests: 30 s of CPU, 13 s forked, load ~6). A run that must see torch (or any
module the zygote holds) not loaded is given a really fresh interpreter (`loaded_by` decides, `run(fresh=True)`
asks); so is every run off Linux, and every run if the zygote's start warned (a run would not say it again).
"""

from __future__ import annotations

import ast
import atexit
import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 600  # a cap on one run, never what a test checks

# The zygote: reads one request a line, forks a child that runs it as `python -c` would, answers its pid and
# then its exit code on its stdout (the pipe to the test); a child writes to the request's files.
_SERVER = r"""
import atexit, builtins, json, os, sys, traceback, types, warnings
with warnings.catch_warnings(record=True) as warned:  # "always": nothing a run would warn of is marked as said
    warnings.simplefilter("always")
    import engine, torch
print(json.dumps({"modules": sorted(sys.modules), "warned": [str(w.message) for w in warned]}), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        rc = 0
        try:
            for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, request["stdout"], os.O_WRONLY),
                                    (2, request["stderr"], os.O_WRONLY)):
                opened = os.open(path, flags)
                os.dup2(opened, fd)
                os.close(opened)
            sys.stdin = open(os.devnull, encoding="utf-8")
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            sys.argv = ["-c", *request["argv"]]
            main = types.ModuleType("__main__")
            main.__builtins__ = builtins
            sys.modules["__main__"] = main
            try:
                exec(compile(request["code"], "<string>", "exec"), main.__dict__)
            except SystemExit as e:
                if e.code is None or isinstance(e.code, int):
                    rc = e.code or 0
                else:
                    print(e.code, file=sys.stderr)
                    rc = 1
            except BaseException:
                traceback.print_exc()
                rc = 1
            atexit._run_exitfuncs()
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:
                    pass
            os._exit(rc)
    print(json.dumps(pid), flush=True)
    _, status = os.waitpid(pid, 0)
    print(json.dumps(os.waitstatus_to_exitcode(status)), flush=True)
"""


def _path_env(env: dict | None = None) -> dict:
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


class _Zygote:
    def __init__(self):
        self._errors = tempfile.TemporaryFile()
        self.process = subprocess.Popen([sys.executable, "-c", _SERVER], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=self._errors, bufsize=0, cwd=ROOT,
                                        env=_path_env())
        self._said = selectors.DefaultSelector()
        self._said.register(self.process.stdout, selectors.EVENT_READ)
        self._read = b""
        first = self._line(TIMEOUT_S)
        if first is None:
            self._errors.seek(0)
            raise RuntimeError(f"the zygote did not start: {self._errors.read()[-2000:].decode(errors='replace')}")
        said = json.loads(first)
        self.modules, self.warned = frozenset(said["modules"]), said["warned"]

    def _line(self, timeout: float) -> str | None:
        """The zygote's next line, or None if it said none within `timeout` seconds (or ended). Read unbuffered:
        two lines that came together are both kept, never one left unseen in a buffer while the pipe is waited on."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._read:
            left = deadline - time.monotonic()
            if left <= 0 or not self._said.select(left):
                return None
            chunk = os.read(self.process.stdout.fileno(), 1 << 16)
            if not chunk:
                return None
            self._read += chunk
        line, self._read = self._read.split(b"\n", 1)
        return line.decode()

    def run(self, code: str, argv: list[str], cwd: Path, env: dict, timeout: float) -> subprocess.CompletedProcess:
        with tempfile.TemporaryDirectory() as folder:
            out, err = Path(folder, "stdout"), Path(folder, "stderr")
            out.touch()
            err.touch()
            self.process.stdin.write((json.dumps({"code": code, "argv": argv, "cwd": str(cwd), "env": env,
                                                  "stdout": str(out), "stderr": str(err)}) + "\n").encode())
            pid = json.loads(self._line(TIMEOUT_S))
            said = self._line(timeout)
            if said is None:
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:  # it ended meanwhile
                    pass
                self._line(TIMEOUT_S)
                raise subprocess.TimeoutExpired(["python", "-c", code, *argv], timeout)
            return subprocess.CompletedProcess(["python", "-c", code, *argv], json.loads(said),
                                               out.read_text(encoding="utf-8", errors="replace"),
                                               err.read_text(encoding="utf-8", errors="replace"))

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(TIMEOUT_S)
        self.process.stdout.close()
        self._errors.close()


_zygote: _Zygote | None = None


def _the_zygote() -> _Zygote | None:
    global _zygote
    if _zygote is None and sys.platform.startswith("linux"):  # fork after torch loaded: measured here only
        _zygote = _Zygote()
        atexit.register(_zygote.close)
    return None if _zygote is None or _zygote.warned else _zygote  # a warning at its start: runs would not say it


def run(code: str, *argv: str, cwd: str | Path | None = None, env: dict | None = None, timeout: float = TIMEOUT_S,
        fresh: bool = False) -> subprocess.CompletedProcess:
    """`python -c code *argv` in `cwd` (default: the repository) with `env` (default: this one's), the repository
    on its path; text out and err. Forked from the zygote unless `fresh` (a run whose point is what happens
    before torch loads)."""
    cwd, env = Path(cwd or ROOT), _path_env(env)
    zygote = None if fresh else _the_zygote()
    if zygote is None:
        return subprocess.run([sys.executable, "-c", code, *map(str, argv)], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=timeout)
    return zygote.run(code, list(map(str, argv)), cwd, env, timeout)


def loaded_by(code: str, modules: tuple[str, ...], cwd: Path) -> list[str]:
    """The `modules` loaded after running `code` as in a new interpreter working in `cwd` (the repository on its
    path), sorted; in a really new one when the zygote holds one of them (torch)."""
    script = f"{code}\nimport sys\nprint(sorted(m for m in {modules!r} if m in sys.modules))\n"
    zygote = _the_zygote()
    done = run(script, cwd=cwd, fresh=zygote is None or bool(zygote.modules & set(modules)))
    assert done.returncode == 0, done.stderr[-2000:]
    return ast.literal_eval(done.stdout.strip().splitlines()[-1])
