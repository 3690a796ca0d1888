"""A timeline over a run's saved steps: a slider to scrub, a play button, and the step it shows.

The slider moves over positions in the list of steps (saved steps need not be evenly spaced), and the
label always names the step the timeline is at, so what a view shows can be checked against it. Keys
(while the timeline or its slider has focus): Space plays or pauses, Left/Right step back and forth,
Home/End jump to the first and newest step. Play advances at the chosen frames a second (a 10-snapshot run
at a fixed 8 was over in 1.2 s) and at the end stops, or starts over with "loop"; "follow" keeps the
timeline on the newest step as steps are added (a live run), until the user moves it or plays.

Several timelines can show one shared step (the Heatmaps and Weight panes: `Session.browse_step`):
`sig_step_chosen` says where the user (slider, keys, play, follow) moved it, None for "follow the newest",
and `show(step)` moves it there when another timeline was moved, without echoing back.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QCheckBox, QComboBox, QHBoxLayout, QLabel, QSlider, QStyle, QToolButton, QWidget

DEFAULT_FPS = 2
SPEEDS = (0.5, 1, 2, 4, 8, 16)  # frames a second offered


class Timeline(QWidget):
    sig_step_changed = Signal(int)   # the step now shown
    sig_follow_changed = Signal(bool)
    sig_step_chosen = Signal(object)  # the user moved it: the step, or None when following the newest

    def __init__(self, parent: QWidget | None = None, fps: float = DEFAULT_FPS):
        super().__init__(parent)
        self._steps: list[int] = []
        self._told: int | None = None  # the step `show` asked for, kept until steps arrive
        self._quiet = False            # moving because told to: no sig_step_chosen
        self.play_button = QToolButton()
        self.play_button.setToolTip("Play the coefficient over training (Space)")
        self.play_button.setCheckable(True)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, 0)
        self.slider.setPageStep(1)
        self.slider.setToolTip("Scrub over the saved steps (Left/Right, Home/End)")
        self.label = QLabel("no steps")
        self.label.setMinimumWidth(self.label.fontMetrics().horizontalAdvance("step 000000 (000/000)") + 4)
        self.follow_box = QCheckBox("follow newest")
        self.follow_box.setToolTip("Move to each new snapshot as training saves it")
        self.follow_box.setChecked(True)
        self.speed_box = QComboBox()
        self.speed_box.setToolTip("Play speed: saved steps a second")
        for f in sorted(set(SPEEDS) | {fps}):
            self.speed_box.addItem(f"{f:g}/s", f)
        self.loop_box = QCheckBox("loop")
        self.loop_box.setToolTip("Play from the first step again after the last")
        self._timer = QTimer(self)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for w, stretch in ((self.play_button, 0), (self.speed_box, 0), (self.loop_box, 0), (self.slider, 1),
                           (self.label, 0), (self.follow_box, 0)):
            layout.addWidget(w, stretch)
        self.speed_box.currentIndexChanged.connect(lambda _: self._timer.setInterval(int(1000 / self.fps)))
        self.speed_box.setCurrentIndex(self.speed_box.findData(fps))
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.slider.installEventFilter(self)
        self._show_play_icon()
        self.slider.valueChanged.connect(self._on_slider_moved)
        self.play_button.toggled.connect(self._on_play_toggled)
        self._timer.timeout.connect(self._advance)
        self.follow_box.toggled.connect(self.sig_follow_changed)
        self.follow_box.toggled.connect(self._on_follow_toggled)

    # ---- state -----------------------------------------------------------------------------

    @property
    def steps(self) -> list[int]:
        return list(self._steps)

    def step(self) -> int | None:
        return self._steps[self.slider.value()] if self._steps else None

    @property
    def following(self) -> bool:
        return self.follow_box.isChecked()

    @property
    def fps(self) -> float:
        return float(self.speed_box.currentData())

    def set_fps(self, fps: float) -> None:
        index = self.speed_box.findData(fps)
        if index < 0:
            raise ValueError(f"play speed {fps} is not one of {', '.join(map(str, SPEEDS))}")
        self.speed_box.setCurrentIndex(index)

    @property
    def playing(self) -> bool:
        return self._timer.isActive()

    def set_steps(self, steps: list[int]) -> None:
        """The saved steps, ascending. The timeline stays on its step if it is still there (else the
        nearest earlier one), or moves to the newest when following."""
        steps = sorted(steps)
        if steps == self._steps:
            return
        current = self.step() if self._steps else self._told
        self._steps = steps
        self.slider.blockSignals(True)
        self.slider.setRange(0, max(0, len(steps) - 1))
        self.slider.blockSignals(False)
        if not steps:
            self.label.setText("no steps")
            return
        self._quiet = True
        try:
            if self.following or current is None:
                self._go(len(steps) - 1)
            else:
                self._go(max(0, sum(1 for s in steps if s <= current) - 1))
        finally:
            self._quiet = False

    def set_step(self, step: int) -> None:
        """Move to a saved step (the nearest saved step at or before it)."""
        if self._steps:
            self._go(max(0, sum(1 for s in self._steps if s <= step) - 1))

    def show(self, step: int | None) -> None:
        """Go where another timeline sharing this step went (None: follow the newest); says nothing back."""
        self._told = step
        at_newest = bool(self._steps) and self.slider.value() == len(self._steps) - 1
        if self._steps and self.following == (step is None) and (at_newest if step is None else step == self.step()):
            return  # already there (its own move, come back through the session)
        self._quiet = True
        try:
            self.follow_box.setChecked(step is None)
            if step is None:
                self.step_by(len(self._steps))
            else:
                self.set_step(step)
        finally:
            self._quiet = False

    def play(self) -> None:
        self.play_button.setChecked(True)

    def pause(self) -> None:
        self.play_button.setChecked(False)

    def step_by(self, delta: int) -> None:
        if self._steps:
            self._go(min(max(self.slider.value() + delta, 0), len(self._steps) - 1))

    # ---- internals -------------------------------------------------------------------------

    def _go(self, index: int) -> None:
        if index != self.slider.value():
            self.slider.setValue(index)  # emits through _on_slider_moved
        else:
            self._on_slider_moved(index, user=False)

    def _on_slider_moved(self, index: int, user: bool = True) -> None:
        if not self._steps:
            return
        step = self._steps[index]
        self.label.setText(f"step {step} ({index + 1}/{len(self._steps)})")
        last = index == len(self._steps) - 1
        if user and not self._quiet and self.following != last and not self.playing:
            self.follow_box.setChecked(last)  # moving back in time stops following; to the end resumes it
        self.sig_step_changed.emit(step)
        if not self._quiet:
            self._told = None if self.following else step
            self.sig_step_chosen.emit(self._told)

    def _on_follow_toggled(self, on: bool) -> None:
        if not self._quiet and self._steps:
            self.sig_step_chosen.emit(None if on else self.step())

    def _on_play_toggled(self, on: bool) -> None:
        if on and self._steps:
            if self.slider.value() == len(self._steps) - 1:
                self._go(0)  # play from the start when at the end
            self.follow_box.setChecked(False)
            self._timer.start()
        else:
            self._timer.stop()
            self.play_button.setChecked(False)
        self._show_play_icon()

    def _advance(self) -> None:
        if self.slider.value() >= len(self._steps) - 1:
            if self.loop_box.isChecked():
                self._go(0)
            else:
                self.pause()  # and stays where the user left following: at the end, not at new steps
            return
        self.step_by(1)

    def _show_play_icon(self) -> None:
        icon = QStyle.StandardPixmap.SP_MediaPause if self.playing else QStyle.StandardPixmap.SP_MediaPlay
        self.play_button.setIcon(self.style().standardIcon(icon))

    def keyPressEvent(self, event) -> None:
        if not self._key(event.key()):
            super().keyPressEvent(event)

    def eventFilter(self, watched, event) -> bool:
        if watched is self.slider and event.type() == event.Type.KeyPress and self._key(event.key()):
            return True
        return False

    def _key(self, key) -> bool:
        k = Qt.Key
        if key == k.Key_Space:
            self.pause() if self.playing else self.play()
        elif key in (k.Key_Left, k.Key_Right):
            self.step_by(-1 if key == k.Key_Left else 1)
        elif key in (k.Key_Home, k.Key_End):
            self.step_by(-len(self._steps) if key == k.Key_Home else len(self._steps))
        else:
            return False
        return True
