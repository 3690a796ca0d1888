"""The one way a widget is bound to a view model's field (glue's `autoconnect_callbacks_to_qt`): both ways, once.

`bind(widget, state, name)` shows the field's value in the widget now, sets the field when the user changes the
widget, and sets the widget (its signals blocked, so nothing echoes back) when the field changes, from the code or
from another widget. `state` is a view model (engine/views/state.py) or the workspace, whose selection fields
(weight, layer, head, step) are bound the same way: they are the workspace's, and no pane keeps a copy.

The widgets bound: QComboBox (`values`: the field's value of each item in order, else the item's data, else its
text), QSpinBox, QDoubleSpinBox, QSlider (`scale`: field = value / scale), QCheckBox, QLineEdit (set on Enter or on
leaving it), QTabWidget (`values`: the field's value of each tab) and the timeline of saved steps
(gui/widgets/timeline.py: a step, None following the newest; bound to the workspace's `step`, it is the one
timeline the Heatmaps and Weight panes share).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PySide6.QtWidgets import (QAbstractButton, QAbstractSlider, QComboBox, QDoubleSpinBox, QLineEdit, QSpinBox,
                               QTabWidget)


class _Field:
    """get / set / hear one field of a view model or of the workspace's selection."""

    def __init__(self, state, name: str):
        self.state, self.name = state, name
        self.selection = hasattr(state, "select") and hasattr(state, "sig_selection_changed")

    def get(self) -> Any:
        return getattr(self.state.selection if self.selection else self.state, self.name)

    def set(self, value: Any) -> None:
        if self.selection:
            self.state.select(**{self.name: value})
        else:
            setattr(self.state, self.name, value)

    def hear(self, show) -> None:
        """Call show(value) when the field changes, until show says its widget is gone (returns False)."""
        if self.selection:
            event = self.state.sig_selection_changed

            def heard(selection, changed) -> None:
                if self.name in changed and show(getattr(selection, self.name)) is False:
                    event.disconnect(heard)
        else:
            event = self.state.changed

            def heard(name) -> None:
                if name == self.name and show(self.get()) is False:
                    event.disconnect(heard)
        event.connect(heard)


def listen(owner, event, callback) -> None:
    """Connect `callback` to a Qt-free event (engine/workspace/events.py) for as long as the QObject `owner`
    lives: a pane deleted before the model it listens to stops hearing it."""
    event.connect(callback)

    def let_go(*_args) -> None:
        try:
            event.disconnect(callback)
        except ValueError:  # already let go
            pass

    owner.destroyed.connect(let_go)


def bind(widget, state, name: str, values: Sequence | None = None, scale: float = 1.0, setter=None) -> None:
    """Bind `widget` to the field `name` of `state` (module docstring). `setter(value)`: what a user's change
    does instead of setting the field (an act that sets it, and says so: `Session.select_weight`)."""
    field = _Field(state, name)
    if setter is not None:
        field.set = setter
    read, write, signal = _accessors(widget, values, scale)

    def show(value: Any) -> bool:
        try:
            was = widget.blockSignals(True)
        except RuntimeError:  # the widget was deleted before the state it showed
            return False
        try:
            write(value)
        finally:
            widget.blockSignals(was)
        return True

    def on_widget(*args) -> None:
        value = read(*args)
        if value is not _NOTHING and value != field.get():
            field.set(value)

    show(field.get())
    signal.connect(on_widget)
    field.hear(show)


_NOTHING = object()  # a widget that shows no value (a combo box without items)


def _accessors(widget, values: Sequence | None, scale: float):
    """(read the widget's value from its change signal's arguments, show a value in it, that signal)."""
    if hasattr(widget, "sig_step_chosen"):  # the timeline: None is a value (follow the newest)
        return (lambda step: step), widget.show, widget.sig_step_chosen
    if isinstance(widget, QComboBox):
        def item_values() -> list:
            if values is not None:
                return list(values)
            return [widget.itemData(i) if widget.itemData(i) is not None else widget.itemText(i)
                    for i in range(widget.count())]

        def read_combo(*_):
            i = widget.currentIndex()
            return item_values()[i] if 0 <= i < widget.count() else _NOTHING

        def write_combo(value) -> None:
            items = item_values()
            widget.setCurrentIndex(items.index(value) if value in items else -1)

        return read_combo, write_combo, widget.currentIndexChanged
    if isinstance(widget, QTabWidget):
        tabs = list(values) if values is not None else list(range(widget.count()))
        return (lambda *_: tabs[widget.currentIndex()] if 0 <= widget.currentIndex() < len(tabs) else _NOTHING,
                lambda value: widget.setCurrentIndex(tabs.index(value)) if value in tabs else None,
                widget.currentChanged)
    if isinstance(widget, (QSpinBox, QDoubleSpinBox)):
        return lambda *_: widget.value(), lambda value: widget.setValue(value), widget.valueChanged
    if isinstance(widget, QAbstractSlider):
        return (lambda *_: widget.value() if scale == 1 else widget.value() / scale,
                lambda value: widget.setValue(round(value * scale)),
                widget.valueChanged)
    if isinstance(widget, QAbstractButton) and widget.isCheckable():
        return lambda *_: widget.isChecked(), lambda value: widget.setChecked(bool(value)), widget.toggled
    if isinstance(widget, QLineEdit):
        return lambda *_: widget.text(), lambda value: widget.setText(str(value)), widget.editingFinished
    raise TypeError(f"bind() does not know {type(widget).__name__}")
