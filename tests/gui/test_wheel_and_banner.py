"""The wheel over an unfocused field scrolls its form (issue 16, item 4), and a message banner shows over
the window without moving a pane (item 8)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication, QScrollArea, QSpinBox

from .conftest import QT_NOISE

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
    w = make_window()
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


def test_every_docked_pane_guards_its_spin_boxes(make_window):
    w = make_window()
    for pane in w.panes.values():
        for spin in pane.findChildren(QSpinBox):
            assert spin.focusPolicy() != Qt.FocusPolicy.WheelFocus, spin.objectName()


def test_a_banner_shows_over_the_panes_without_moving_them(qtbot, make_window):
    w = make_window()
    qtbot.wait(50)
    before = {name: dock.geometry() for name, dock in w.docks.items()}
    w.session.post_message("Exported /tmp/a-long-path/attention.png", "info")
    qtbot.wait(50)
    assert w.banner.isVisible()
    assert {name: dock.geometry() for name, dock in w.docks.items()} == before
    g = w.banner.geometry()
    assert g.top() >= w.menu_bar.geometry().bottom() and g.left() >= 0 and g.right() < w.width()
    assert g.height() >= w.banner.minimumSizeHint().height()
    w.banner.dismiss()
    qtbot.wait(20)
    assert not w.banner.isVisible()
    assert {name: dock.geometry() for name, dock in w.docks.items()} == before
    w.session.post_message("Cannot open the run", "error")
    w.resize(w.width() - 100, w.height())  # it follows the window's width
    qtbot.wait(20)
    assert w.banner.geometry().right() < w.width()
