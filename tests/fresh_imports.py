"""Which of some modules a piece of code loads, run in a fresh interpreter: the test process itself has loaded
nearly everything, so only a new one can tell what a step of the app imports (torch's compiler, sympy,
matplotlib: tens of MB each in a process that needs none of them)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def loaded_by(code: str, modules: tuple[str, ...], cwd: Path) -> list[str]:
    """The `modules` loaded after running `code` in a new interpreter working in `cwd` (the repository on its
    path), sorted."""
    script = f"{code}\nimport sys\nprint(sorted(m for m in {modules!r} if m in sys.modules))\n"
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    done = subprocess.run([sys.executable, "-c", script], cwd=cwd, env=dict(os.environ, PYTHONPATH=path),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return ast.literal_eval(done.stdout.strip().splitlines()[-1])
