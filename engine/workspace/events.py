"""`Event`: a list of callbacks called in order, synchronously, with what happened. The model's events need
no more than this (no threads, no queues): Qt views that must hear them on the GUI thread are called there,
because the model is changed only on the GUI thread (gui/session.py is the one place that changes it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Event:
    def __init__(self) -> None:
        self._callbacks: list[Callable[..., Any]] = []

    def connect(self, callback: Callable[..., Any]) -> Callable[..., Any]:
        self._callbacks.append(callback)
        return callback

    def disconnect(self, callback: Callable[..., Any]) -> None:
        self._callbacks.remove(callback)

    def emit(self, *args: Any) -> None:
        for callback in list(self._callbacks):  # a callback may connect or disconnect others
            callback(*args)
