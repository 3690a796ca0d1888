"""The Architecture pane: typing into the builder, its problems, counts, diagram and TOML files."""

from __future__ import annotations

import dataclasses

import pytest
from PySide6.QtCore import Qt

from engine.configs.config import ExperimentConfig, ModelConfig
from engine.configs.sizes import parameter_count
from engine.model.gpt import weight_names
from engine.configs.presets import load_preset, preset_names
from gui.widgets import dialogs

from ...conftest import QT_NOISE, tiny_config

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]
WAIT = 20_000


def pane(window):
    return window.panes["pane_architecture"]


class Alone:
    """The Architecture pane on its own over a Session, for tests of the pane alone (a whole window costs
    about a second to build); `.session` and `pane(alone)` read as for a window."""

    def __init__(self, qtbot, config):
        from gui.panes.architecture.pane import ArchitecturePane
        from gui.session import Session

        self.session = Session(config)
        self.panes = {"pane_architecture": ArchitecturePane(self.session)}
        qtbot.addWidget(self.panes["pane_architecture"])
        self.panes["pane_architecture"].show()


@pytest.fixture
def make_pane(qtbot, corpus_file):
    return lambda config=None: Alone(qtbot, config or tiny_config(corpus_file))


def type_into(qtbot, spin, text: str) -> None:
    """Replace a spin box's text the way a user does: select all, type."""
    spin.lineEdit().selectAll()
    qtbot.keyClicks(spin.lineEdit(), text)


def test_editing_a_field_updates_the_parameter_count(qtbot, make_pane):
    w = make_pane()
    arch = pane(w)
    type_into(qtbot, arch.forms["model"].editors["n_layer"], "3")
    model = w.session.config.model
    assert model.n_layer == 3
    assert f"{parameter_count(model):,} by the formula" in arch.params.text()
    qtbot.waitUntil(lambda: "reading the corpus" not in arch.params.text(), timeout=WAIT)
    assert f"vocabulary {w.session.config.model.vocab_size})" in arch.params.text()
    assert "blocks.2.W_Q" in arch.diagram.items


def test_problems_shown_again_unchanged_leave_the_tab_titles_alone(make_pane, monkeypatch):
    """Each tab's title names its problems; set again to the same text it laid the tab bar out again, six
    times whenever the config was shown (issue 37: most of the builder's share of opening a run, on the GUI
    thread, besides its diagram)."""
    arch = pane(make_pane())
    set_to = []
    monkeypatch.setattr(arch.tabs, "setTabText", lambda i, text: set_to.append(text))
    arch._show_problems([])
    assert set_to == []


def test_a_32768_context_is_refused_beside_n_ctx_and_nothing_is_built(qtbot, make_pane, monkeypatch):
    import torch

    from engine.configs import limits

    built = []
    monkeypatch.setattr(torch.nn.Module, "__init__", lambda *a, **k: built.append(a) or 1 / 0)
    monkeypatch.setattr(limits, "machine_memory", lambda: 16 << 30)
    w = make_pane()
    arch = pane(w)
    type_into(qtbot, arch.forms["model"].editors["n_ctx"], "32768")
    problem = arch.forms["model"].problem_labels["n_ctx"]
    assert problem.isVisibleTo(arch) and "more than this machine's 16.0 GiB" in problem.text()
    assert not arch.train_button.isEnabled() and "Ready" not in arch.status.text()
    assert "GiB" in arch.memory.text()
    qtbot.waitUntil(lambda: "reading the corpus" not in arch.params.text(), timeout=WAIT)
    assert "cannot be read" not in arch.params.text() and built == []


def test_training_that_takes_most_of_the_memory_is_a_warning_beside_the_estimate(qtbot, make_pane,
                                                                                  monkeypatch):
    from engine.configs import limits
    from engine.configs.sizes import memory_estimate_bytes

    arch = pane(make_pane())
    qtbot.waitUntil(lambda: "reading the corpus" not in arch.params.text(), timeout=WAIT)
    need = memory_estimate_bytes(arch.draft.replace(model=dataclasses.replace(arch.draft.model, n_layer=2)))
    monkeypatch.setattr(limits, "machine_memory", lambda: int(need * 1.25))
    type_into(qtbot, arch.forms["model"].editors["n_layer"], "2")
    assert "⚠" in arch.memory.text() and "80%" in arch.memory.text()
    assert arch.status.text() == "Ready to train." and arch.train_button.isEnabled()


def test_heads_not_dividing_d_model_shows_the_message_and_disables_train_and_a_broken_toml_is_a_banner(
        qtbot, make_window, tmp_path, monkeypatch):
    """A broken TOML file is a banner and changes nothing, on the same window. (One window for both.)"""
    w = make_window()
    arch, before = pane(w), w.session.config
    type_into(qtbot, arch.forms["model"].editors["n_head"], "3")
    problem = arch.forms["model"].problem_labels["n_head"]
    assert problem.isVisibleTo(arch) and problem.text() == "3 heads do not divide d_model = 16"
    assert not arch.train_button.isEnabled()
    assert arch.status.text() == "1 problem: Heads: 3 heads do not divide d_model = 16"
    assert not w.panes["pane_training"].buttons["train"].isEnabled()
    assert w.actions["train"].isEnabled()  # F5 answers with the problem (test_f5_on_a_config_…)
    assert w.session.config == before  # only valid drafts reach the session
    assert arch.diagram.cfg.n_head == 3  # the diagram draws the field as it reads (issue 40: it kept 2)
    type_into(qtbot, arch.forms["model"].editors["n_head"], "4")
    assert not problem.isVisibleTo(arch)
    assert arch.train_button.isEnabled() and w.session.config.model.n_head == 4

    # a broken TOML file is a banner and changes nothing
    bad, before = tmp_path / "bad.toml", w.session.config
    bad.write_text("[model]\nn_layer = 'two'\n")
    monkeypatch.setattr(dialogs, "ask_path", lambda *a, **k: bad)
    qtbot.mouseClick(pane(w).load_button, Qt.MouseButton.LeftButton)
    assert w.banner.level == "error" and "n_layer must be int" in w.banner.text
    assert w.session.config == before


def test_a_float_that_is_not_a_number_is_named_beside_its_field(qtbot, make_pane):
    arch = pane(make_pane())
    arch.tabs.setCurrentIndex(1)
    lr = arch.forms["train"].editors["lr"]
    lr.selectAll()
    qtbot.keyClicks(lr, "3e-")
    assert arch.forms["train"].problem_labels["lr"].text() == "not a number"
    assert not arch.train_button.isEnabled()
    assert "⚠ 1" in arch.tabs.tabText(1)


def test_clicking_a_weight_in_the_diagram_emits_its_name(qtbot, make_pane):
    w = make_pane()
    diagram = pane(w).diagram
    item = diagram.items["blocks.0.W_K"]
    diagram.ensureVisible(item)
    pos = diagram.mapFromScene(item.sceneBoundingRect().center())
    with qtbot.waitSignal(w.session.sig_weight_selected, timeout=WAIT) as selected:
        qtbot.mouseClick(diagram.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    assert selected.args == ["blocks.0.W_K"]
    assert w.session.selected_weight == "blocks.0.W_K" and item.selected
    # the outline follows the workspace's selection however it changes (the Weight pane's box selects through
    # the workspace alone): the diagram kept a copy, which stayed on W_K
    w.session.workspace.select(weight="blocks.0.W_Q")
    assert diagram.items["blocks.0.W_Q"].selected and not item.selected


@pytest.mark.parametrize("change", [{}, {"norm": "none", "residual": False}, {"norm": "post"},
                                    {"pos_encoding": "learned", "tied": True}, {"n_layer": 4},
                                    {"attn_bias": True, "activation": "gelu_tanh"}])
def test_the_diagram_draws_exactly_the_trained_weights(qtbot, change):
    from gui.panes.architecture.block_diagram import BlockDiagram

    diagram = BlockDiagram(lambda name: None)  # the pane's own widget, without building a window around it
    qtbot.addWidget(diagram)
    model = dataclasses.replace(ModelConfig(), **change)
    diagram.show_config(model)
    assert set(diagram.items) == set(weight_names(model))


def test_the_diagram_of_a_wide_model_is_as_many_items_as_a_narrow_ones_and_reads_its_shapes_once(qtbot,
                                                                                                   monkeypatch):
    """Drawn on the GUI thread when a run opens (issue 37: GPT-2 small's took 35 ms of its CPU): a heads box's
    ticks are one item whatever the heads (an item per tick was 792), and the shapes the tooltips name are
    computed once per drawing (they were once per weight, 197 times)."""
    from gui.panes.architecture import block_diagram
    from gui.panes.architecture.block_diagram import BlockDiagram

    asked = []
    shapes = block_diagram.weight_shapes
    monkeypatch.setattr(block_diagram, "weight_shapes", lambda cfg: asked.append(cfg) or shapes(cfg))
    counts = []
    for n_head in (2, 8):
        diagram = BlockDiagram(lambda name: None)
        qtbot.addWidget(diagram)
        asked.clear()
        diagram.show_config(dataclasses.replace(ModelConfig(), n_layer=3, n_head=n_head, d_model=32))
        assert len(asked) == 1
        counts.append(len(diagram.scene().items()))
    assert counts[0] == counts[1]


def test_choosing_a_preset_fills_every_field(qtbot, make_pane):
    w = make_pane()
    arch = pane(w)
    index = preset_names().index("nanogpt-cpu")
    arch.preset.setCurrentIndex(index)
    arch.preset.activated.emit(index)
    expected = load_preset("nanogpt-cpu")
    assert w.session.config.model.d_model == expected.model.d_model == 128
    assert w.session.config.train == expected.train
    assert w.session.config.data == expected.data  # its own data settings, not the draft's corpus
    assert arch.forms["model"].editors["tied"].isChecked()


def imported_config(corpus_file):
    """An imported nanoGPT run's config: its corpus is the dataset's name, not a file here."""
    cfg = tiny_config(corpus_file)
    return cfg.replace(data=dataclasses.replace(cfg.data, corpus="shakespeare_char"))


def test_a_missing_corpus_says_so_beside_the_field_with_the_bundled_text_one_click_away(qtbot, make_pane,
                                                                                        corpus_file):
    w = make_pane(imported_config(corpus_file))
    arch = pane(w)
    label = arch.forms["data"].problem_labels["corpus"]
    qtbot.waitUntil(lambda: "not found" in label.text(), timeout=WAIT)
    assert not label.isHidden() and "shakespeare_char" in label.text() and "bundled Shakespeare" in label.text()
    assert not arch.train_button.isEnabled()
    label.linkActivated.emit("shakespeare")
    assert w.session.config.data.corpus == "shakespeare"
    qtbot.waitUntil(lambda: arch.train_button.isEnabled(), timeout=WAIT)
    assert label.isHidden()


def test_the_missing_corpus_link_can_choose_a_file_instead(qtbot, make_pane, corpus_file, monkeypatch):
    w = make_pane(imported_config(corpus_file))
    arch = pane(w)
    label = arch.forms["data"].problem_labels["corpus"]
    qtbot.waitUntil(lambda: "not found" in label.text(), timeout=WAIT)
    monkeypatch.setattr(dialogs, "ask_path", lambda *a, **k: corpus_file)
    label.linkActivated.emit("choose")
    assert w.session.config.data.corpus == str(corpus_file)
    qtbot.waitUntil(lambda: arch.train_button.isEnabled(), timeout=WAIT)


def test_f5_on_a_config_that_cannot_train_says_what_is_wrong(qtbot, make_window, corpus_file):
    w = make_window()
    arch = pane(w)
    arch._show_config(imported_config(corpus_file))
    qtbot.waitUntil(lambda: bool(w.session.config_problems), timeout=WAIT)
    assert w.actions["train"].isEnabled()
    w.actions["train"].trigger()
    assert w.banner.level == "error" and "shakespeare_char" in w.banner.text
    assert "Architecture pane" in w.banner.text and w.session.training_state == "idle"


def test_config_saves_to_toml_and_loads_back(qtbot, make_pane, tmp_path, monkeypatch):
    w = make_pane()
    arch, path = pane(w), tmp_path / "mine.toml"
    type_into(qtbot, arch.forms["model"].editors["d_ff"], "48")
    monkeypatch.setattr(dialogs, "ask_path", lambda *a, **k: path)
    qtbot.mouseClick(arch.save_button, Qt.MouseButton.LeftButton)
    assert ExperimentConfig.load(path).model.d_ff == 48
    type_into(qtbot, arch.forms["model"].editors["d_ff"], "64")
    qtbot.mouseClick(arch.load_button, Qt.MouseButton.LeftButton)
    assert w.session.config.model.d_ff == 48 and arch.forms["model"].editors["d_ff"].value() == 48


def test_a_binary_corpus_is_refused_beside_the_corpus_field(qtbot, make_pane, tmp_path, monkeypatch):
    w = make_pane()
    arch, binary = pane(w), tmp_path / "image.bin"
    binary.write_bytes(bytes(range(256)) * 10)
    monkeypatch.setattr(dialogs, "ask_path", lambda *a, **k: binary)
    arch.tabs.setCurrentIndex(2)
    qtbot.mouseClick(arch.forms["data"].editors["corpus"].choose, Qt.MouseButton.LeftButton)
    problem = arch.forms["data"].problem_labels["corpus"]
    qtbot.waitUntil(lambda: "binary" in problem.text(), timeout=WAIT)
    assert not arch.train_button.isEnabled()


def test_the_vocabulary_comes_from_the_corpus(qtbot, make_pane, corpus_file, small_text):
    w = make_pane(tiny_config(corpus_file))
    vocab = pane(w).forms["model"].editors["vocab_size"]
    qtbot.waitUntil(lambda: vocab.value() == len(set(small_text)), timeout=WAIT)
    assert w.session.config.model.vocab_size == len(set(small_text))


def test_the_form_is_locked_while_training_and_unlocked_when_stopped(qtbot, make_window):
    w = make_window()
    arch = pane(w)
    w.session.request_training("train")
    qtbot.waitUntil(lambda: w.session.training_state == "running", timeout=WAIT)
    assert not arch.forms["model"].isEnabled() and not arch.train_button.isEnabled()
    w.session.request_training("stop")
    qtbot.waitUntil(lambda: w.session.training_state == "stopped", timeout=WAIT)
    assert arch.forms["model"].isEnabled() and arch.train_button.isEnabled()


def test_at_its_narrowest_every_field_shows_whole_even_with_a_long_corpus_path(qtbot, make_window, tmp_path):
    w = make_window()
    arch = pane(w)
    corpus = arch.forms["data"].editors["corpus"]
    corpus.set_value(str(tmp_path / ("a-folder-with-a-long-name/" * 8) / "corpus.txt"))
    w.resizeDocks([w.docks["pane_architecture"]], [1], Qt.Orientation.Horizontal)  # as narrow as it goes
    for index, (section, form) in enumerate(arch.forms.items()):
        arch.tabs.setCurrentIndex(index)
        viewport = arch.tabs.currentWidget().viewport()
        qtbot.waitUntil(lambda: form.isVisible())
        qtbot.wait(50)  # a tab shown for the first time is fitted to its viewport
        assert w.docks["pane_architecture"].width() < 400  # the long path did not widen the pane
        for name, editor in form.editors.items():
            right = editor.mapTo(viewport, editor.rect().topRight()).x()
            assert 0 <= editor.mapTo(viewport, editor.rect().topLeft()).x() and right < viewport.width(), \
                f"{section}.{name} is cut off at the pane's edge"


def test_the_training_tab_chooses_precision_and_compile(qtbot, make_pane):
    w = make_pane()
    form = pane(w).forms["train"]
    precision, compile_box = form.editors["precision"], form.editors["compile"]
    assert [precision.itemData(i) for i in range(precision.count())] == ["auto", "float32", "bf16"]
    assert precision.currentData() == "auto" and not compile_box.isChecked()
    assert "bf16" in precision.toolTip() or "bf16" in form._labels["precision"].toolTip()
    precision.setCurrentIndex(precision.findData("bf16"))
    compile_box.setChecked(True)
    assert w.session.config.train.precision == "bf16" and w.session.config.train.compile


def test_the_corpus_field_offers_every_bundled_corpus_and_keeps_a_chosen_file(qtbot):
    from engine.text.corpus import BUNDLED
    from gui.widgets.fields import CorpusEdit

    edit = CorpusEdit()
    qtbot.addWidget(edit)
    for name in BUNDLED:
        edit.set_value(name)
        assert edit.value() == name and edit.combo.currentText() == BUNDLED[name]
    edit.set_value("/some/corpus.txt")
    assert edit.value() == "/some/corpus.txt" and "corpus.txt" in edit.combo.currentText()
    edit.set_value("shakespeare-repeats")
    assert edit.value() == "shakespeare-repeats"


def test_the_name_field_shows_the_start_of_a_long_name(qtbot, make_pane):
    """Issue 40: beside a preset chooser as wide as its longest entry, the Name field showed "ction-lesson"
    (the end of "induction-lesson"): the chooser is as wide as a name needs and the field shows its start."""
    from PySide6.QtGui import QFontMetrics

    w = make_pane()
    arch = pane(w)
    index = preset_names().index("induction-lesson")
    arch.preset.setCurrentIndex(index)
    arch.preset.activated.emit(index)
    assert arch.name.text() == "induction-lesson" and arch.name.cursorPosition() == 0
    arch.resize(360, 900)  # the builder's column of the wide layout at 1600×1000
    qtbot.waitUntil(lambda: arch.width() == 360)
    assert arch.name.width() >= QFontMetrics(arch.name.font()).horizontalAdvance("induction-lesson") + 8


def test_the_diagram_is_enlarged_only_as_far_as_it_stays_in_sight(qtbot):
    """Issue 40, seen under Xvfb at 1000×650: the diagram was fitted to the pane's width alone, 1.6× in a
    short box, so a block's first boxes filled it. Past its own size it grows only while it all fits."""
    from gui.panes.architecture.block_diagram import BlockDiagram

    diagram = BlockDiagram(lambda name: None)
    qtbot.addWidget(diagram)
    diagram.show_config(ModelConfig())
    rect = diagram.sceneRect()
    diagram.resize(int(rect.width() * 2), int(rect.height() / 3))  # wide and short
    diagram.show()
    qtbot.waitUntil(lambda: diagram.transform().m11() == pytest.approx(1.0))
    diagram.resize(int(rect.width() * 1.3), int(rect.height() * 3))  # room for all of it, larger
    qtbot.waitUntil(lambda: diagram.transform().m11() > 1.2)


def test_a_run_of_a_preset_trained_on_another_thread_count_shows_that_preset(qtbot, make_pane):
    """Issue 40, seen under Xvfb: the sample run, the induction lesson trained on one thread beside the app, was
    shown as Preset 'custom'. The thread count is the machine's, not the recipe's."""
    lesson = load_preset("induction-lesson")
    w = make_pane(lesson.replace(train=dataclasses.replace(lesson.train, torch_threads=1)))
    qtbot.waitUntil(lambda: pane(w).preset.currentIndex() == preset_names().index("induction-lesson"))


def test_a_run_opened_over_a_draft_with_the_same_data_shows_its_own_vocabulary_from_the_first_frame(
        qtbot, make_pane, corpus_file, small_text, tmp_path):
    """Opening an imported GPT-2 showed "Vocabulary 46,455" (the draft's BPE fitted on the plays) until the run's
    own inspection came: the draft's inspection was applied to any config with the same data settings."""
    import numpy as np

    from engine.rundir.runs import Probe, Run, RunWriter
    from engine.text.tokenizer import CharTokenizer
    from engine.workspace.open_run import OpenRun

    w = make_pane(tiny_config(corpus_file))
    arch, fitted = pane(w), len(set(small_text))
    qtbot.waitUntil(lambda: arch.inspection is not None and arch.inspection.vocab_size == fitted, timeout=WAIT)
    tok = CharTokenizer(sorted(set(small_text))[:fitted - 3])  # the run's own tokens: not what a fit gives
    cfg = w.session.config
    cfg = cfg.replace(model=dataclasses.replace(cfg.model, vocab_size=tok.vocab_size))
    ids = np.zeros((1, cfg.model.n_ctx), dtype=np.int64)
    RunWriter.create(tmp_path / "run", cfg, tok, Probe(ids, ids, "to")).close()
    w.session.replace_run(OpenRun(cfg, tok, Run(tmp_path / "run")), cfg)
    vocab = arch.forms["model"].editors["vocab_size"]
    assert vocab.value() == tok.vocab_size and f"vocabulary {tok.vocab_size}" in arch.params.text()
    assert w.session.config.model.vocab_size == tok.vocab_size
