"""Costly children (plots, charts) built the first time they are painted, not when their pane is made.

A window holds ~30 heatmaps and ~20 pyqtgraph plots, most on a tab behind another or on a pane behind a tab, and
their pyqtgraph items were most of the time to open a window (the Weight pane's charts alone ~0.2 s of CPU, the
suite builds ~120 windows). Qt calls a dock on a tab behind another visible, keeps it off screen and never paints
it: so a plot is built on its room's first paint, not its first show, in a later turn of the event loop (never
inside a paint), one room a turn.

Three users: a `Room` holds what its owner builds when asked (the heatmap widget builds its plot into one), and
`OnSight` is a widget whose costly part (`build_costly`) goes into its room; its drawing methods, marked
`when_built`, called before that only keep their latest call, made once it is built, so what a pane was handed
before first sight (a run opened, a theme switched, a view model's answer) is what it shows. Reading an
attribute the costly part sets builds it at once, as asking a heatmap for its plot does. `PlotOnSight` is one
pyqtgraph plot widget so built, standing for it.
"""

from __future__ import annotations

import functools

import pyqtgraph as pg
import shiboken6
from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QGraphicsWidget, QSizePolicy, QVBoxLayout, QWidget

from .. import theme

GRAPHICS_VIEW = QSize(600, 480)  # what a pyqtgraph view asks for (its least is 68×68)
_waiting: list[Room] = []  # rooms whose contents are asked for, oldest first
NEXT_BUILD_MS = 1  # a timer, not a 0 ms call: Qt 6 posts singleShot(0) as an event, and a chain of them ran
                  # two to four builds before a due timer or paint (the Heatmaps pane's cold scrub held the GUI
                  # thread 123 ms of CPU between two 5 ms ticks, benchmarks/gui_block.py --pane heatmaps, load 11)


def waiting() -> bool:
    """Some room painted once still waits for its contents."""
    return bool(_waiting)


def _build_next() -> None:
    """Build one waiting room, and the next in a later turn of the event loop: the Masks tab first seen asks
    for eight heatmaps at once, and built together they held the event loop up to 195–248 ms, one a turn
    145–158 ms (nanogpt-sized run, 10 ms timer probe, a 2-core machine)."""
    try:
        while _waiting:
            room = _waiting.pop(0)
            if shiboken6.isValid(room):  # a room whose owner was closed meanwhile is gone
                room.build()
                break
    finally:
        if _waiting:
            QTimer.singleShot(NEXT_BUILD_MS, _build_next)


class Room(QWidget):
    """Holds a plot, and before it is built paints the plot's background: on its first paint it asks for the
    plot (`build`, which puts it here with `hold`), built in a later turn of the event loop. Given a `hint`, it
    asks for the room the plot will ask for (a graphics view's 600×480, expanding), built or not, so that a
    layout shares its room as it did when the plot was built with the pane."""

    def __init__(self, build, least=(80, 70), hint: QSize | None = None):
        super().__init__()
        self.build, self._asked, self._hint = build, False, hint
        self.setMinimumSize(*least)  # a splitter or a small panel never makes the plot a sliver
        if hint is not None:
            self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)

    def sizeHint(self) -> QSize:
        return self._hint if self._hint is not None else super().sizeHint()

    def hold(self, plot: QWidget) -> None:
        self.layout().addWidget(plot)

    def lay_out(self) -> None:
        """Give what was just built its place and size now, as a plot built with its pane had when it was first
        drawn into: linked axes of views laid out later moved a range set before (an empty chart's 0 … 1 read
        0.03 … 1)."""
        for child in self.findChildren(QWidget, options=Qt.FindChildOption.FindDirectChildrenOnly):
            if not child.testAttribute(Qt.WidgetAttribute.WA_WState_ExplicitShowHide):  # not hidden on purpose
                child.show()
        self.layout().activate()
        for view in self.findChildren(pg.GraphicsView):
            if view.centralWidget is not None and QGraphicsWidget.layout(view.centralWidget) is not None:
                QGraphicsWidget.layout(view.centralWidget).activate()

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        painter.fillRect(self.rect(), QColor(theme.plot_colors().background))
        painter.end()
        if not self._asked:
            self._asked = True
            _waiting.append(self)
            if len(_waiting) == 1:
                QTimer.singleShot(NEXT_BUILD_MS, _build_next)


def when_built(method):
    """A drawing method of an `OnSight` widget: before its costly part is built, only its latest call is kept
    (its arguments are the whole of what it draws), made once that part is built, in the order last called."""
    @functools.wraps(method)
    def draw(self, *args, **kwargs):
        if self.built:
            return method(self, *args, **kwargs)
        self._later.pop(method.__name__, None)
        self._later[method.__name__] = functools.partial(method, self, *args, **kwargs)
        return None
    return draw


class OnSight(QWidget):
    """A widget whose costly part `build_costly()` makes (into `self.room`, which its layout holds) on the room's
    first paint, or at once when an attribute that part sets is read; then it says so (sig_built)."""

    sig_built = Signal()
    built = False

    def __init__(self, parent: QWidget | None = None, least=(68, 68), hint: QSize = GRAPHICS_VIEW):
        super().__init__(parent)
        self._later: dict[str, functools.partial] = {}
        self.room = Room(self.ensure_built, least, hint)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.room)

    def build_costly(self) -> None:
        """Override: make the plots and put them in the room (`self.room.hold`)."""
        raise NotImplementedError

    def ensure_built(self) -> None:
        if self.built:
            return
        self.built = True
        self.build_costly()
        if self.isVisible():
            self.room.lay_out()
        later, self._later = self._later, {}
        for call in later.values():
            call()
        self.sig_built.emit()

    def __getattr__(self, name: str):
        # called only for an attribute not found: one the costly part sets, read before it was built
        if name.startswith("__") or "_later" not in self.__dict__ or self.built:
            raise AttributeError(name)
        self.ensure_built()
        return object.__getattribute__(self, name)


class PlotOnSight(OnSight):
    """A pyqtgraph plot widget, `make()`, built on first sight and then handed to `setup(plot)`, which gives it its
    items and draws what its owner holds by then; before that its owner draws nothing into it (`built`). Read, any
    attribute of the plot widget builds it (a test asking for its plot item)."""

    def __init__(self, make, setup, parent: QWidget | None = None, hint: QSize = GRAPHICS_VIEW):
        super().__init__(parent, hint=hint)
        self._make, self._setup = make, setup

    def build_costly(self) -> None:
        self.plot_widget = self._make()
        self.room.hold(self.plot_widget)
        self._setup(self.plot_widget)

    def __getattr__(self, name: str):
        if name.startswith("__") or "_setup" not in self.__dict__:
            raise AttributeError(name)
        self.ensure_built()
        return getattr(self.__dict__["plot_widget"], name)
