"""The welcome: what the app is in two lines, and the four ways in — watch heads form (the induction lesson,
trained live), open the sample run (trained in the background, gui/first_run/sample.py), open a GPT-2 folder,
take the tour. Shown at start until its "Show at start" box is unticked, and from Help → Welcome.

A dialog without modality beside the window, so the window behind it is live and an action's effect (the
lesson training, the sample opening) is seen at once. Each action is one of the window's own acts
(gui/first_run/first_run.py), the same a menu reaches."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (QCheckBox, QDialog, QDialogButtonBox, QGridLayout, QLabel, QPushButton,
                               QVBoxLayout, QWidget)

from .. import settings

INTRO = ("<h2>Welcome to GPT Explorer</h2>"
         "<p>Build a small GPT, train it in front of you, and watch what it learns: the attention of every head "
         "as it forms, and the mathematics of its training error.<br>Everything runs on this computer, and "
         "every run is a folder you can open again.</p>")

# (key, button, what it does): the four ways in, in the order a newcomer is likely to want them
ACTIONS = (
    ("lesson", "Watch heads form",
     "Train the induction lesson live (about a minute on a laptop): a previous-token head forms, then an "
     "induction head that reads it, marked on the loss curve as they do."),
    ("sample", "Open the sample run",
     "The same lesson already trained, with every saved step: each pane has something to show at once."),
    ("gpt2", "Open a GPT-2 folder…",
     "A GPT-2-family model on disk (config.json, its weights and tokenizer): its heads, their roles and "
     "the forms of its weights. Nothing is downloaded."),
    ("tour", "Take the tour",
     "One sentence on each pane, in order; the arrows move, Escape ends it."),
)


class WelcomeDialog(QDialog):
    sig_chosen = Signal(str)  # a key of ACTIONS

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("welcome")
        self.setWindowTitle("Welcome to GPT Explorer")
        intro = QLabel(INTRO, self)
        intro.setWordWrap(True)
        self.buttons: dict[str, QPushButton] = {}
        self.notes: dict[str, QLabel] = {}
        grid = QGridLayout()
        grid.setColumnStretch(1, 1)
        grid.setHorizontalSpacing(14)
        for row, (key, title, note) in enumerate(ACTIONS):
            button = QPushButton(title, self)
            button.setObjectName(f"welcome_{key}")
            button.setMinimumHeight(34)
            button.clicked.connect(lambda _=False, k=key: self._choose(k))
            label = QLabel(note, self)
            label.setWordWrap(True)
            label.setObjectName(f"welcome_{key}_note")
            self.buttons[key], self.notes[key] = button, label
            grid.addWidget(button, row, 0)
            grid.addWidget(label, row, 1)
        self.show_at_start = QCheckBox("Show this at start (Help → Welcome shows it again)", self)
        self.show_at_start.setObjectName("welcome_at_start")
        self.show_at_start.setChecked(settings.show_welcome())
        self.show_at_start.toggled.connect(settings.set_show_welcome)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        close.rejected.connect(self.reject)
        col = QVBoxLayout(self)
        col.addWidget(intro)
        col.addLayout(grid)
        col.addSpacing(6)
        col.addWidget(self.show_at_start)
        col.addWidget(close)
        self.buttons["lesson"].setDefault(True)
        self.setMinimumWidth(560)
        self.resize(640, self.sizeHint().height())

    def set_sample_state(self, text: str) -> None:
        """How the sample stands (training, ready, failed), under its button's description."""
        base = dict((k, n) for k, _, n in ACTIONS)["sample"]
        self.notes["sample"].setText(f"{base} <i>{text}</i>" if text else base)

    def _choose(self, key: str) -> None:
        self.sig_chosen.emit(key)
        if key != "sample":  # the sample may be a few seconds away: its note says so
            self.accept()
