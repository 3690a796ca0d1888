"""The wheel over an unfocused field scrolls its form (issue 16, item 4), and a message banner covers no
control (issue 26, item 4): it has its own row above the status bar."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication, QScrollArea, QSpinBox

from ..conftest import QT_NOISE

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]


def wheel(widget, notches: int = -3) -> None:
    """A wheel turned down by `notches` over the middle of `widget`, delivered as a real one is."""
    pos = QPointF(widget.rect().center())
    event = QWheelEvent(pos, QPointF(widget.mapToGlobal(pos.toPoint())), QPoint(0, 0), QPoint(0, 120 * notches),
                        Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase,
                        False)
    QApplication.sendEvent(widget, event)


def builder_form(window):
    arch = window.panes["pane_architecture"]
    form = arch.forms["model"]
    area = next(p for p in iter(lambda w=[form]: w.append(w[-1].parentWidget()) or w[-1], None)
                if isinstance(p, QScrollArea))
    return form, area


def test_the_wheel_over_an_unfocused_spin_box_scrolls_the_form_and_leaves_the_value(qtbot, make_window):
    """And every docked pane's spin boxes are so guarded (one window for both)."""
    w = make_window()
    for pane in w.panes.values():
        for spin in pane.findChildren(QSpinBox):
            assert spin.focusPolicy() != Qt.FocusPolicy.WheelFocus, spin.objectName()
    w.resize(w.width(), 420)  # short enough that the model form scrolls
    qtbot.wait(50)
    form, area = builder_form(w)
    spin = form.editors["n_ctx"]
    assert isinstance(spin, QSpinBox) and spin.focusPolicy() == Qt.FocusPolicy.StrongFocus
    bar = area.verticalScrollBar()
    assert bar.maximum() > 0
    before, config = spin.value(), w.session.config
    wheel(spin)
    assert spin.value() == before and w.session.config == config
    assert bar.value() > 0  # the form scrolled instead

    spin.setFocus()
    qtbot.waitUntil(spin.hasFocus)
    wheel(spin, notches=1)
    assert spin.value() == before + 1  # once clicked into, the wheel is the field's


def window_rect(w, widget):
    """The part of `widget` on screen (a scroll area clips what it does not show), in window coordinates."""
    return widget.visibleRegion().boundingRect().translated(widget.mapTo(w, QPoint(0, 0)))


def test_a_banner_covers_no_control_and_moves_no_pane_top_and_information_fades_by_itself(qtbot, make_window):
    """(One window for both.)"""
    from PySide6.QtWidgets import QAbstractButton, QAbstractSpinBox, QComboBox, QLineEdit

    w = make_window()
    fade = w.banner._fade.interval()
    w.banner._fade.setInterval(50)
    w.session.post_message("Exported /tmp/attention.png", "info")
    assert w.banner.isVisible()
    qtbot.waitUntil(lambda: not w.banner.isVisible(), timeout=5000)
    w.banner._fade.setInterval(fade)

    qtbot.wait(50)
    tops = {name: dock.geometry().top() for name, dock in w.docks.items()}
    w.session.post_message("Cannot open the run: a message long enough to wrap onto a second line " * 3, "error")
    qtbot.waitUntil(w.banner.isVisible)
    qtbot.wait(50)
    banner = window_rect(w, w.banner)
    controls = [c for dock in w.docks.values() if dock.isVisible()
                for kind in (QAbstractButton, QAbstractSpinBox, QComboBox, QLineEdit)
                for c in dock.findChildren(kind) if c.isVisible() and not c.visibleRegion().isEmpty()]
    assert controls and not [c for c in controls if window_rect(w, c).intersects(banner)]
    first_row = [name for name, top in tops.items() if top == min(tops.values())]
    assert all(w.docks[name].geometry().top() == tops[name] for name in first_row)  # nothing pushed down
    train = w.panes["pane_training"].buttons["train"]
    with qtbot.waitSignal(w.session.sig_training_requested, timeout=5000):
        qtbot.mouseClick(train, Qt.MouseButton.LeftButton)  # the click reaches the button, not the banner
    assert w.banner.isVisible()  # an error stays until dismissed
    qtbot.mouseClick(w.banner._close, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not w.banner.isVisible())
