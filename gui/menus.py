"""The main window's menus and their shortcuts: File, Training, View, Help.

Actions are returned by key so the window can enable them by training state and tests can trigger them.
Training acts go through the Session, like every pane's buttons, so menu and buttons cannot disagree.
"""

from __future__ import annotations

import sys

from PySide6.QtGui import QAction, QActionGroup, QKeySequence

from . import settings, theme
from .run_menu import add_run_entries

_KEY = QKeySequence.StandardKey


def _action(window, menu, key: str, text: str, slot, shortcut=None, tip: str = "") -> QAction:
    action = QAction(text, window)
    action.setObjectName(f"action_{key}")
    if shortcut is not None:
        action.setShortcut(QKeySequence(shortcut))
    action.setStatusTip(tip)
    action.triggered.connect(slot)
    menu.addAction(action)
    return action


def build_menus(window) -> dict[str, QAction]:
    bar, s = window.menu_bar, window.session
    a: dict[str, QAction] = {}
    file = bar.addMenu("&File")
    a["new_run"] = _action(window, file, "new_run", "&New run", window.new_run, _KEY.New,
                           "Stop the current run and start a new one from the builder's config")
    a["open_run"] = _action(window, file, "open_run", "&Open run…", lambda: window.open_run(), _KEY.Open,
                            "Open a run folder: its config, loss curves and samples; Train continues it")
    a["save"] = _action(window, file, "save", "&Save checkpoint", lambda: s.request_training("save"),
                        _KEY.Save, "Write a checkpoint of the run now")
    a["export"] = _action(window, file, "export", "&Export…", window.export, "Ctrl+E",
                          "Export the current pane's figure or data")
    add_run_entries(window, file, a, before=a["save"])
    file.addSeparator()
    a["quit"] = _action(window, file, "quit", "&Quit", window.close, _KEY.Quit)

    train = bar.addMenu("&Training")
    a["train"] = _action(window, train, "train", "&Train", lambda: s.request_training("train"), "F5",
                         "Start training, or continue a stopped run")
    a["pause_resume"] = _action(window, train, "pause_resume", "&Pause", lambda: s.request_training(
        "resume" if s.training_state in ("paused", "pausing") else "pause"), "F6", "Pause or resume training")
    a["step"] = _action(window, train, "step", "S&tep", lambda: s.request_training("step"), "F10",
                        "Train exactly one step")
    a["stop"] = _action(window, train, "stop", "St&op", lambda: s.request_training("stop"), "Shift+F5",
                        "Stop training and save a checkpoint")

    view = bar.addMenu("&View")  # the window puts a show/hide entry per pane on top when it builds them
    window.view_menu = view
    a["reset_layout"] = _action(window, view, "reset_layout", "&Reset layout", window.reset_layout,
                                tip="Put every pane back where it starts")
    themes = view.addMenu("&Theme")
    group = QActionGroup(window)
    for name in settings.THEMES:
        act = _action(window, themes, f"theme_{name}", name.capitalize(),
                      lambda _=False, n=name: window.set_theme(n))
        act.setCheckable(True)
        act.setChecked(theme.current_theme() == name)
        group.addAction(act)
        a[f"theme_{name}"] = act

    help_ = bar.addMenu("&Help")
    a["welcome"] = _action(window, help_, "welcome", "&Welcome", window.first_run.show_welcome,
                           tip="What the app is, and four ways in: the lesson, the sample run, GPT-2, the tour")
    a["tour"] = _action(window, help_, "tour", "&Tour", window.first_run.start_tour,
                        tip="One sentence on each pane, in order (on the sample run when nothing is open)")
    a["shortcuts"] = _action(window, help_, "shortcuts", "&Keyboard shortcuts", window.show_shortcuts, "F1")
    if sys.platform.startswith("linux"):
        a["desktop_entry"] = _action(window, help_, "desktop_entry", "Add to &applications menu",
                                     window.install_desktop_entry,
                                     tip="Put GPT Explorer, with its icon, in the desktop's applications menu")
    a["about"] = _action(window, help_, "about", "&About GPT Explorer", window.show_about)
    return a
