"""The builder's editors are made from the field table: a field's label, tooltip, choices and bounds, and
the field it depends on, come from engine/configs/fields.py, including a field the table gains."""

from __future__ import annotations

import dataclasses

import pytest
from PySide6.QtWidgets import QComboBox, QSpinBox

from engine.configs import fields as cf
from engine.configs.config import ModelConfig, TrainConfig
from engine.configs.fields import BY_KEY, Field
from gui.widgets.config_form import SectionForm

from ..conftest import QT_NOISE

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]


def labels(form: SectionForm) -> dict[str, str]:
    return {name: lab.text() for name, lab in form._labels.items()}  # noqa: SLF001


def test_every_editor_shows_its_fields_label_help_choices_and_bounds(qtbot):
    for section, cls in (("model", ModelConfig), ("train", TrainConfig)):
        form = SectionForm(section, cls)
        qtbot.addWidget(form)
        for name, editor in form.editors.items():
            f = BY_KEY[f"{section}.{name}"]
            assert labels(form)[name] == f.display_label() + ":"
            if name != "vocab_size":  # read-only: its tooltip says where it comes from
                assert editor.toolTip() == f.help
            if f.choices:
                assert isinstance(editor, QComboBox)
                assert [(editor.itemData(i), editor.itemText(i)) for i in range(editor.count())] == list(f.choices)
            if isinstance(editor, QSpinBox):
                assert editor.minimum() == f.lo and editor.maximum() == min(f.hi, 2 ** 31 - 1)


def test_the_device_choice_says_the_order_auto_tries(qtbot):
    form = SectionForm("train", TrainConfig)
    qtbot.addWidget(form)
    assert form.editors["device"].itemText(0) == "auto (CUDA, then Apple MPS, then CPU)"


def test_a_field_that_does_not_count_is_greyed_as_the_table_says(qtbot):
    form = SectionForm("model", ModelConfig)
    qtbot.addWidget(form)
    form.set_values(ModelConfig(norm="none"))
    assert not form.editors["ln_eps"].isEnabled() and form.editors["attn_bias"].isEnabled()
    form.set_values(ModelConfig(norm="pre", mask="causal"))
    assert form.editors["ln_eps"].isEnabled() and not form.editors["band"].isEnabled()


def test_a_field_added_to_the_table_gets_an_editor(qtbot, monkeypatch):
    @dataclasses.dataclass(frozen=True)
    class Wider(ModelConfig):
        rotary: str = "off"
        rotary_base: int = 10_000

    new = (Field("model.rotary", "Rotary positions", "rotate queries and keys by position",
                 choices=(("off", "off"), ("on", "on (RoPE)"))),
           Field("model.rotary_base", "Rotary base", "the angles' base", lo=2, hi=10 ** 6,
                 depends=("model.rotary", ("on",))))
    monkeypatch.setattr(cf, "FIELDS", cf.FIELDS + new)
    for f in new:
        monkeypatch.setitem(cf.BY_KEY, f.key, f)
    form = SectionForm("model", Wider)
    qtbot.addWidget(form)
    form.set_values(Wider())
    box, spin = form.editors["rotary"], form.editors["rotary_base"]
    assert box.itemText(1) == "on (RoPE)" and box.toolTip() == "rotate queries and keys by position"
    assert labels(form)["rotary"] == "Rotary positions:"
    assert (spin.minimum(), spin.maximum()) == (2, 10 ** 6) and not spin.isEnabled()
    box.setCurrentIndex(1)
    obj, problems = form.read(Wider())
    assert obj.rotary == "on" and problems == [] and spin.isEnabled()
