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


def test_run_curves_are_read_once_per_look_and_only_the_runs_ticked_are_held():
    from engine.views.run_curves import RunCurvesView

    view, ws = RunCurvesView(), Workspace()
    assert view.needs(ws) == []  # nothing ticked
    view.tick(["runs/a", "runs/b"])
    need = view.needs(ws)
    assert need == [q.RunCurvesOf(("runs/a", "runs/b"), {}, 1)]
    curves_of_a = SimpleNamespace(name="a")  # a RunCurves; a string is why a run cannot be drawn
    view.take(need[0], {"runs/a": ("stamp a", curves_of_a), "runs/b": ("stamp b", "no log yet")})
    assert view.needs(ws) == [] and view.shown() == ["runs/a"] and view.problems == {"runs/b": "no log yet"}
    view.read_again()
    again = view.needs(ws)[0]
    assert again.look == 2 and again.known == {"runs/a": "stamp a", "runs/b": "stamp b"}
    view.read_again()  # the last reading has not come: no second question on top of it
    assert view.needs(ws) == [again]
    view.tick(["runs/b"])
    assert view.curves == {} and view.needs(ws)[0].known == {"runs/b": "stamp b"}
    view.take(again, {"runs/a": ("stamp a2", curves_of_a)})  # unticked while it was read
    assert view.curves == {}


def test_a_run_pair_is_compared_on_its_choices_with_a_forks_parent_as_a():
    from engine.analysis.pair import ATTENTION, PairChoices
    from engine.views.run_diff import RunDiffView

    view, ws = RunDiffView(), Workspace()
    view.tick(["runs/fork"])
    assert view.needs(ws) == []
    view.tick(["runs/fork", "runs/parent", "runs/other"])
    assert view.needs(ws) == [q.PairChoices("runs/fork", "runs/parent")]
    view.take(q.PairChoices("runs/fork", "runs/parent"), PairChoices([0, 10], ["blocks.0.W_Q"], parent_second=True))
    assert view.pair == ("runs/parent", "runs/fork") and view.step == 10 and view.what == ATTENTION
    assert view.needs(ws) == [q.PairAttention("runs/parent", "runs/fork", 10)]
    view.update(what="blocks.0.W_Q", step=0)
    wanted = q.PairWeight("runs/parent", "runs/fork", 0, "blocks.0.W_Q", "G")
    view.take(q.PairAttention("runs/parent", "runs/fork", 10), "an older choice's")  # not shown
    assert view.needs(ws) == [wanted] and view.diff is None
    view.take(wanted, "B − A")
    assert view.needs(ws) == [] and view.diff == "B − A"
    view.swap()
    assert view.needs(ws) == [q.PairWeight("runs/fork", "runs/parent", 0, "blocks.0.W_Q", "G")]
    view.tick(["runs/parent", "runs/fork"])  # the same pair ticked again: kept as it is
    assert view.diff == "B − A"
    view.failed(q.PairChoices("runs/a", "runs/b"), "different shapes")
    view.tick(["runs/a", "runs/b"])  # another pair: nothing of the first, and its failure is said
    assert view.diff is None and view.choices is None and view.failure() is None


def test_a_terms_values_are_asked_at_the_newest_saved_step_or_the_copy_handed():
    from engine.views.term_values import TermValuesView
    from engine.workspace.open_run import LiveWeights

    ws, view = Workspace(), TermValuesView()
    view.term = ("t1", "blocks.0.W_Q")
    assert view.needs(ws) == []  # no run open
    ws.replace_run(OpenRun(ws.draft.config, run=SimpleNamespace(path="runs/a", saved_steps=lambda: [0, 5])))
    assert view.needs(ws) == [q.TermValues(q.Saved("runs/a", 5), "t1", "blocks.0.W_Q")]
    view.take(view.needs(ws)[0], "values")
    assert view.needs(ws) == [] and view.step(ws) == 5
    view.live = LiveWeights(7, {})
    assert view.step(ws) == 7 and isinstance(view.needs(ws)[0].source, q.Live)
    view.forget()
    assert view.values is None and view.live is None


class DiskRun(SimpleNamespace):
    """A run folder's step listing, read the way engine.rundir.runs.Run reads it."""
    from engine.rundir.runs import Run
    snapshot_steps, checkpoint_steps, saved_steps = Run.snapshot_steps, Run.checkpoint_steps, Run.saved_steps


def test_views_drawing_the_open_run_list_its_folder_once_until_training_saves_a_step(tmp_path, monkeypatch):
    """Views ask the saved steps on every drawing, on the GUI thread: a listing there is file system work (issue
    37). The open run lists once; a report of a saved step (or training coming to rest) lists again."""
    import os
    from pathlib import Path

    from engine.rundir.layout import CHECKPOINTS, MODEL_FILE, SNAPSHOTS, STATE_FILE, step_name
    from engine.views.heatmaps import HeatmapsView
    from engine.views.readings import source_on_screen

    def save(step):
        (tmp_path / SNAPSHOTS).mkdir(exist_ok=True)
        (tmp_path / SNAPSHOTS / f"{step_name(step)}.safetensors").write_bytes(b"")

    def checkpoint(step):
        folder = tmp_path / CHECKPOINTS / step_name(step)
        folder.mkdir(parents=True)
        for name in (MODEL_FILE, STATE_FILE):
            (folder / name).write_bytes(b"")

    save(0)
    checkpoint(5)
    ws, view = Workspace(), HeatmapsView()
    ws.replace_run(OpenRun(ws.draft.config, run=DiskRun(path=tmp_path, _warnings={})))
    assert view.source(ws) == source_on_screen(ws) == q.Saved(str(tmp_path), 5)

    def no_disk(*args, **kwargs):
        raise AssertionError("the folder was listed again")
    with monkeypatch.context() as m:
        m.setattr(Path, "iterdir", no_disk)
        m.setattr(os, "scandir", no_disk)
        for _ in range(3):
            assert view.source(ws) == source_on_screen(ws) == q.Saved(str(tmp_path), 5)
            assert ws.open_run.saved_steps() == [0, 5]
    save(8)
    ws.open_run.steps_changed()  # gui/session.py on training's report of a saved step
    assert view.source(ws) == q.Saved(str(tmp_path), 8) and ws.open_run.saved_steps() == [0, 5, 8]
    checkpoint(9)
    ws.set_training("stopped")  # stopping writes a checkpoint before it says so
    assert source_on_screen(ws) == q.Saved(str(tmp_path), 9)
