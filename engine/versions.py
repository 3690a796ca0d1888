"""What this installation is made of: the versions of the app, Python, Qt (PySide6), torch and the GPU, as
About shows them and `gpt-explorer --version` prints them, and as a crash report starts.

Qt's version is read from the installed distribution's metadata, so the engine never imports Qt; the app
passes the Qt it actually runs (`qVersion()`), which may differ from the wheel's when a system Qt is used.
Nothing here may fail: a part that cannot be read says so in its line instead.
"""

from __future__ import annotations

import platform
import sys
from importlib import metadata

DISTRIBUTION = "gpt-explorer"
QT_DISTRIBUTIONS = ("PySide6-Essentials", "PySide6")


def app_version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def _qt_installed() -> str:
    for name in QT_DISTRIBUTIONS:
        try:
            return f"PySide6 {metadata.version(name)}"
        except metadata.PackageNotFoundError:
            continue
    return "not installed"


def _torch_and_gpu() -> tuple[str, str]:
    try:
        import torch
    except Exception as e:  # noqa: BLE001 — a broken torch is exactly what a report must name
        return f"cannot be imported ({type(e).__name__}: {e})", "unknown"
    version = torch.__version__
    try:
        if torch.cuda.is_available():
            names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
            gpu = f"CUDA {torch.version.cuda}: " + ", ".join(names)
        elif getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            gpu = "Apple MPS"
        else:
            gpu = "none (training runs on the CPU)"
    except Exception as e:  # noqa: BLE001 — a driver that fails to answer
        gpu = f"unknown ({type(e).__name__}: {e})"
    return version, gpu


def versions(qt: str | None = None) -> list[tuple[str, str]]:
    """(part, version) for the app, Python, Qt, torch, the GPU and the system, in that order. `qt`: the
    Qt the running app uses (the GUI passes it); else the installed PySide6's version."""
    torch_version, gpu = _torch_and_gpu()
    return [("GPT Explorer", app_version()),
            ("Python", f"{platform.python_version()} ({sys.executable})"),
            ("Qt", qt or _qt_installed()),
            ("torch", torch_version),
            ("GPU", gpu),
            ("System", platform.platform())]


def report(qt: str | None = None) -> str:
    """The versions as lines of `part: version` (what --version prints and a crash report begins with)."""
    return "\n".join(f"{part}: {value}" for part, value in versions(qt))
