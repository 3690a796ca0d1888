"""The Runs pane's Fork… dialog: the step to fork at, and a form of every field a fork may change, filled
with the parent's values (engine/rundir/fork.py pairs the two runs). A fork keeps its parent's seed, data and
weight shapes: the seed is shown but locked, the data are not offered, and a model field whose new value
changes a weight's shape (weight_layout.weight_shapes, no model built) is refused beside it as the user
types, as is any value `validate()` refuses. It replaced a free-text "SECTION.FIELD=VALUE" line.
"""

from __future__ import annotations

import dataclasses

from PySide6.QtWidgets import (QComboBox, QDialog, QDialogButtonBox, QFormLayout, QLabel, QScrollArea,
                               QTabWidget, QVBoxLayout, QWidget)

from engine.configs.config import ExperimentConfig, ModelConfig, TrainConfig
from engine.configs.problem import Problem
from engine.model.weight_layout import weight_shapes

from ...widgets.config_form import SectionForm

SECTIONS = (("train", TrainConfig, "Training"), ("model", ModelConfig, "Model"))
LOCKED = {"train.seed": "A fork keeps its parent's seed: it draws the initial weights and the batches"}


def fork_problems(parent: ExperimentConfig, cfg: ExperimentConfig) -> list[Problem]:
    """What keeps `cfg` from being a fork of `parent`: its own problems, and each model field whose change
    alone alters the shapes of the weights."""
    problems = cfg.validate()
    shapes = weight_shapes(parent.model)
    for f in dataclasses.fields(ModelConfig):
        value = getattr(cfg.model, f.name)
        if value != getattr(parent.model, f.name):
            alone = dataclasses.replace(parent.model, **{f.name: value})
            if alone.validate() or weight_shapes(alone) != shapes:
                problems.append(Problem(f"model.{f.name}", "changes the shapes of the weights, so the fork could "
                                                           "not start from its parent's; start a new run"))
    return problems


class ForkDialog(QDialog):
    def __init__(self, parent_cfg: ExperimentConfig, steps: list[int], parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Fork run")
        self.parent_cfg, self.cfg = parent_cfg, parent_cfg
        self.step = QComboBox(self)
        for s in steps:
            self.step.addItem("the start (step 0)" if s == 0 else f"checkpoint at step {s:,}", s)
        self.forms: dict[str, SectionForm] = {}
        tabs = QTabWidget(self)
        for section, cls, title in SECTIONS:
            form = SectionForm(section, cls)
            form.set_values(getattr(parent_cfg, section))
            for key, why in LOCKED.items():
                if key.startswith(f"{section}."):
                    form.editors[key.partition(".")[2]].setEnabled(False)
                    form.editors[key.partition(".")[2]].setToolTip(why)
            form.sig_edited.connect(self._on_edited)
            scroll = QScrollArea(self)
            scroll.setWidgetResizable(True)
            scroll.setWidget(form)
            tabs.addTab(scroll, title)
            self.forms[section] = form
        self.status = QLabel("Change the settings the fork should differ in.", self)
        self.status.setWordWrap(True)
        buttons = QDialogButtonBox.StandardButton
        self.buttons = QDialogButtonBox(buttons.Ok | buttons.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Fork")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        head = QFormLayout()
        head.addRow("Fork at:", self.step)
        col = QVBoxLayout(self)
        col.addLayout(head)
        col.addWidget(tabs, 1)
        col.addWidget(self.status)
        col.addWidget(self.buttons)
        self.resize(560, 640)
        self._on_edited()

    def _on_edited(self) -> None:
        cfg, problems = self.parent_cfg, []
        for section, form in self.forms.items():
            part, parse = form.read(getattr(cfg, section))
            cfg, problems = cfg.replace(**{section: part}), problems + parse
        problems += [p for p in fork_problems(self.parent_cfg, cfg) if p not in problems]
        for form in self.forms.values():
            form.show_problems(problems)
        self.cfg = cfg
        changed = cfg != self.parent_cfg
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        ok.setEnabled(changed and not problems)
        if problems:
            self.status.setText(f"{len(problems)} problem(s): {problems[0].field}: {problems[0].message}")
        else:
            self.status.setText("Fork at the chosen step with these settings." if changed
                                else "Change the settings the fork should differ in.")

    def chosen(self) -> tuple[ExperimentConfig, int]:
        return self.cfg, int(self.step.currentData())


def ask_fork(parent_run, parent: QWidget | None = None) -> tuple[ExperimentConfig, int] | None:
    """The fork's config and step, or None when the user cancels."""
    steps = [0] + [s for s in parent_run.checkpoint_steps() if s > 0]
    box = ForkDialog(parent_run.config, steps, parent)
    return box.chosen() if box.exec() == QDialog.DialogCode.Accepted else None
