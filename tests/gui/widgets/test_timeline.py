"""The timeline's play (issue 16, item 11): a chosen speed, loop, and following left off after playing."""

from __future__ import annotations

import pytest

from gui.widgets.timeline import SPEEDS, Timeline


@pytest.fixture
def timeline(qtbot):
    t = Timeline()
    qtbot.addWidget(t)
    t.set_steps([0, 10, 20, 30])
    return t


def test_the_speed_is_chosen_and_sets_the_frame_interval(timeline):
    assert timeline.fps in SPEEDS and timeline.speed_box.count() == len(SPEEDS)
    timeline.set_fps(0.5)
    assert timeline._timer.interval() == 2000
    timeline.set_fps(16)
    assert timeline._timer.interval() == 62
    with pytest.raises(ValueError):
        timeline.set_fps(3)


def test_play_stops_at_the_end_without_turning_follow_back_on(timeline):
    timeline.play()
    assert timeline.step() == 0 and not timeline.following  # from the start, when at the end
    for _ in range(5):
        timeline._advance()
    assert timeline.step() == 30 and not timeline.playing and not timeline.following


def test_loop_plays_from_the_first_step_again(timeline):
    timeline.loop_box.setChecked(True)
    timeline.play()
    seen = []
    for _ in range(6):
        timeline._advance()
        seen.append(timeline.step())
    assert seen == [10, 20, 30, 0, 10, 20] and timeline.playing
    timeline.pause()


def test_show_moves_without_echo_and_a_user_move_is_reported(timeline, qtbot):
    chosen, shown = [], []
    timeline.sig_step_chosen.connect(chosen.append)
    timeline.sig_step_changed.connect(shown.append)
    timeline.show(10)
    assert timeline.step() == 10 and not timeline.following and chosen == [] and shown == [10]
    timeline.show(10)  # already there: nothing moves
    assert shown == [10]
    timeline.step_by(1)
    assert chosen[-1] == 20
    timeline.step_by(1)  # to the newest: following again
    assert timeline.following and chosen[-1] is None
    timeline.show(None)
    assert timeline.step() == 30 and shown == [10, 20, 30]


def test_a_step_shown_before_the_steps_arrive_is_kept():
    t = Timeline()
    t.show(15)
    t.set_steps([0, 10, 20])
    assert t.step() == 10 and not t.following
