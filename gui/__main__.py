"""`python -m gui`: the window, as the `gpt-explorer-gui` launcher starts it (gui/desktop_entry.py)."""

import sys

from .cli import main_window

sys.exit(main_window())
