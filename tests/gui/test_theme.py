"""The themes' colours where a user must see them: the frame of a tick box (issue 26, item 10: the run
browser's tick boxes were all but invisible on the dark theme), and the series palette, the figures' own."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication, QCheckBox, QStyle, QTreeWidget, QTreeWidgetItem

from engine.figures import palette
from gui import theme

from .conftest import QT_NOISE

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]


def luminance(c: QColor) -> float:
    def lin(v: float) -> float:
        return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4

    return 0.2126 * lin(c.redF()) + 0.7152 * lin(c.greenF()) + 0.0722 * lin(c.blueF())


def contrast(a: QColor, b: QColor) -> float:
    """WCAG's contrast ratio, 1 (none) to 21."""
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def frame_contrast(image, left: int, top: int, size: int, field: QColor) -> float:
    """The strongest contrast against the field of a pixel on the outline of the size×size square at
    (left, top), give or take a pixel."""
    best = 1.0
    for x in range(left - 1, left + size + 2):
        for y in range(top - 1, top + size + 2):
            inside = left + 2 <= x <= left + size - 3 and top + 2 <= y <= top + size - 3
            if not inside and image.valid(x, y):
                best = max(best, contrast(image.pixelColor(x, y), field))
    return best


@pytest.fixture
def themed(qapp):
    yield lambda name: (theme.apply_theme(qapp, name), QApplication.processEvents())
    theme.apply_theme(qapp, "dark")


@pytest.mark.parametrize("name", ["dark", "light"])
def test_an_unticked_box_shows_its_frame_on_its_field(qtbot, themed, name):
    themed(name)
    field = theme.palette(name).color(theme._R.Base)
    box = QCheckBox("loop")
    qtbot.addWidget(box)
    box.show()
    rect = box.style().subElementRect(QStyle.SubElement.SE_CheckBoxIndicator, _button_option(box), box)
    assert frame_contrast(box.grab().toImage(), rect.x(), rect.y(), rect.width(), field) >= 3.0

    tree = QTreeWidget()  # the run browser's ticks: an item view's check indicator
    qtbot.addWidget(tree)
    tree.setRootIsDecorated(False)
    item = QTreeWidgetItem(["run-20261124-080249"])
    item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
    item.setCheckState(0, Qt.CheckState.Unchecked)
    tree.addTopLevelItem(item)
    tree.resize(300, 100)
    tree.show()
    row = tree.visualItemRect(item)
    size = tree.style().pixelMetric(QStyle.PixelMetric.PM_IndicatorWidth)
    image = tree.viewport().grab().toImage()
    best = max(frame_contrast(image, x, row.y() + (row.height() - size) // 2, size, field) for x in range(0, 8))
    assert best >= 3.0


def _button_option(box):
    from PySide6.QtWidgets import QStyleOptionButton

    option = QStyleOptionButton()
    option.initFrom(box)
    return option


def test_the_screen_draws_runs_in_the_figures_palette():
    assert theme.SERIES is palette.SERIES and [theme.color_of(i) for i in range(12)] == \
        [palette.SERIES[i % 10] for i in range(12)]


def test_the_theme_already_on_is_not_sent_to_every_widget_again(qtbot, themed):
    """The app is made again for each window the tests open (gui/app.py make_application): the theme already
    on polishes no widget again (each one's style sheet was set again, a heatmap's bold title); another theme
    still does, with its palette."""
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QLabel

    class Counting(QLabel):
        restyled = 0

        def changeEvent(self, event):
            if event.type() in (QEvent.Type.StyleChange, QEvent.Type.PaletteChange):
                self.restyled += 1
            super().changeEvent(event)

    themed("dark")
    title = Counting("scores")
    title.setStyleSheet("font-weight: bold")
    qtbot.addWidget(title)
    title.ensurePolished()
    title.restyled = 0
    themed("dark")
    assert title.restyled == 0
    themed("light")
    assert title.restyled > 0 and title.palette().color(theme._R.WindowText) == theme.palette("light").color(
        theme._R.WindowText)
