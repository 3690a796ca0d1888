"""Fitting the main window to the screen it opens on, down to a 1280×720 laptop.

Three pieces, each for one way a small screen was failing (issue 16, item 1):
- `window_size`: the size the window opens at, never more than the screen's available area (less the
  window manager's frame), so the status bar and the right-hand panes are on screen from the start;
- `layout_columns`: how many columns the default layout has (three need ~1500 px; a laptop gets two: a
  control column with Training beside one tabbed view area, main_window.py `_place_docks`);
- `scrolling`: a pane inside a scroll area, so a dock narrower or lower than the pane's minimum scrolls
  instead of forcing the whole window wider than the screen (Qt sums the docks' minimum widths).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QRect, QSize, Qt
from PySide6.QtWidgets import QFrame, QScrollArea, QStyle, QWidget

from .widgets import wheel_guard

WIDE_SCREEN = 1500          # available width from which three columns are the default
PLOT_MIN = 150              # px: the least height a plot is given in a pane, its axes included
FRAME_ALLOWANCE = (16, 40)  # a window manager's borders and title bar, outside the size Qt is given
PANE_MIN = QSize(220, 160)  # the least a dock asks; below the pane's own minimum it scrolls


def window_size(default: tuple[int, int], available: QRect, frame: tuple[int, int] = FRAME_ALLOWANCE) -> QSize:
    """The default size, cut to what the screen can show with its frame (an empty `available`: as is).
    A restored geometry passes `frame` (0, 0): Qt saved it with its frame and restores it so."""
    w, h = default
    if available.isEmpty():
        return QSize(w, h)
    return QSize(min(w, available.width() - frame[0]), min(h, available.height() - frame[1]))


def layout_columns(available: QRect) -> int:
    return 3 if available.isEmpty() or available.width() >= WIDE_SCREEN else 2


class PaneArea(QScrollArea):
    """A scroll area that gives its pane the viewport's size, never less than the pane's minimum size, and
    scrolls only below that minimum.

    Not QScrollArea's widgetResizable: for a pane holding a word-wrapped label (height for width) it sizes
    the pane to its layout's preferred height at the viewport's width, not its minimum. The heatmaps pane
    stood 1198 px tall in a 567 px dock at 1264×650, its large view stretched and the four small panels
    of "one head, large" scrolled off the bottom.
    """

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWidgetResizable(False)

    def setWidget(self, widget: QWidget) -> None:
        super().setWidget(widget)
        widget.installEventFilter(self)
        self._fit()

    def fills(self) -> bool:
        """True: the pane is sized by this area (the role widgetResizable has for a plain QScrollArea)."""
        return self.widget() is not None

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit()

    def eventFilter(self, watched, event) -> bool:
        if watched is self.widget() and event.type() == QEvent.Type.LayoutRequest:
            self._fit()
        return super().eventFilter(watched, event)

    @staticmethod
    def _least(pane: QWidget) -> QSize:
        # minimumSizeHint, not a height for width: Qt's minimum height for width of a box layout is its
        # items' preferred height for width (the same 1198 px)
        return pane.minimumSizeHint().expandedTo(pane.minimumSize())

    def _fit(self) -> None:
        pane = self.widget()
        if pane is None:
            return
        bar = self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        room = QSize(self.width() - 2 * self.frameWidth(), self.height() - 2 * self.frameWidth())
        least = self._least(pane)
        if least.height() > room.height():  # a vertical bar takes width
            room.setWidth(room.width() - bar)
        if least.width() > room.width():
            room.setHeight(room.height() - bar)
            if least.height() > room.height() and least.height() <= room.height() + bar:
                room.setWidth(room.width() - bar)
        size = room.expandedTo(least)
        if pane.size() != size:
            pane.resize(size)


def scrolling(pane: QWidget) -> QScrollArea:
    """`pane` in a frameless scroll area that resizes it (so it fills the dock when there is room) and
    scrolls only when the dock is smaller than the pane's minimum size (PaneArea). The wheel over its fields
    scrolls it (wheel_guard) until a field is clicked."""
    area = PaneArea()
    area.setObjectName(f"{pane.objectName()}_scroll")
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
    area.setWidget(pane)
    area.setMinimumSize(PANE_MIN)
    wheel_guard.guard_children(pane)
    return area
