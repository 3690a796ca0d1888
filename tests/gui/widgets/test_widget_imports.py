"""Widgets are views (issue 23): no module of gui/widgets runs work of its own, so none imports the job
machinery, the analysis service, the training worker or its controller. A widget that offers work (an
Export…) says what it wants by a signal, and the app serves it. Panes reach training through the session
and the controller only: none imports the training worker."""

from __future__ import annotations

import ast
from pathlib import Path

import gui
import gui.widgets

FORBIDDEN = ("gui.jobs", "gui.analysis", "gui.worker", "gui.controller")
WIDGETS = Path(gui.widgets.__file__).parent
GUI = Path(gui.__file__).parent


def imported_modules(path: Path, root: Path = GUI) -> set[str]:
    """Every module a file of the gui package (at `root`) imports, relative imports resolved against its
    package (imports inside functions included)."""
    package = ["gui", *path.resolve().parent.relative_to(root.resolve()).parts]
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
    (tmp_path / "widgets").mkdir()
    sample = tmp_path / "widgets" / "sample.py"
    sample.write_text("from ..jobs import JobQueue\nfrom .. import analysis\nimport gui.worker\n"
                      "def f():\n    from gui.controller import X\n", encoding="utf-8")
    got = imported_modules(sample, root=tmp_path)
    assert {"gui.jobs", "gui.analysis", "gui.worker", "gui.controller.X"} <= got


def test_no_widget_imports_the_job_machinery_or_the_analysis_service():
    files = sorted(WIDGETS.glob("*.py"))
    assert any(f.name == "heatmap.py" for f in files)
    offending = {f.name: sorted(m for m in imported_modules(f) if m.startswith(FORBIDDEN))
                 for f in files}
    assert {name: mods for name, mods in offending.items() if mods} == {}


def test_no_pane_imports_the_training_worker():
    files = sorted((GUI / "panes").rglob("*.py"))
    assert any(f.name == "pane.py" and f.parent.name == "training" for f in files)
    offending = {str(f.relative_to(GUI)): sorted(m for m in imported_modules(f) if m.startswith("gui.worker"))
                 for f in files}
    assert {name: mods for name, mods in offending.items() if mods} == {}
