"""The optimizer in the builder's Training tab: choosing one enables its own settings, reaches the session's
config, and a bad setting is named beside its field."""

from __future__ import annotations

import pytest

from ...conftest import QT_NOISE

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]


def train_form(window):
    arch = window.panes["pane_architecture"]
    arch.tabs.setCurrentIndex(1)
    return arch, arch.forms["train"]


def test_choosing_muon_enables_its_settings_and_reaches_the_config_and_a_bad_setting_is_named(qtbot, make_window):
    w = make_window()
    arch, form = train_form(w)
    box = form.editors["optimizer"]
    assert box.currentData() == "adamw" and not form.editors["muon_lr"].isEnabled()
    assert "diagonal" in box.toolTip()  # the field's comment in engine/configs/config.py
    box.setCurrentIndex(box.findData("muon"))
    assert w.session.config.train.optimizer == "muon"
    assert form.editors["muon_lr"].isEnabled() and form.editors["muon_momentum"].isEnabled()
    assert form.editors["beta2"].isEnabled() and not form.editors["momentum"].isEnabled()  # AdamW for the rest
    box.setCurrentIndex(box.findData("sgd"))
    assert w.session.config.train.optimizer == "sgd"
    assert form.editors["momentum"].isEnabled() and not form.editors["beta1"].isEnabled()
    assert not form.editors["muon_ns_steps"].isEnabled()

    # a bad optimizer setting is named beside its field (on the same window: each test built one)
    form.editors["optimizer"].setCurrentIndex(form.editors["optimizer"].findData("muon"))
    edit = form.editors["muon_momentum"]
    edit.selectAll()
    qtbot.keyClicks(edit, "1.5")
    problem = form.problem_labels["muon_momentum"]
    assert problem.isVisibleTo(arch) and problem.text() == "must be in [0, 1)"
    problem.ensurePolished()  # in red and bold (styled as it is first shown)
    assert problem.font().bold() and problem.palette().color(problem.foregroundRole()).name() == "#ff6b6b"
    assert not arch.train_button.isEnabled()
    edit.selectAll()
    qtbot.keyClicks(edit, "0.9")
    assert not problem.isVisibleTo(arch) and w.session.config.train.muon_momentum == 0.9
