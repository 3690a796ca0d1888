"""Widgets are views (issue 23): no module of gui/widgets runs work of its own, so none imports the job
machinery, the analysis service, the training worker or its controller. A widget that offers work (an
Export…) says what it wants by a signal, and the app serves it."""

from __future__ import annotations

import ast
from pathlib import Path

import gui.widgets

FORBIDDEN = ("gui.jobs", "gui.analysis", "gui.worker", "gui.controller")
WIDGETS = Path(gui.widgets.__file__).parent


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, relative imports resolved against gui.widgets (imports inside
    functions included)."""
    package = ["gui", "widgets"]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def test_the_resolver_sees_relative_and_absolute_imports(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from ..jobs import JobQueue\nfrom .. import analysis\nimport gui.worker\n"
                      "def f():\n    from gui.controller import X\n", encoding="utf-8")
    got = imported_modules(sample)
    assert {"gui.jobs", "gui.analysis", "gui.worker", "gui.controller.X"} <= got


def test_no_widget_imports_the_job_machinery_or_the_analysis_service():
    files = sorted(WIDGETS.glob("*.py"))
    assert any(f.name == "heatmap.py" for f in files)
    offending = {f.name: sorted(m for m in imported_modules(f) if m.startswith(FORBIDDEN))
                 for f in files}
    assert {name: mods for name, mods in offending.items() if mods} == {}
