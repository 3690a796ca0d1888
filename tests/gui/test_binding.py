"""One helper binds a widget to a view model's field, or to the workspace's selection, both ways: the widget
shows the field, a user's change sets the field, a change of the field from elsewhere shows without echoing."""

from dataclasses import dataclass

from PySide6.QtWidgets import QCheckBox, QComboBox, QLineEdit, QSpinBox, QTabWidget, QWidget

from engine.views.state import State
from engine.workspace import Workspace
from gui.binding import bind


@dataclass(eq=False)
class Choices(State):
    mode: str = "lines"
    band: int = 4
    log: bool = True
    prompt: str = "To be"
    tab: str = "attention"


def test_each_kind_of_widget_shows_its_field_and_sets_it(qtbot):
    state = Choices()
    combo, spin, box, line, tabs = QComboBox(), QSpinBox(), QCheckBox(), QLineEdit(), QTabWidget()
    combo.addItems(["lines", "stacked shares"])
    for name in ("attention", "masks"):
        tabs.addTab(QWidget(), name)
    for w in (combo, spin, box, line, tabs):
        qtbot.addWidget(w)
    bind(combo, state, "mode", values=["lines", "shares"])
    bind(spin, state, "band")
    bind(box, state, "log")
    bind(line, state, "prompt")
    bind(tabs, state, "tab", values=["attention", "masks"])
    assert (combo.currentIndex(), spin.value(), box.isChecked(), line.text()) == (0, 4, True, "To be")
    combo.setCurrentIndex(1)
    spin.setValue(7)
    box.setChecked(False)
    line.setText("Hear me")
    line.editingFinished.emit()
    tabs.setCurrentIndex(1)
    assert (state.mode, state.band, state.log, state.prompt, state.tab) == ("shares", 7, False, "Hear me", "masks")
    state.update(mode="lines", band=2, tab="attention")
    assert (combo.currentIndex(), spin.value(), tabs.currentIndex()) == (0, 2, 0)


def test_a_field_set_elsewhere_does_not_echo_back(qtbot):
    state = Choices()
    spin = QSpinBox()
    qtbot.addWidget(spin)
    bind(spin, state, "band")
    names = []
    state.changed.connect(names.append)
    state.band = 9
    assert spin.value() == 9 and names == ["band"]


def test_a_selection_field_is_the_workspaces(qtbot):
    ws = Workspace()
    a, b = QSpinBox(), QSpinBox()
    for w in (a, b):
        w.setMaximum(3)
        qtbot.addWidget(w)
    bind(a, ws, "head")
    bind(b, ws, "head")  # two panes' head boxes: one selection
    a.setValue(1)
    assert ws.selection.head == 1 and b.value() == 1
    ws.select(head=0)
    assert a.value() == 0 == b.value()


def test_a_deleted_widget_stops_listening(qtbot):
    state = Choices()
    spin = QSpinBox()
    bind(spin, state, "band")
    spin.deleteLater()
    qtbot.wait(10)
    state.band = 3  # no error: the binding lets go
    state.band = 5
