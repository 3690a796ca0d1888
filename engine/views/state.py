"""`State`: a small object whose fields say when they change (glue's state objects, napari's evented models),
the base of every view model in engine/views/.

Assigning a field a value different from the one it holds emits `changed(name)`; `update(**values)` assigns
several and then emits each name changed, so a listener never sees half of a change. Names starting with "_"
are private and silent. The events are engine/workspace's `Event`: synchronous, on the thread that changes the
state (the GUI thread in the app), and Qt-free, so tests drive a view model without Qt.
"""

from __future__ import annotations

from typing import Any

from ..workspace.events import Event

_MISSING = object()


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:  # arrays and other values without a plain truth: different unless the same object
        return False


class State:
    """Subclasses are usually dataclasses (`@dataclass(eq=False)`, so a state is itself, not equal to another
    with the same values): their fields are assigned before `changed` exists, silently."""

    _holding: list | None = None  # names changed inside update(), emitted at its end

    def __init__(self) -> None:
        self.__post_init__()

    def __post_init__(self) -> None:
        object.__setattr__(self, "changed", Event())   # (name of the field that changed)

    def __setattr__(self, name: str, value: Any) -> None:
        old = self.__dict__.get(name, _MISSING)
        object.__setattr__(self, name, value)
        if name.startswith("_") or "changed" not in self.__dict__ or _same(old, value):
            return
        if self._holding is not None:
            self._holding.append(name)
        else:
            self.changed.emit(name)

    def update(self, **values: Any) -> None:
        """Assign every field given, then say which changed (each once, in the order given)."""
        object.__setattr__(self, "_holding", [])
        try:
            for name, value in values.items():
                setattr(self, name, value)
        finally:
            changed = self._holding
            object.__setattr__(self, "_holding", None)
        for name in dict.fromkeys(changed):
            self.changed.emit(name)
