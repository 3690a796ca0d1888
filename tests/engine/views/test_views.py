"""View models without Qt: evented fields, what a view needs from the workspace and its fields alone, what it
holds of what it was answered, and that it forgets it all."""

from dataclasses import dataclass
from types import SimpleNamespace

from engine.analysis import questions as q
from engine.views.head_timeline import HeadTimelineView
from engine.views.runs import RunsView
from engine.views.state import State
from engine.workspace import OpenRun, Workspace


@dataclass(eq=False)
class Choices(State):
    tab: str = "a"
    beta: int = 4


def heard(state) -> list:
    names = []
    state.changed.connect(names.append)
    return names


def test_a_field_says_when_it_changes_and_only_then():
    state = Choices()
    names = heard(state)
    state.tab = "a"
    state.tab = "b"
    state.update(tab="c", beta=5)
    state.update(tab="c")
    assert names == ["tab", "tab", "beta"]


def test_update_says_nothing_until_every_field_is_set():
    state = Choices()
    seen = []
    state.changed.connect(lambda name: seen.append((name, state.tab, state.beta)))
    state.update(tab="x", beta=9)
    assert seen == [("tab", "x", 9), ("beta", "x", 9)]


def test_the_runs_listing_is_needed_once_per_look():
    view = RunsView()
    view.list_again(("runs",))
    need = view.needs(Workspace())
    assert need == [q.RunListing(("runs",), 1)] and view.listing_due
    view.take(need[0], "listing")
    assert view.needs(Workspace()) == [] and view.listing == "listing" and not view.listing_due
    view.list_again()
    assert view.needs(Workspace()) == [q.RunListing(("runs",), 2)]
    view.take(q.RunListing(("runs",), 1), "older")  # a listing asked before the newer look: not shown over it
    view.take(q.RunListing(("runs",), 2), "newest")
    view.take(q.RunListing(("runs",), 1), "older")
    assert view.listing == "newest"


def test_the_head_timeline_is_needed_of_the_open_run_until_it_is_whole():
    ws = Workspace()
    view = HeadTimelineView()
    assert view.needs(ws) == []  # no run open
    ws.replace_run(OpenRun(ws.draft.config, run=SimpleNamespace(path="runs/a")))
    need = view.needs(ws)
    assert need == [q.HeadTimeline("runs/a", look=0)]
    view.take(need[0], SimpleNamespace(steps=[0], scoring="step 2: part 1 of 3"))
    assert view.needs(ws) == need and view.scoring  # a slice: the same question again
    view.take(need[0], SimpleNamespace(steps=[0, 2], scoring=None))
    assert view.needs(ws) == [] and not view.scoring
    view.look_again()
    assert view.needs(ws) == [q.HeadTimeline("runs/a", look=1)]
    view.forget()
    assert view.timeline is None and view.looked == -1


def test_a_failed_question_is_remembered_until_the_view_forgets():
    view = HeadTimelineView()
    view.failed(q.HeadTimeline("runs/a"), "no saved weights yet")
    assert view.failures == {q.HeadTimeline("runs/a"): "no saved weights yet"}
    view.forget()
    assert view.failures == {}
