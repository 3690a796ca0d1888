"""The `gpt-explorer` entry point: the engine's command line, plus the app for `gui` (or no command).

Qt is imported only when the app is launched, so `gpt-explorer train` never loads it.
"""

from __future__ import annotations

import argparse
import sys

from engine.cli import main as engine_main


def _launch(args: argparse.Namespace) -> int:
    from .app import run_app  # Qt loads here and only here

    return run_app(run_dir=args.run)


def main() -> int:
    return engine_main(sys.argv[1:], launch_gui=_launch)


if __name__ == "__main__":
    sys.exit(main())
