"""The two entry points: `gpt-explorer`, the engine's command line plus the app for `gui` (or no command),
a console script; and `gpt-explorer-gui`, the window alone, a gui script (on Windows it opens no console
window; on Linux the desktop entry starts it, gui/desktop_entry.py).

Qt is imported only when the app is launched, so `gpt-explorer train` never loads it. The app's options
may be given without the `gui` command (`gpt-explorer --run DIR`), as "the default with no command" reads.
"""

from __future__ import annotations

import argparse
import sys

from engine.cli import main as engine_main
from engine.errors import UserError


def _launch(args: argparse.Namespace) -> int:
    from .display_libraries import install_hint, missing_libraries, uses_xcb

    missing = missing_libraries() if uses_xcb() else []
    if missing:  # Qt would abort with a page about plugins; say what to install instead
        raise UserError(install_hint(missing))
    from .app import exit_now, run_app  # Qt loads here and only here

    exit_now(run_app(run_dir=args.run))


GLOBAL_OPTIONS = ("-h", "--help", "--version")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0].startswith("-") and argv[0] not in GLOBAL_OPTIONS:
        argv = ["gui", *argv]
    return engine_main(argv, launch_gui=lambda args: _launch(args))


def main_window(argv: list[str] | None = None) -> int:
    """The window, with the `gui` command's options (`gpt-explorer-gui --run DIR`)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    return main(["gui", *argv])


if __name__ == "__main__":
    sys.exit(main())
