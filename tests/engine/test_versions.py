"""The installation's versions, as About shows them and `gpt-explorer --version` prints them (issue 40)."""

from __future__ import annotations

import platform

import torch

from engine.cli import main
from engine.versions import versions


def test_versions_name_the_app_python_qt_torch_and_the_gpu():
    parts = dict(versions())
    assert list(parts)[:5] == ["GPT Explorer", "Python", "Qt", "torch", "GPU"]
    assert parts["Python"].startswith(platform.python_version())
    assert parts["torch"] == torch.__version__
    assert parts["Qt"].startswith("PySide6 6.")  # from the installed wheel: the engine imports no Qt
    assert parts["GPU"].startswith("CUDA") if torch.cuda.is_available() else "none" in parts["GPU"]
    assert dict(versions(qt="Qt 9.9"))["Qt"] == "Qt 9.9"


def test_the_command_line_prints_them_with_version(capsys):
    try:
        main(["--version"])
    except SystemExit as e:
        assert e.code == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("GPT Explorer: ") and f"torch: {torch.__version__}" in out
    assert "Qt: PySide6" in out and "GPU: " in out
