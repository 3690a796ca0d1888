"""A widget that does its work only while the user can see it.

Qt calls a dock tabbed behind another "visible": it moves it off screen and sends no hide event, so a pane
that asked `isVisible()` went on computing what nobody saw (the weight pane's coefficients, in a helper
process, cost training 10% of its speed on 2 cores so). `SeenWidget.seen()` is visible *and* on a chosen
tab; the main window passes each dock's `visibilityChanged` to `set_tab_seen`, and a subclass hears both
kinds of change in one place, `seen_changed(seen)`.
"""

from __future__ import annotations

from PySide6.QtWidgets import QWidget


class SeenWidget(QWidget):
    _tab_seen = True

    def seen(self) -> bool:
        return self.isVisible() and self._tab_seen

    def set_tab_seen(self, seen: bool) -> None:
        """Its dock's tab was chosen (True) or another tab was (False); also a dock shown or closed."""
        before = self.seen()
        self._tab_seen = seen
        if self.seen() != before:
            self.seen_changed(self.seen())

    def seen_changed(self, seen: bool) -> None:
        """Override: start or stop what only a seen widget needs."""

    def showEvent(self, event) -> None:  # Qt's name
        super().showEvent(event)
        if self._tab_seen:
            self.seen_changed(True)

    def hideEvent(self, event) -> None:  # Qt's name
        super().hideEvent(event)
        if self._tab_seen:
            self.seen_changed(False)
