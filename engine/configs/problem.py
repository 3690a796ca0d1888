"""`Problem`: one thing wrong with a config, attached to the field it belongs to so the builder can show it
beside that field. The configs' own checks (engine/configs/config.py) and the machine's (engine/configs/limits.py)
both report them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a config, attached to the field (``section.name``) it belongs to."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"
