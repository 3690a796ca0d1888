"""The Architecture pane: the experiment builder (docs/design.md#the-architecture-pane).

A preset chooser and a form for every field of the model, training and data configs; every problem
`validate()` finds is shown beside its field while the user types, and Train waits for a valid config.
Only a valid draft becomes `Session.config`, the workspace's. What the pane holds of its own is what the form
reads while it has problems (the workspace keeps only a valid config): `draft` reads it from the form each time,
on top of the workspace's config, and the diagram outlines the workspace's selected weight; neither is copied
here. Beside the form: the parameter count by the closed formula
(with the vocabulary the corpus really gives, read off the GUI thread; no model is built to count it), the
training memory estimate against this machine's memory (beyond it, a problem beside the field that drives
it; beyond half of it, a warning), and the block diagram whose weights select themselves in the Session.

The form stands above the diagram in a narrow pane and beside it in a wide one (`WIDE`), so that on a small
screen, where the pane shares the view area, both have the pane's height. The counts reserve the lines they
take before the corpus is read: its vocabulary arrives seconds after start (65 → 80 for the bundled
text), and a count that lost a line then moved the diagram and everything under it.
"""

from __future__ import annotations

import dataclasses
import html

from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtWidgets import (QComboBox, QFormLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton, QScrollArea,
                               QSplitter, QStyle, QTabWidget, QVBoxLayout, QWidget)

from engine.configs.config import ConfigError, DataConfig, ExperimentConfig, ModelConfig, TrainConfig
from engine.configs.problem import Problem
from engine.configs.sizes import human_count, memory_estimate_bytes, parameter_count
from engine.configs.inspection import Inspection, inspect_apart
from engine.text.corpus import SHAKESPEARE
from engine.configs.limits import gib, memory_warning, training_problems
from engine.configs.presets import load_preset, preset_names
from engine.configs.resolve import unresolved, with_vocab
from engine.training.state import TrainingState

from ...binding import listen
from ...jobs import LatestJob
from ...session import Session
from ...widgets import dialogs
from .block_diagram import BlockDiagram
from ...widgets.config_form import SectionForm
from ...widgets.fields import label as field_label
from ...torch_import import ensure_torch

SECTIONS = (("model", ModelConfig, "Model"), ("train", TrainConfig, "Training"), ("data", DataConfig, "Data"))
WIDE = 640  # px: from this width of the pane the form stands beside the diagram, not above it
COUNT_LINES = 2  # lines the parameter count and the memory estimate each keep, whatever their text


# a draft with problems is still drawn as its fields read, within what a diagram can show
DIAGRAM_MAX_LAYERS, DIAGRAM_MAX_HEADS = 64, 256


def _recipe(cfg: ExperimentConfig) -> ExperimentConfig:
    """What a preset fixes: its thread count is the machine's, not the recipe's (the sample run, trained on one
    thread beside the app, showed Preset 'custom' for the induction lesson it is)."""
    return unresolved(cfg.replace(train=dataclasses.replace(cfg.train, torch_threads=0)))


class ArchitecturePane(QWidget):
    title = "Architecture"
    object_name = "pane_architecture"

    def __init__(self, session: Session, parent=None):
        super().__init__(parent)
        self.session = session
        self.inspection: Inspection | None = None
        self._inspected_data: DataConfig | None = None
        self._inspected_run = None  # the shown run's folder the inspection read its tokenizer from (None: fitted)
        self._submitted = None  # (data, model without vocabulary) of the last inspection asked for
        self._presets = {name: load_preset(name) for name in preset_names()}
        self._inspect = LatestJob(self)
        self._debounce = QTimer(self, singleShot=True, interval=150)
        self._build()
        self._connect()
        self._show_config(session.config)

    # ---- layout ----------------------------------------------------------------------------

    def _build(self) -> None:
        self.preset = QComboBox(self)
        self.preset.setObjectName("preset")
        self.preset.addItems(list(self._presets))
        self.preset.setPlaceholderText("custom")
        self.preset.setToolTip("Load a preset (replaces every field)")
        self.name = QLineEdit(self)
        self.name.setObjectName("config_name")
        self.name.setToolTip("The run's name; new run folders start with it")
        self.load_button = QPushButton("Load…", self)
        self.load_button.setToolTip("Load a config from a TOML file")
        self.save_button = QPushButton("Save…", self)
        self.save_button.setToolTip("Save this config as a TOML file")
        # one row each: side by side in the builder's column, the Name field was left 76 px and read
        # "ction-lesson"
        head = QFormLayout()
        head.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        head.addRow("Preset:", self.preset)
        head.addRow("Name:", self.name)

        self.tabs = QTabWidget(self)
        self.forms: dict[str, SectionForm] = {}
        for section, cls, label in SECTIONS:
            form = SectionForm(section, cls)
            scroll = QScrollArea(self)
            scroll.setWidgetResizable(True)
            scroll.setWidget(form)
            # scrolls down, never sideways: as narrow as the pane may be, every label and field shows whole
            scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            scroll.setMinimumWidth(form.minimumSizeHint().width() + scroll.verticalScrollBar().sizeHint().width()
                                   + 2 * scroll.frameWidth())
            self.tabs.addTab(scroll, label)
            self.forms[section] = form

        self.params = QLabel(self)
        self.params.setObjectName("parameter_count")
        self.params.setWordWrap(True)
        self.params.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.memory = QLabel(self)
        self.memory.setObjectName("memory_estimate")
        self.memory.setWordWrap(True)
        for label in (self.params, self.memory):
            label.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
            label.setMinimumHeight(COUNT_LINES * label.fontMetrics().lineSpacing())
        self.diagram = BlockDiagram(self.session.select_weight, lambda: self.session.workspace.selection.weight, self)
        self.train_button = QPushButton(self.style().standardIcon(QStyle.StandardPixmap.SP_MediaPlay),
                                        "Train", self)
        self.train_button.setObjectName("architecture_train")
        self.status = QLabel(self)
        self.status.setObjectName("config_status")
        self.status.setWordWrap(True)

        lower = QWidget(self)
        col = QVBoxLayout(lower)
        col.setContentsMargins(0, 0, 0, 0)
        col.addWidget(self.params)
        col.addWidget(self.memory)
        col.addWidget(self.diagram, 1)
        split = QSplitter(Qt.Orientation.Vertical, self)
        split.setObjectName("architecture_split")
        split.setChildrenCollapsible(False)
        split.addWidget(self.tabs)
        split.addWidget(lower)
        self.split = split
        self._split_moved = False
        split.splitterMoved.connect(self._on_split_moved)
        split.installEventFilter(self)
        buttons = QHBoxLayout()
        buttons.addWidget(self.load_button)
        buttons.addWidget(self.save_button)
        buttons.addStretch(1)
        buttons.addWidget(self.train_button)
        foot = QVBoxLayout()
        foot.addWidget(self.status)
        foot.addLayout(buttons)
        layout = QVBoxLayout(self)
        layout.addLayout(head)
        layout.addWidget(split, 1)
        layout.addLayout(foot)

    def eventFilter(self, watched, event) -> bool:  # Qt's name
        if watched is self.split and event.type() == QEvent.Type.Resize:
            self._arrange(event.size())
        return super().eventFilter(watched, event)

    def _arrange(self, size) -> None:
        """As the splitter takes its new size: the form beside the diagram from `WIDE` px on, above it below
        that, each half of the room until the user drags the handle (the choice depends on the pane's width
        alone, which it does not change)."""
        beside = size.width() >= WIDE
        self.split.setOrientation(Qt.Orientation.Horizontal if beside else Qt.Orientation.Vertical)
        if not self._split_moved:
            room = (size.width() if beside else size.height()) - self.split.handleWidth()
            self.split.setSizes([room // 2, room - room // 2])

    def _on_split_moved(self, *_) -> None:
        self._split_moved = True

    def _connect(self) -> None:
        for form in self.forms.values():
            form.sig_edited.connect(self._on_edited)
        self.name.textEdited.connect(self._on_edited)
        self.preset.activated.connect(self._on_preset_activated)
        self.load_button.clicked.connect(self._on_load_clicked)
        self.save_button.clicked.connect(self._on_save_clicked)
        self.train_button.clicked.connect(self._on_train_clicked)
        self._debounce.timeout.connect(self._on_debounce_timeout)
        self._inspect.sig_done.connect(self._on_inspected)
        self.forms["data"].problem_labels["corpus"].linkActivated.connect(self._on_corpus_fix_chosen)
        self._inspect.sig_failed.connect(self._on_inspection_failed)
        self.session.sig_config_changed.connect(self._on_config_changed)
        self.session.sig_training_state_changed.connect(self._on_training_state_changed)
        self.session.sig_run_replaced.connect(self._on_run_replaced)
        listen(self, self.session.workspace.sig_selection_changed,
               lambda _selection, changed: "weight" in changed and self.diagram.outline())

    # ---- the draft -------------------------------------------------------------------------

    def _show_config(self, cfg: ExperimentConfig) -> None:
        self.name.setText(cfg.name)
        self.name.setCursorPosition(0)  # its start in sight: at its end, a narrow field read "ction-lesson"
        for section, form in self.forms.items():
            form.set_values(getattr(cfg, section))
        self._on_edited()

    @property
    def draft(self) -> ExperimentConfig:
        """The config as the form reads now (with its problems, which the workspace's never has)."""
        return self._read_draft()[0]

    def _read_draft(self) -> tuple[ExperimentConfig, list[Problem]]:
        """The form read on top of the workspace's config (a float that does not parse keeps its value there)."""
        cfg, problems = self.session.config.replace(name=self.name.text().strip() or "run"), []
        for section, form in self.forms.items():
            part, parse = form.read(getattr(cfg, section))
            cfg, problems = cfg.replace(**{section: part}), problems + parse
        if self.inspection is not None and self.inspection.vocab_size and self._same_data(cfg):
            cfg = with_vocab(cfg, self.inspection.vocab_size)
        return cfg, problems

    def _same_data(self, cfg: ExperimentConfig) -> bool:
        i = self.inspection
        run = self.session.open_run  # an inspection fitted for the draft is not a shown run's vocabulary: opening an
        # imported GPT-2 over a draft with the same data settings showed the plays' BPE (46,455) until its own came
        return (i is not None and i.model.n_ctx == cfg.model.n_ctx and self._inspected_data == cfg.data
                and self._inspected_run == (None if run is None else run.path))

    def _on_edited(self, *_) -> None:
        cfg, problems = self._read_draft()
        vocab = self.forms["model"].editors["vocab_size"]
        was = vocab.blockSignals(True)
        vocab.setValue(cfg.model.vocab_size)
        vocab.blockSignals(was)
        problems = problems + [p for p in cfg.validate() if p not in problems]
        if not problems:  # only a config that validates has a meaningful memory estimate
            problems = training_problems(cfg)
        if self.inspection is not None and self.inspection.corpus_problem and self._same_data(cfg):
            problems.append(Problem("data.corpus", self.inspection.corpus_problem))
        self.session.set_config_problems(problems)
        self._show_problems(problems)
        self._offer_corpus_fix(problems)
        if not problems:
            self.session.set_config(cfg)
        self._show_counts(cfg)
        self._select_preset_of(cfg)
        self._debounce.start()

    def _show_problems(self, problems: list[Problem]) -> None:
        for i, (section, _, label) in enumerate(SECTIONS):
            n = self.forms[section].show_problems(problems)
            text = f"{label} ⚠ {n}" if n else label
            if self.tabs.tabText(i) != text:  # setting it lays the tab bar out again, even to the same text
                self.tabs.setTabText(i, text)
        if not TrainingState(self.session.training_state).allows("edit_config"):
            self.status.setText("The config is locked while a run is in progress: stop it, or start "
                                "File → New run, to change it.")
            self.status.setStyleSheet("")
        elif problems:
            first = problems[0]
            self.status.setText(f"{len(problems)} problem{'s' * (len(problems) > 1)}: "
                                f"{field_label(first.field)}: {first.message}")
            self.status.setStyleSheet("color: #ff6b6b;")
        else:
            self.status.setText("Ready to train.")
            self.status.setStyleSheet("")
        self._update_train_button()

    def _show_counts(self, draft: ExperimentConfig) -> None:
        m = draft.model
        if m.validate():
            self.params.setText("Parameters: —  (fix the model's problems first)")
            self.memory.setText("")
            if 1 <= m.n_layer <= DIAGRAM_MAX_LAYERS and 1 <= m.n_head <= DIAGRAM_MAX_HEADS:
                self.diagram.show_config(m)  # the fields as they read: it kept "8 heads" beside a field of 7
            return
        formula = parameter_count(m)
        i = self.inspection
        vocab = (f"vocabulary {m.vocab_size}" if i is not None and i.model == m
                 else f"vocabulary {m.vocab_size}, reading the corpus…")
        # the vocabulary on a line of its own: the count keeps its two lines when the corpus's arrives
        self.params.setText(f"Parameters: {human_count(formula)}  —  {formula:,} by the formula\n({vocab})")
        mem = memory_estimate_bytes(draft)
        state = {"adamw": "AdamW moments", "sgd": "SGD momentum", "muon": "Muon momentum + AdamW moments"}
        text = (f"Training memory ≈ {gib(mem)} (weights, gradients, {state[draft.train.optimizer]}, "
                "activations, masks; float32)")
        warning = memory_warning(draft)
        self.memory.setText(f"{text}\n⚠ {warning}" if warning else text)
        self.memory.setStyleSheet("color: #e0a030;" if warning else "")
        self.diagram.show_config(m)

    def _select_preset_of(self, cfg: ExperimentConfig) -> None:
        for i, preset in enumerate(self._presets.values()):
            if _recipe(preset) == _recipe(cfg):
                self.preset.setCurrentIndex(i)
                return
        self.preset.setCurrentIndex(-1)

    def _update_train_button(self) -> None:
        ok = TrainingState(self.session.training_state).allows("train", not self.session.config_problems)
        self.train_button.setEnabled(ok)

    # ---- handlers --------------------------------------------------------------------------

    def _on_debounce_timeout(self) -> None:
        run = self.session.open_run  # a run shown keeps its own vocabulary (an import's, a trained run's)
        draft = self.draft
        key = (draft.data, unresolved(draft.model), None if run is None else run.path)
        if key != self._submitted:
            self._submitted = key
            self._inspect.submit((draft.data, key[2]), _inspect, draft, key[2])

    def _on_inspected(self, tag, inspection: Inspection) -> None:
        self._inspected_data, self._inspected_run = tag
        self.inspection = inspection
        self._on_edited()

    def _on_inspection_failed(self, _data, message: str) -> None:
        self.params.setText(self.params.text().replace("reading the corpus…",
                                                       f"the corpus cannot be read: {message}"))

    def _on_preset_activated(self, index: int) -> None:
        # the preset's own data settings too: keeping the draft's corpus kept an imported run's missing one
        self._show_config(self._presets[self.preset.itemText(index)])

    def _offer_corpus_fix(self, problems: list[Problem]) -> None:
        """Beside a corpus that cannot be used, the two ways out as links: the bundled Shakespeare (an
        imported nanoGPT run names its dataset, "shakespeare_char", whose characters the bundled text
        has) or a file of the user's."""
        messages = [p.message for p in problems if p.field == "data.corpus"]
        if messages:
            self.forms["data"].problem_labels["corpus"].setText(
                f"{html.escape('; '.join(messages))} — <a href='{SHAKESPEARE}'>use the bundled "
                "Shakespeare</a> · <a href='choose'>choose a text file…</a>")

    def _on_corpus_fix_chosen(self, link: str) -> None:
        corpus = self.forms["data"].editors["corpus"]
        if link == SHAKESPEARE:
            corpus.set_value(SHAKESPEARE)
            self._on_edited()
        else:
            corpus.choose.click()

    def _on_load_clicked(self) -> None:
        path = dialogs.ask_path(self, "open", "Load config", "TOML config (*.toml);;All files (*)")
        if path is None:
            return
        try:
            cfg = ExperimentConfig.load(path)
        except ConfigError as e:
            self.session.post_message(f"{e}. The config in the builder is unchanged.")
            return
        self._show_config(cfg)

    def _on_save_clicked(self) -> None:
        draft = self.draft
        path = dialogs.ask_path(self, "save", "Save config", "TOML config (*.toml)", suggested=f"{draft.name}.toml")
        if path is None:
            return
        path = path if path.suffix else path.with_suffix(".toml")
        try:
            path.write_text(draft.to_toml(), encoding="utf-8")
        except OSError as e:
            self.session.post_message(f"Cannot save the config to {path}: {e.strerror}. Choose another folder.")
            return
        self.session.post_message(f"Config saved to {path}", "info")

    def _on_train_clicked(self) -> None:
        self.session.request_training("train")

    def _on_config_changed(self, cfg: ExperimentConfig) -> None:
        if cfg != self.draft:
            self._show_config(cfg)

    def _on_run_replaced(self, _open_run) -> None:
        """Another run is open (one event): its config in the builder, locked or not by its training state."""
        self._on_config_changed(self.session.config)
        self._on_training_state_changed(self.session.training_state)
        self.diagram.outline()  # the selection fitted to the run's model

    def _on_training_state_changed(self, state: str) -> None:
        editable = TrainingState(state).allows("edit_config")
        for w in (*self.forms.values(), self.preset, self.name, self.load_button):
            w.setEnabled(editable)
        self._show_problems(self.session.config_problems)


def _inspect(cfg: ExperimentConfig, run_dir) -> Inspection:
    ensure_torch()  # engine.text.data and engine.model.gpt import torch, which one thread at a time must import
    return inspect_apart(cfg, run_dir)
