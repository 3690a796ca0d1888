"""The window on a small screen (issue 16, item 1): it opens within the screen's available area, a 1280×720
laptop gets the two-column layout, and no pane's minimum size can force the window wider than that."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect, QSize, Qt

from gui import screen_fit
from gui.main_window import DEFAULT_SIZE

from .conftest import QT_NOISE

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]

LAPTOP = QRect(0, 0, 1280, 720 - 32)  # 1280×720 less a panel


def test_the_window_opens_within_a_laptop_screen_and_at_its_default_on_a_large_one():
    fit = screen_fit.window_size(DEFAULT_SIZE, LAPTOP)
    assert fit.width() <= 1280 - screen_fit.FRAME_ALLOWANCE[0] and fit.height() <= 688 - 40
    assert screen_fit.window_size(DEFAULT_SIZE, QRect(0, 0, 2560, 1440)) == QSize(*DEFAULT_SIZE)
    assert screen_fit.layout_columns(LAPTOP) == 2 and screen_fit.layout_columns(QRect(0, 0, 1920, 1050)) == 3


def test_the_real_window_fits_its_screen_and_every_pane_scrolls_below_its_minimum(qtbot, make_window):
    w = make_window()  # the offscreen screen (800 px wide) is smaller still than a laptop's
    available = w.screen().availableGeometry()
    assert w.width() <= available.width() and w.height() <= available.height()
    assert w.minimumSizeHint().width() <= 1280 - 16 and w.minimumSizeHint().height() <= 640
    for name, dock in w.docks.items():
        area = dock.widget()
        assert area.widget() is w.panes[name] and area.fills()
        assert dock.minimumSizeHint().width() <= screen_fit.PANE_MIN.width() + 4


def test_on_a_small_screen_training_stands_under_the_builder_and_the_views_are_tabbed_beside(make_window):
    w = make_window()
    arch, train, heat = (w.docks[n] for n in ("pane_architecture", "pane_training", "pane_heatmaps"))
    assert abs(arch.x() - train.x()) <= 2 and train.y() > arch.y()  # one column, training below
    assert heat.x() > arch.x() + arch.width() - 2
    assert {w.docks["pane_forms"], w.docks["pane_weight"]} <= set(w.tabifiedDockWidgets(heat))
    assert w.panes["pane_heatmaps"].seen()
    assert w.panes["pane_training"].plot.height() >= 170  # the pane scrolls; its curves are not crushed


def test_a_saved_window_larger_than_the_screen_is_cut_to_it(qtbot, make_window):
    w = make_window()
    w.setMinimumSize(0, 0)
    w.resize(3000, 2000)  # as if saved on a large monitor
    w.close()
    again = make_window()
    available = again.screen().availableGeometry()
    assert again.width() <= available.width() and again.height() <= available.height()


def test_a_status_bar_and_its_step_stay_inside_the_window(make_window):
    w = make_window()
    w.step_label.setText("step 12,000 / 12,000")
    bar = w.statusBar()
    assert bar.geometry().bottom() <= w.height() and bar.width() == w.width()
    right = w.step_label.mapTo(w, w.step_label.rect().topRight()).x()
    assert right <= w.width()
    assert w.docks["pane_weight"].toggleViewAction().isChecked()
    assert w.dockWidgetArea(w.docks["pane_weight"]) != Qt.DockWidgetArea.NoDockWidgetArea
