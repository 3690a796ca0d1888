"""The command line (docs/command-line.md, a contract: keep its names).

Each subcommand lives in its own module of this package with ``add_parser(subparsers)`` (which sets
``func=<function(args) -> int>`` as a default) and imports what it needs inside ``run`` so that ``--help``
and ``train`` stay light; ``train`` and every other command but ``gui`` never load Qt. The app itself is
launched through the ``launch_gui`` callable that ``gui.cli`` passes in, so the engine never imports the GUI.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
from collections.abc import Callable, Sequence

from ..errors import UserError

ORDER = ("gui", "train", "sample", "forms", "export", "bench")


class _VersionAction(argparse.Action):
    """--version: the installation's versions (engine/versions.py), computed only when asked (torch loads)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from ..versions import report

        print(report())
        parser.exit()


def _command_modules() -> list[str]:
    found = {m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")}
    return [n for n in ORDER if n in found] + sorted(found - set(ORDER))


def build_parser(launch_gui: Callable[[argparse.Namespace], int] | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpt-explorer",
        description="Build a small GPT, train it on Shakespeare, and read the symbolic form of its error.")
    parser.add_argument("--version", action=_VersionAction,
                        help="print the versions of the app, Python, Qt, torch and the GPU, and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    gui = sub.add_parser("gui", help="launch the app (the default with no command)")
    gui.add_argument("--run", metavar="DIR", help="open an existing run directory and show its history")
    gui.set_defaults(func=launch_gui)
    for name in _command_modules():
        if name != "gui":
            importlib.import_module(f"{__name__}.{name}").add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None,
         launch_gui: Callable[[argparse.Namespace], int] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(launch_gui)
    args = parser.parse_args(argv or ["gui"])
    if getattr(args, "func", None) is None:
        print("gpt-explorer: the app is not available from this entry point; run 'gpt-explorer gui'",
              file=sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except UserError as e:
        print(f"gpt-explorer: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("gpt-explorer: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`gpt-explorer forms … | head`): stop quietly, as cat does
        # Python would complain once more when it flushes stdout at exit; point stdout at nothing instead
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
