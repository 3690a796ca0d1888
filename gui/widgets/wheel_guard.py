"""The mouse wheel scrolls a form, not the field under the pointer (issue 16, item 4).

Qt gives spin boxes and combo boxes the wheel focus policy: a wheel turned to scroll a long form changed
whichever field passed under the pointer (context 64 → 66, and the preset became "custom"). As most desktop
apps do, such a field takes the wheel only once it has focus (clicked or tabbed to); until then the wheel
event goes to the scroll area that holds the field. A slider keeps the wheel: scrubbing the
timeline by it is meant. `guard_children` is called on every pane as the window docks it, and the filter
sees only the guarded fields' own events, so it costs nothing elsewhere.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QAbstractScrollArea, QAbstractSpinBox, QApplication, QComboBox, QWidget

GUARDED = (QAbstractSpinBox, QComboBox)


class WheelGuard(QObject):
    def eventFilter(self, field, event) -> bool:
        if event.type() != QEvent.Type.Wheel or field.hasFocus():
            return False
        area = _scroll_area(field)
        if area is None:
            event.ignore()  # filtered and ignored: QApplication::notify hands it on to the parent
            return True
        # handed to the scroll area itself: Qt does not pass on a wheel event it did not get from the
        # window system, and a field inside a field (a spin box's line edit) would stop it on the way
        viewport = area.viewport()
        pos = QPointF(viewport.mapFromGlobal(event.globalPosition().toPoint()))
        QApplication.sendEvent(viewport, QWheelEvent(
            pos, event.globalPosition(), event.pixelDelta(), event.angleDelta(), event.buttons(),
            event.modifiers(), event.phase(), event.inverted()))
        return True


def _scroll_area(field: QWidget) -> QAbstractScrollArea | None:
    parent = field.parentWidget()
    while parent is not None and not isinstance(parent, QAbstractScrollArea):
        parent = parent.parentWidget()
    return parent


_GUARD: WheelGuard | None = None


def guard(field: QWidget) -> None:
    """The wheel over `field` scrolls what holds it until the field has focus."""
    global _GUARD
    if _GUARD is None:
        _GUARD = WheelGuard()
    if field.focusPolicy() == Qt.FocusPolicy.WheelFocus:
        field.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # nor may a wheel give it focus
    field.removeEventFilter(_GUARD)  # once, however often it is guarded
    field.installEventFilter(_GUARD)


def guard_children(root: QWidget) -> None:
    for field in root.findChildren(QWidget):
        if isinstance(field, GUARDED):
            guard(field)
