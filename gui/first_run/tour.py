"""The guided tour: a spotlight on one pane at a time (the rest of the window dimmed), a bubble beside it with
the pane's one sentence (gui/first_run/tour_steps.py), Previous and Next, and Escape to end.

`Tour` is a widget laid over the whole main window, above its docks; it takes the keyboard while it runs
(→ or Enter: next; ←: previous; Escape: end) and every click outside its bubble, so nothing behind it changes
under the reader. A stop's pane is shown and brought forward first (a dock tabbed behind another, a tab of a
pane), and the spotlight follows the window when it is resized."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QRect, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPalette, QPen
from PySide6.QtWidgets import (QDockWidget, QFrame, QHBoxLayout, QLabel, QPushButton, QStackedWidget, QTabWidget,
                               QVBoxLayout, QWidget)

from ..theme import plot_colors
from .tour_steps import STEPS, TourStep

DIM = QColor(0, 0, 0, 150)
MARGIN = 6          # px of room around the spotlit widget
BUBBLE_WIDTH = 340


def bring_forward(widget: QWidget) -> None:
    """Make `widget` the one seen among its siblings: each tab it lies on chosen, each dock it is in raised."""
    if isinstance(widget, QDockWidget):
        widget.show()
        widget.raise_()
    child, parent = widget, widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QStackedWidget):
            parent.setCurrentWidget(child)
            tabs = parent.parentWidget()
            if isinstance(tabs, QTabWidget):
                tabs.setCurrentIndex(parent.indexOf(child))
        if isinstance(parent, QDockWidget):
            parent.show()
            parent.raise_()
        child, parent = parent, parent.parentWidget()


class Bubble(QFrame):
    def __init__(self, parent: QWidget):
        super().__init__(parent)
        self.setObjectName("tour_bubble")
        self.setAutoFillBackground(True)
        self.setBackgroundRole(QPalette.ColorRole.Base)  # a field's colour, set off from the dimmed window
        self.setForegroundRole(QPalette.ColorRole.Text)
        self.title = QLabel(self)
        self.title.setObjectName("tour_title")
        font = self.title.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.15)
        self.title.setFont(font)
        self.text = QLabel(self)
        self.text.setObjectName("tour_text")
        self.text.setWordWrap(True)
        self.count = QLabel(self)
        self.previous = QPushButton("Previous", self)
        self.previous.setObjectName("tour_previous")
        self.next = QPushButton("Next", self)
        self.next.setObjectName("tour_next")
        self.end = QPushButton("End tour", self)
        self.end.setObjectName("tour_end")
        for b in (self.previous, self.next, self.end):
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # the keys belong to the tour, not to a button
        row = QHBoxLayout()
        row.addWidget(self.count)
        row.addStretch(1)
        row.addWidget(self.end)
        row.addWidget(self.previous)
        row.addWidget(self.next)
        col = QVBoxLayout(self)
        col.addWidget(self.title)
        col.addWidget(self.text)
        col.addLayout(row)
        self.setFixedWidth(BUBBLE_WIDTH)


class Tour(QWidget):
    sig_step_changed = Signal(int)
    sig_ended = Signal()

    def __init__(self, window, steps: tuple[TourStep, ...] = STEPS):
        super().__init__(window)
        self.setObjectName("tour")
        self.window_, self.steps = window, steps
        self.index = -1
        self.spot = QRect()
        self.bubble = Bubble(self)
        self.bubble.previous.clicked.connect(self.previous)
        self.bubble.next.clicked.connect(self.next)
        self.bubble.end.clicked.connect(self.end)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.hide()

    @property
    def running(self) -> bool:
        return self.index >= 0

    @property
    def step(self) -> TourStep | None:
        return self.steps[self.index] if self.running else None

    def start(self) -> None:
        self.window_.installEventFilter(self)
        self.setGeometry(self.window_.rect())
        self.show()
        self.raise_()
        self.setFocus()
        self._go(0)

    def next(self) -> None:
        if self.index + 1 >= len(self.steps):
            self.end()
        else:
            self._go(self.index + 1)

    def previous(self) -> None:
        if self.index > 0:
            self._go(self.index - 1)

    def end(self) -> None:
        if not self.running:
            return
        self.index = -1
        self.window_.removeEventFilter(self)
        self.hide()
        self.sig_ended.emit()

    def target(self) -> QWidget | None:
        """The widget the current stop spotlights (None: the whole window)."""
        step = self.step
        if step is None or not step.pane:
            return None
        dock = self.window_.docks.get(step.pane)
        if dock is None:
            return None
        if step.part:
            part = self.window_.panes[step.pane].findChild(QWidget, step.part)
            return part if part is not None else dock
        return dock

    def _go(self, index: int) -> None:
        self.index = index
        target = self.target()
        if target is not None:
            bring_forward(target)
        step = self.steps[index]
        b = self.bubble
        b.title.setText(step.title)
        b.text.setText(step.text)
        b.count.setText(f"{index + 1} of {len(self.steps)}")
        b.previous.setEnabled(index > 0)
        b.next.setText("Done" if index + 1 == len(self.steps) else "Next")
        self._place()
        QTimer.singleShot(0, self._place)  # once a dock brought forward has its geometry
        self.sig_step_changed.emit(index)

    def _place(self) -> None:
        if not self.running:
            return
        self.setGeometry(self.window_.rect())
        self.raise_()
        target = self.target()
        if target is None or not target.isVisible():
            self.spot = QRect()
        else:
            top_left = target.mapTo(self.window_, target.rect().topLeft())
            self.spot = QRect(top_left, target.size()).adjusted(-MARGIN, -MARGIN, MARGIN, MARGIN) \
                .intersected(self.rect())
        b = self.bubble
        b.adjustSize()
        self._put_bubble(b.size())
        self.update()

    def _put_bubble(self, size) -> None:
        """Beside the spotlight where there is room (right, left, below, above), else over its middle; always
        inside the window."""
        room, spot, gap = self.rect(), self.spot, 12
        if spot.isEmpty():
            x, y = room.center().x() - size.width() // 2, room.center().y() - size.height() // 2
        elif room.right() - spot.right() >= size.width() + gap:
            x, y = spot.right() + gap, spot.top() + 40
        elif spot.left() - room.left() >= size.width() + gap:
            x, y = spot.left() - gap - size.width(), spot.top() + 40
        elif room.bottom() - spot.bottom() >= size.height() + gap:
            x, y = spot.left() + 40, spot.bottom() + gap
        elif spot.top() - room.top() >= size.height() + gap:
            x, y = spot.left() + 40, spot.top() - gap - size.height()
        else:
            x, y = spot.center().x() - size.width() // 2, spot.center().y() - size.height() // 2
        x = max(room.left() + gap, min(x, room.right() - size.width() - gap))
        y = max(room.top() + gap, min(y, room.bottom() - size.height() - gap))
        self.bubble.move(x, y)

    def paintEvent(self, event) -> None:  # Qt's name
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        shade = QPainterPath()
        shade.addRect(QRectF(self.rect()))
        if not self.spot.isEmpty():
            hole = QPainterPath()
            hole.addRoundedRect(QRectF(self.spot), 8, 8)
            shade = shade.subtracted(hole)
        painter.fillPath(shade, DIM)
        painter.setPen(QPen(QColor(plot_colors().accent), 3))
        if not self.spot.isEmpty():
            painter.drawRoundedRect(QRectF(self.spot), 8, 8)
        painter.drawRect(QRectF(self.bubble.geometry()).adjusted(-1.5, -1.5, 1.5, 1.5))

    def keyPressEvent(self, event) -> None:  # Qt's name
        key = event.key()
        if key == Qt.Key.Key_Escape:
            self.end()
        elif key in (Qt.Key.Key_Right, Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space):
            self.next()
        elif key == Qt.Key.Key_Left:
            self.previous()
        else:
            super().keyPressEvent(event)

    def mousePressEvent(self, event) -> None:  # Qt's name: a click beside the bubble changes nothing behind
        event.accept()

    def eventFilter(self, watched, event) -> bool:  # Qt's name
        if watched is self.window_ and event.type() == QEvent.Type.Resize:
            QTimer.singleShot(0, self._place)
        return False
