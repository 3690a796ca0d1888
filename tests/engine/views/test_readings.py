"""The Weight pane's readings (engine/views/readings.py) without Qt: what they need of the selection and of
training's published weights, what they hold of their answers (the split replacing the whole), and that they
forget it all."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from engine.analysis import questions as q
from engine.analysis.live import Published
from engine.views.readings import CurvatureView, TokensView, source_on_screen
from engine.workspace import OpenRun, Workspace


class FakeRun(SimpleNamespace):
    def saved_steps(self):
        return self.steps


@pytest.fixture
def ws():
    w = Workspace()
    w.replace_run(OpenRun(w.draft.config, run=FakeRun(path="runs/a", steps=[0, 10, 20])))
    w.select(weight="blocks.0.W_Q")
    return w


def test_the_step_on_screen_is_the_selection_or_the_newest_or_what_training_published(ws):
    assert source_on_screen(ws) == q.Saved("runs/a", 20)
    ws.select(step=10)
    assert source_on_screen(ws) == q.Saved("runs/a", 10)
    ws.open_run.publish(25, {"W_E": None})
    assert source_on_screen(ws) == q.Saved("runs/a", 10)  # the timeline holds step 10
    ws.select(step=None)
    live = source_on_screen(ws)
    assert isinstance(live, q.Live) and live.step == 25 and live.run == "runs/a"
    assert live.weights == Published(ws.live.weights)
    assert source_on_screen(Workspace()) is None


def test_tokens_need_the_whole_then_the_split_then_the_timeline_and_the_split_replaces_the_whole(ws):
    view = TokensView()
    whole = q.Tokens(q.Saved("runs/a", 20), "blocks.0.W_Q", False)
    split = q.Tokens(q.Saved("runs/a", 20), "blocks.0.W_Q", True)
    over = q.TokenTimeline("runs/a", "blocks.0.W_Q", True, 0)
    assert view.needs(ws) == [whole, split, over]
    assert whole.lane == q.NOW and split.lane == q.LONG and over.lane == q.LONG
    view.take(whole, "whole")
    assert view.reading == "whole" and view.needs(ws) == [split, over]
    view.take(split, "split")
    view.take(whole, "whole again")  # a whole answer arriving late never replaces the split
    assert view.reading == "split" and view.needs(ws) == [over]
    view.take(over, ["t"])
    assert view.needs(ws) == [] and view.timeline == ["t"]
    ws.select(weight="W_E")  # another weight: all asked again
    assert [type(x) for x in view.needs(ws)] == [q.Tokens, q.Tokens, q.TokenTimeline]
    view.look_again()
    assert q.TokenTimeline("runs/a", "W_E", True, 1) in view.needs(ws)
    view.forget()
    assert view.reading is view.timeline is view.asked_for is None


def test_curvature_needs_the_step_and_the_series(ws):
    view = CurvatureView()
    at = q.CurvatureAt(q.Saved("runs/a", 20), "blocks.0.W_Q")
    series = q.CurvatureSeries("runs/a", "blocks.0.W_Q", 0)
    assert view.needs(ws) == [at, series] and series.lane == q.LONG
    view.take(at, "c")
    view.take(series, ["s"])
    assert view.needs(ws) == [] and (view.result, view.series) == ("c", ["s"])
    ws.open_run.publish(25, {"W_E": None})
    assert [type(x.source) for x in view.needs(ws) if isinstance(x, q.CurvatureAt)] == [q.Live]
    ws.select(step=0)  # the first saved step: no update reaches it, nothing to ask of it
    assert view.on_screen(ws) is None and view.first_step(ws) and view.needs(ws) == []
    view.forget()
    assert view.result is view.series is None
