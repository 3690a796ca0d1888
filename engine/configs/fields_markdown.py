"""docs/config-fields.md, written from the table of engine/configs/fields.py and the defaults of
engine/configs/config.py's dataclasses: `python -m engine.configs.fields_markdown docs/config-fields.md`
(a test holds the file equal to `markdown()`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .config import DataConfig, ModelConfig, TrainConfig
from .fields import section_fields


def markdown() -> str:
    """docs/config-fields.md: every field with its meaning, allowed values and what it depends on."""
    lines = ["# Config fields", "",
             "Generated from `engine/configs/fields.py` by "
             "`python -m engine.configs.fields_markdown docs/config-fields.md`;",
             "a test holds this file equal to the table. Defaults are those of `engine/configs/config.py`'s dataclasses.",
             ""]
    defaults = {"model": ModelConfig(), "train": TrainConfig(), "data": DataConfig()}
    for section in ("model", "train", "data"):
        lines += [f"## [{section}]", "", "| field | label | default | allowed | meaning |", "|---|---|---|---|---|"]
        for f in section_fields(section):
            allowed = f.choices_text() if f.choices else (f.range_text() if f.lo is not None else "")
            meaning = f.help + (f" (unit: {f.unit})" if f.unit else "")
            if f.depends:
                meaning += f"; only with {f.depends[0]} = {' or '.join(f.depends[1])}"
            default = getattr(defaults[section], f.name)
            lines.append(f"| `{f.name}` | {f.label} | `{default!r}` | {allowed} | {meaning.replace('|', '∣')} |")
        lines.append("")
    return "\n".join(lines)


def write_markdown(path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(markdown(), encoding="utf-8")
    os.replace(tmp, path)


if __name__ == "__main__":
    write_markdown(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/config-fields.md"))
