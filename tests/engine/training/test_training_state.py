"""The training-state table: what each state allows, and that an invalid draft blocks only new work."""

import pytest

from engine.training.state import TrainingState as S


@pytest.mark.parametrize("state, allowed", [
    (S.IDLE, {"train", "step", "edit_config"}),
    (S.RUNNING, {"pause", "pause_resume", "stop", "save"}),
    (S.PAUSING, {"train", "resume", "pause_resume", "stop", "save"}),
    (S.PAUSED, {"train", "resume", "pause_resume", "step", "stop", "save"}),
    (S.STOPPED, {"train", "step", "edit_config"}),
    (S.FINISHED, {"train", "edit_config"}),
    (S.ERROR, {"train", "step", "edit_config"}),
])
def test_each_state_allows_its_actions(state, allowed):
    actions = {"train", "pause", "resume", "pause_resume", "step", "stop", "save", "edit_config"}
    assert {a for a in actions if state.allows(a)} == allowed


def test_an_invalid_draft_blocks_train_and_step_but_not_a_paused_step():
    assert not S.IDLE.allows("train", config_valid=False)
    assert not S.STOPPED.allows("step", config_valid=False)
    assert S.PAUSED.allows("step", config_valid=False)
    assert S.IDLE.allows("edit_config", config_valid=False)


def test_states_are_their_names():
    assert S("running") is S.RUNNING and S.RUNNING == "running"
    assert S.RUNNING.live and S.PAUSING.live and S.PAUSED.live and not S.STOPPED.live
