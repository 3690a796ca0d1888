"""Weights training just published, sent to the analysis process once rather than with every request.

A pane asking about the newest weights wraps them in `Published`; `Mirror` (on the sending side, one per
analysis process) turns each into a `Wire` at submission: the arrays themselves the first time, only their
key afterwards. Unpickling a Wire in the process runs `receive`, which keeps the newest `KEEP` copies and
hands the question the held tensors, so its answer sees a plain {name: tensor} dict either way.
Sender and receiver apply the same rule in the same order (the process has one worker and takes requests
first in, first out), so the mirror knows what the process holds without asking it.

Why: a request carrying torch tensors is pickled through shared memory, a segment per tensor, and a grid
of attention maps asked back to back spent most of its time there (measured: 137 ms for nanogpt-cpu's 53
tensors, 31 ms as numpy arrays, 0.4 ms as a key). A copy's key is a serial number the mirror gives it
when it is first sent, so two copies never share one (an `id` may be reused once a copy is freed); the
process hands requests a `Held` dict that carries it, for the caches of models built from it.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Mapping

KEEP = 2  # copies held: the heatmaps' and the forms' requests may name the two newest
GONE = ("the weights training published are no longer in the analysis process; "
        "they are sent again with the next refresh")

_held: OrderedDict = OrderedDict()  # in the analysis process: serial -> Held


class Published:
    """A copy of the weights training published ({name: CPU tensor}), as a pane submits it."""

    __slots__ = ("weights",)

    def __init__(self, weights: Mapping):
        self.weights = weights

    # the same copy is the same published weights: questions about it share a cache key
    def __eq__(self, other) -> bool:
        return isinstance(other, Published) and other.weights is self.weights

    def __hash__(self) -> int:
        return id(self.weights)


class Held(dict):
    """A copy held by the analysis process ({name: tensor}) and the serial number it was sent under."""

    serial: int


class Wire:
    """What crosses to the process: a copy's serial, with its arrays when the process does not hold it."""

    __slots__ = ("serial", "arrays")

    def __init__(self, serial: int, arrays: dict | None):
        self.serial, self.arrays = serial, arrays

    def __reduce__(self):
        return receive, (self.serial, self.arrays)


class Mirror:
    """The sender's record of the copies the analysis process holds: the same `KEEP`, the same order."""

    def __init__(self):
        self._held: OrderedDict = OrderedDict()  # id(copy) -> (the copy, kept alive so its id stays its own, serial)
        self._sent = 0

    def wire(self, published: Published) -> Wire:
        key = id(published.weights)
        if key in self._held:
            self._held.move_to_end(key)
            return Wire(self._held[key][1], None)
        self._sent += 1
        self._held[key] = (published.weights, self._sent)
        while len(self._held) > KEEP:
            self._held.popitem(last=False)
        return Wire(self._sent, {name: _as_numpy(t) for name, t in published.weights.items()})

    def outgoing(self, question):
        """`question` with its Published weights (in its `source`, engine/analysis/sources.py, or a field of
        its own) replaced by what crosses the process boundary."""
        source = getattr(question, "source", None)
        if isinstance(getattr(source, "weights", None), Published):
            return dataclasses.replace(question, source=dataclasses.replace(source, weights=self.wire(source.weights)))
        published = getattr(question, "weights", None)
        if not isinstance(published, Published):
            return question
        return dataclasses.replace(question, weights=self.wire(published))


def _as_numpy(tensor):
    t = tensor.detach().cpu()
    if not t.dtype.is_floating_point or t.dtype.itemsize >= 4:
        return t.numpy()
    return t.float().numpy()  # bfloat16 has no numpy dtype; the analysis runs in float32 anyway


def receive(serial: int, arrays: dict | None) -> Held | None:
    """In the analysis process, as a request is unpickled: the copy sent as `serial`, kept among the newest
    KEEP; None if it is not held (the process restarted since it was sent)."""
    import numpy as np
    import torch

    if arrays is not None:
        held = Held((name, torch.from_numpy(np.require(a, requirements="W"))) for name, a in arrays.items())
        held.serial = serial
        _held[serial] = held
        while len(_held) > KEEP:
            _held.popitem(last=False)
    elif serial in _held:
        _held.move_to_end(serial)
    return _held.get(serial)
