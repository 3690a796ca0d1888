"""Named experiment presets shipped in resources/presets (docs/command-line.md#presets)."""

from __future__ import annotations

from importlib import resources

from .config import ConfigError, ExperimentConfig

DEFAULT_PRESET = "tiny"


def _folder():
    return resources.files("resources") / "presets"


def preset_names() -> list[str]:
    return sorted(p.name.removesuffix(".toml") for p in _folder().iterdir() if p.name.endswith(".toml"))


def load_preset(name: str) -> ExperimentConfig:
    names = preset_names()
    if name not in names:
        raise ConfigError(f"unknown preset {name!r}; choose one of {', '.join(names)}")
    return ExperimentConfig.from_toml((_folder() / f"{name}.toml").read_text(encoding="utf-8"))
