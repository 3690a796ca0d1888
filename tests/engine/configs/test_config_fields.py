"""The one field table: every config field is in it once, `validate()` enforces its choices and bounds,
`--set`'s help and docs/config-fields.md list what it holds, and `auto` means the device order it states."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from engine.configs import fields as cf
from engine.configs import fields_markdown
from engine.configs.config import DataConfig, ExperimentConfig, ModelConfig, TrainConfig
from engine.configs.fields import BY_KEY, FIELDS, Field

SECTIONS = {"model": ModelConfig, "train": TrainConfig, "data": DataConfig}
DOCS = Path(__file__).resolve().parents[3] / "docs" / "config-fields.md"


def test_the_table_holds_each_dataclass_field_once_in_order():
    keys = [f"{s}.{f.name}" for s, cls in SECTIONS.items() for f in dataclasses.fields(cls)]
    assert [f.key for f in FIELDS] == keys


def test_defaults_obey_the_table():
    for f in FIELDS:
        assert f.problem(getattr(SECTIONS[f.section](), f.name)) is None, f.key
        assert f.depends is None or f.depends[0] in BY_KEY, f.key


def _outside(f: Field) -> list:
    """Values just outside each end of a field's bounds, and non-finite ones for floats."""
    kind = type(getattr(SECTIONS[f.section](), f.name))
    out = [float("nan"), float("inf")] if kind is float else []
    step = 1 if kind is int else 1e-9 * max(1.0, abs(f.lo))
    out.append(f.lo if f.ends[0] == "(" else kind(f.lo - step))
    if f.hi is not None:
        out.append(f.hi if f.ends[1] == ")" else kind(f.hi + step) if kind is int else f.hi * (1 + 1e-9))
    return out


@pytest.mark.parametrize("f", [f for f in FIELDS if f.lo is not None or f.choices], ids=lambda f: f.key)
def test_validate_refuses_each_bound_and_choice_of_the_table(f):
    cls = SECTIONS[f.section]
    bad = ["no such choice"] if f.choices else _outside(f)
    for value in bad:
        problems = cls(**{f.name: value}).validate()
        assert f.key in [p.field for p in problems], (f.key, value)
        assert all("\n" not in p.message for p in problems)
    if f.hi is not None and f.ends[1] == "]":  # the closed end itself is allowed
        at_hi = cls(**{f.name: type(getattr(cls(), f.name))(f.hi)}).validate()
        assert not [p for p in at_hi if p.field == f.key and p.message == f.problem(f.hi * 2)], f.key


def test_a_field_added_to_the_table_is_validated_listed_and_documented(monkeypatch):
    @dataclasses.dataclass(frozen=True)
    class Wider(ModelConfig):
        rotary: str = "off"

    new = Field("model.rotary", "Rotary positions", "rotate queries and keys by position",
                choices=(("off", "off"), ("on", "on (RoPE)")))
    monkeypatch.setattr(cf, "FIELDS", FIELDS + (new,))
    monkeypatch.setitem(cf.BY_KEY, new.key, new)
    assert [p.field for p in Wider(rotary="sideways").validate()] == ["model.rotary"]
    assert Wider(rotary="on").validate() == []
    assert "rotary" in cf.settings_help()
    monkeypatch.setattr(fields_markdown, "ModelConfig", Wider)
    assert ("| `rotary` | Rotary positions | `'off'` | off, on (RoPE) | rotate queries and keys"
            in fields_markdown.markdown())


def test_the_command_lines_help_comes_from_the_table(capsys):
    from engine.cli import main

    with pytest.raises(SystemExit):
        main(["train", "--help"])
    flat = " ".join(capsys.readouterr().out.split())
    assert "--device auto|cpu|cuda|mps" in flat and "auto (CUDA, then Apple MPS, then CPU)" in flat
    for f in FIELDS:  # every field --set may change is listed
        assert f.name in flat, f.key


def test_the_docs_table_is_the_tables_markdown():
    assert DOCS.read_text(encoding="utf-8") == fields_markdown.markdown(), \
        "docs/config-fields.md is stale: run python -m engine.configs.fields_markdown docs/config-fields.md"


def test_auto_tries_the_devices_in_the_order_the_table_states(monkeypatch):
    import torch

    from engine.training import device

    assert cf.AUTO_DEVICES == ("cuda", "mps", "cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(device, "_mps_available", lambda: True)
    assert device.pick_device("auto").type == "mps"
    monkeypatch.setattr(device, "_mps_available", lambda: False)
    assert device.pick_device("auto").type == "cpu"


def test_min_lr_above_lr_is_the_one_cross_field_check_of_train():
    assert [p.field for p in TrainConfig(lr=1e-3, min_lr=2e-3).validate()] == ["train.min_lr"]
    assert ExperimentConfig().validate() == []
