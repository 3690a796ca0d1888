"""Head scores over a run's saved steps: cached, recomputed when the weights change, and formation steps."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from engine.analysis import head_timeline as timeline_mod
from engine.analysis.head_roles import formation_step, roles_over
from engine.analysis.heads import SCORES, HeadProbes, head_scores
from engine.model.probes import induction_probe
from engine.rundir.runs import Run
from tests.engine.cli.test_export_cli import tiny_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return tiny_run(tmp_path_factory.mktemp("heads") / "run")


def test_a_role_forms_at_the_first_step_from_which_it_stays_above_its_threshold():
    steps = [0, 100, 200, 300, 400]
    assert formation_step(steps, np.array([0.1, 0.5, 0.2, 0.6, 0.7]), 0.4) == 300
    assert formation_step(steps, np.array([0.5, 0.5, 0.5, 0.6, 0.7]), 0.4) == 0
    assert formation_step(steps, np.array([0.5, 0.5, 0.5, 0.6, 0.3]), 0.4) is None
    series = {n: np.zeros((5, 1, 2)) for n in SCORES}
    series["induction"][2:, 0, 1] = 0.9
    assert [r.label for r in roles_over(steps, series)] == ["L0 H1 · induction, from step 200"]


def test_the_timeline_scores_every_saved_step_on_the_runs_probes(run):
    tl = timeline_mod.head_timeline(run.path)
    assert tl.steps == [0, 2, 4] and not tl.induction_derived
    assert all(tl.values[n].shape == (3, 2, 2) for n in SCORES) and tl.loss.shape == (3,)
    at_2 = head_scores(run.build_model(2), HeadProbes.from_probe(run.probe()))
    for name in SCORES:
        np.testing.assert_allclose(tl.values[name][1], at_2.values[name], rtol=1e-6, atol=1e-9)
    assert tl.upto(2).steps == [0, 2] and tl.upto(2).values["induction"].shape == (2, 2, 2)


def test_a_second_look_reads_the_cache_and_changed_weights_are_scored_again(run, monkeypatch):
    first = timeline_mod.head_timeline(run.path)
    calls = []
    real = timeline_mod.HeadScoring
    monkeypatch.setattr(timeline_mod, "HeadScoring", lambda *a: calls.append(1) or real(*a))
    again = timeline_mod.head_timeline(run.path)
    assert calls == []
    for name in SCORES:
        np.testing.assert_array_equal(again.values[name], first.values[name])
    snap = run.path / "snapshots" / "step-000002.safetensors"
    st = snap.stat()
    os.utime(snap, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # a rewritten snapshot
    (run.path / "cache" / "heads" / "step-000004.npz").write_bytes(b"not a zip")  # a damaged cache file
    timeline_mod.head_timeline(run.path)
    assert len(calls) == 2


def test_a_run_from_before_induction_probes_derives_one_and_says_so(run, tmp_path):
    import shutil

    old = tmp_path / "old"
    shutil.copytree(run.path, old)
    d = json.loads((old / "probe.json").read_text())
    del d["induction"]
    (old / "probe.json").write_text(json.dumps(d))
    tl = timeline_mod.head_timeline(old)
    assert tl.induction_derived
    m, t = run.config.model, run.config.train  # such runs drew their probe uniformly: derived the same way
    np.testing.assert_array_equal(Run(old).probe().induction,
                                  induction_probe(m.vocab_size, m.n_ctx, t.seed, t.probe_batch))
    assert tl.values["induction"].shape == timeline_mod.head_timeline(run.path).values["induction"].shape
    assert Run(old).warnings == []


def test_a_symlinked_cache_folder_is_never_written_through(run, tmp_path):
    """Issue 18, class 11: the scores are still given, but nothing lands where the link points."""
    import shutil

    copy, elsewhere = tmp_path / "copy", tmp_path / "elsewhere"
    shutil.copytree(run.path, copy, ignore=shutil.ignore_patterns("cache"))
    elsewhere.mkdir()
    (copy / "cache").symlink_to(elsewhere, target_is_directory=True)
    tl = timeline_mod.head_timeline(copy)
    np.testing.assert_array_equal(tl.values["previous_token"], timeline_mod.head_timeline(run.path).values["previous_token"])
    assert list(elsewhere.rglob("*")) == []


def test_a_timeline_scored_a_slice_at_a_time_says_what_is_left_and_ends_as_the_whole(tmp_path, monkeypatch):
    """The analysis process scores a large model's timeline in slices (TimelineScorer): each answer holds
    the steps done and what is left, and the last one is the timeline computed in one go."""
    import engine.analysis.heads as heads_mod

    fresh = tiny_run(tmp_path / "run")
    monkeypatch.setattr(heads_mod, "PIECE_TOKEN_LAYERS", 1)  # one head per piece: 3 + 2·2 parts a step
    scorer = timeline_mod.TimelineScorer(fresh.path)
    answers = []
    while not answers or answers[-1].scoring is not None:
        answers.append(scorer.advance(0.0))
    assert len(answers) == 3 * 8  # three steps: the model built, then seven parts, one a slice
    assert answers[0].steps == [] and answers[0].scoring == timeline_mod.Scoring(0, 0, 7, 3)
    assert answers[1].scoring == timeline_mod.Scoring(0, 1, 7, 3)
    assert str(answers[1].scoring) == "Scoring heads at step 0: part 2 of 7; 2 more steps after it…"
    assert answers[7].steps == [0] and answers[8].scoring.step == 2
    whole = timeline_mod.head_timeline(fresh.path)
    assert answers[-1].steps == whole.steps == [0, 2, 4]
    for name in SCORES:
        np.testing.assert_array_equal(answers[-1].values[name], whole.values[name])
    assert timeline_mod.TimelineScorer(fresh.path).advance(0.0).scoring is None  # all cached now


def test_the_roles_view_rows_are_the_heads_that_formed_in_order_and_the_lessons_best_so_far():
    from engine.analysis.head_roles import role_rows

    steps = [0, 100, 200]
    zeros = np.zeros((3, 2, 2))
    series = {name: zeros.copy() for name in ("previous_token", "induction", "duplicate", "first_token",
                                              "copying")}
    series["previous_token"][1:, 0, 1] = 0.6       # L0 H1 from step 100
    series["duplicate"][2:, 1, 1] = 0.5            # L1 H1 from step 200
    series["copying"][:, 1, 0] = 0.9               # not an attention role: not a row
    series["induction"][2, 1, 0] = 0.2             # below the threshold: the best head so far, "?"
    rows = role_rows(steps, series)
    assert [(r.label, r.formed) for r in rows] == [("L0 H1 previous-token", 100), ("L1 H1 duplicate-token", 200),
                                                   ("L1 H0 induction?", None)]


def test_a_cancel_after_a_steps_last_piece_leaves_the_next_slice_its_row(tmp_path, monkeypatch):
    """A cancel is raised by the report said after a piece: said after a step's last piece, it left the scorer
    holding a finished scoring, and the next slice advanced it again (IndexError in the app's log). The next
    slice now takes the finished step's row and goes on."""
    import engine.analysis.heads as heads_mod
    from engine.progress import Cancelled, reporting

    fresh = tiny_run(tmp_path / "run")
    monkeypatch.setattr(heads_mod, "PIECE_TOKEN_LAYERS", 1)
    scorer = timeline_mod.TimelineScorer(fresh.path)

    def cancel_at_the_end_of_a_step(done, total, unit):
        if done and done % 7 == 0:  # 7 parts a step: this report follows step 0's last piece
            raise Cancelled()

    with pytest.raises(Cancelled):
        reporting(cancel_at_the_end_of_a_step, scorer.advance, 60.0)
    after = scorer.advance(0.0)
    assert after.steps == [0] and after.scoring is not None
    whole = timeline_mod.head_timeline(fresh.path)
    for name in SCORES:
        np.testing.assert_array_equal(after.values[name][0], whole.values[name][0])


def test_a_step_left_unfinished_goes_on_from_its_parts_in_the_next_process(tmp_path, monkeypatch):
    """Issue 40: GPT-2 small's step is 41 parts (10-30 CPU-minutes) and only a finished step was cached, so
    opening the run again scored it from its first part at every launch. The parts a slice scored are kept
    beside the cache; a new scorer (a new process: nothing in memory) goes on from the first part not done,
    its scores those of the step scored in one go, and once the steps are cached nothing is scored again."""
    import engine.analysis.heads as heads_mod

    fresh = tiny_run(tmp_path / "run")
    monkeypatch.setattr(heads_mod, "PIECE_TOKEN_LAYERS", 1)  # one head per piece: 3 + 2·2 parts a step
    first = timeline_mod.TimelineScorer(fresh.path)
    for _ in range(5):  # the model built, then four parts of step 0
        answer = first.advance(0.0)
    assert answer.scoring == timeline_mod.Scoring(0, 4, 7, 3)
    scored = []  # (step's parts done before each part scored)
    real = heads_mod.HeadScoring.advance
    monkeypatch.setattr(heads_mod.HeadScoring, "advance", lambda self: scored.append(self.done) or real(self))
    again = timeline_mod.TimelineScorer(fresh.path)
    assert again.advance(0.0).scoring == timeline_mod.Scoring(0, 4, 7, 3)  # built, and says where it goes on
    timeline = timeline_mod.finish(again)
    assert scored == [4, 5, 6] + list(range(7)) * 2  # step 0 from its fifth part, steps 2 and 4 whole
    probes = HeadProbes.from_probe(fresh.probe())
    for k, step in enumerate(timeline.steps):
        at = head_scores(fresh.build_model(step), probes)
        for name in SCORES:
            np.testing.assert_allclose(timeline.values[name][k], at.values[name], rtol=1e-6, atol=1e-9)
        assert timeline.loss[k] == pytest.approx(at.loss, rel=1e-9)
    assert list((fresh.path / "cache" / "heads").glob("*.part.npz")) == []  # a finished step keeps its row alone
    scored.clear()
    assert timeline_mod.TimelineScorer(fresh.path).advance(0.0).scoring is None and scored == []
