"""Published weights cross to the analysis process once: the sender's Mirror and the process's `receive`
apply the same rule in the same order, so every request finds its weights, and a copy the process holds
crosses as a key alone (engine/analysis/live.py)."""

import pickle
import random

import torch

from engine.analysis import live
from engine.analysis.live import Mirror, Published


def copy(seed: int, dtype=torch.float32) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"W_E": torch.randn(5, 3, generator=g).to(dtype), "b": torch.randn(3, generator=g).to(dtype)}


def cross(mirror: Mirror, weights: dict):
    """What the process's request sees after the wire is pickled, sent and unpickled."""
    return pickle.loads(pickle.dumps(mirror.wire(Published(weights))))


def test_a_copy_crosses_with_its_arrays_once_then_as_its_key(monkeypatch):
    monkeypatch.setattr(live, "_held", type(live._held)())
    mirror, w = Mirror(), copy(0)
    first = mirror.wire(Published(w))
    assert first.arrays is not None and mirror.wire(Published(w)).arrays is None
    received = pickle.loads(pickle.dumps(first))
    assert all(torch.equal(received[k], w[k]) for k in w)
    assert cross(mirror, w) is received  # the held copy, not a new one


def test_every_request_finds_its_weights_in_any_order_of_copies(monkeypatch):
    monkeypatch.setattr(live, "_held", type(live._held)())
    mirror, copies, rng = Mirror(), [copy(i) for i in range(5)], random.Random(0)
    sent = 0
    for _ in range(200):  # panes asking about the newest copies, and older ones still on screen
        w = copies[rng.randrange(len(copies))]
        wire = mirror.wire(Published(w))
        sent += wire.arrays is not None
        received = pickle.loads(pickle.dumps(wire))
        assert received is not None and all(torch.equal(received[k], w[k]) for k in w)
    assert sent < 200  # and copies asked about again were not all sent again


def test_a_process_that_does_not_hold_the_copy_says_so_and_the_door_says_it_in_one_line(monkeypatch):
    import pytest

    from engine.analysis import door, questions
    from engine.errors import UserError

    mirror = Mirror()
    w = copy(1)
    mirror.wire(Published(w))  # sent to a process that then restarted:
    monkeypatch.setattr(live, "_held", type(live._held)())
    assert cross(mirror, w) is None
    with pytest.raises(UserError, match="no longer"):
        door.answer(questions.Positional(questions.Live(None, None, 3), shift=1))


def test_bfloat16_weights_cross_as_float32(monkeypatch):
    monkeypatch.setattr(live, "_held", type(live._held)())
    w = copy(2, torch.bfloat16)
    received = cross(Mirror(), w)
    assert received["W_E"].dtype == torch.float32 and torch.equal(received["W_E"], w["W_E"].float())


def test_copies_never_share_a_serial_and_one_sent_again_after_eviction_gets_a_new_one(monkeypatch):
    monkeypatch.setattr(live, "_held", type(live._held)())
    mirror, copies = Mirror(), [copy(i) for i in range(4)]
    serials = [cross(mirror, w).serial for w in copies]
    assert len(set(serials)) == 4
    again = mirror.wire(Published(copies[0]))  # evicted since: its arrays cross again, under a new serial
    assert again.arrays is not None and again.serial not in serials


def test_a_question_whose_source_is_published_weights_crosses_with_the_copy_once(monkeypatch):
    from engine.analysis import questions as q

    monkeypatch.setattr(live, "_held", type(live._held)())
    mirror, w = Mirror(), copy(3)
    question = q.Attention(q.Live(None, Published(w), 7, run="runs/x"), "To be")
    first, second = mirror.outgoing(question), mirror.outgoing(question)
    assert first.source.weights.arrays is not None and second.source.weights.arrays is None
    received = pickle.loads(pickle.dumps(first))
    assert received.source.step == 7 and torch.equal(received.source.weights["W_E"], w["W_E"])
