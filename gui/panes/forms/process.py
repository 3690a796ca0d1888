"""The Forms pane's door to the app's symbolic process (gui/symbolic_process.py, engine/forms/questions.py): each
view holds a `FormsJob`, which sends its questions and hands the parts and the answer back on the GUI thread as
signals. The GUI thread never waits for the process, and nothing of the forms engine runs in the app's
interpreter.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Qt, Signal

from ...symbolic_process import running, service


class _Relay(QObject):
    sig_event = Signal(int, str, object)  # number, "part" | "done" | "failed", payload (emitted off the GUI thread)


class FormsJob(QObject):
    """A view's questions to the symbolic process; several may be out at once (on different lanes). Parts and
    answers arrive as signals with the tag given to `ask`; `forget` drops whatever is still to come."""

    sig_part = Signal(object, object)    # tag, a part of the answer (a batch of rows)
    sig_done = Signal(object, object)    # tag, the answer
    sig_failed = Signal(object, str)     # tag, a one-line message

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._out: dict[int, Any] = {}   # number -> tag, of the questions not answered yet
        self._relay = _Relay(self)
        self._relay.sig_event.connect(self._on_event, Qt.ConnectionType.QueuedConnection)

    @property
    def busy(self) -> bool:
        return bool(self._out)

    def ask(self, question, tag: Any = None) -> int:
        relay = self._relay

        def relay_event(number: int, kind: str, payload: Any) -> None:
            try:
                relay.sig_event.emit(number, kind, payload)
            except RuntimeError:  # the view was deleted meanwhile
                pass

        number = service().ask(question, relay_event)
        self._out[number] = tag
        return number

    def cancel(self, number: int | None = None) -> None:
        """Ask the process to stop question `number` (every question out when None); each still ends with
        sig_done or sig_failed."""
        process = running()
        for n in [number] if number is not None else list(self._out):
            if n in self._out and process is not None:
                process.cancel(n)

    def forget(self) -> None:
        """Stop everything out and deliver nothing more of it."""
        self.cancel()
        self._out.clear()

    def _on_event(self, number: int, kind: str, payload: Any) -> None:
        if number not in self._out:
            return
        if kind == "part":
            self.sig_part.emit(self._out[number], payload)
            return
        if kind == "progress":  # no forms question reports progress yet: its rows (parts) say how far it is
            return
        tag = self._out.pop(number)
        if kind == "done":
            self.sig_done.emit(tag, payload)
        else:
            self.sig_failed.emit(tag, payload)
