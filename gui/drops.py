"""Files dropped on the main window: a run folder opens, a config file (.toml) goes into the builder, and
any other file is taken as a text corpus for the builder's config. One message says what was done.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from engine.configs.config import ExperimentConfig
from engine.errors import UserError
from engine.rundir.listing import is_run


def kind_of(path: Path) -> str | None:
    """run | config | corpus, or None for what cannot be used (a folder that is not a run)."""
    if path.is_dir():
        return "run" if is_run(path) else None
    if path.name == "config.toml" and is_run(path.parent):
        return "run"
    if path.suffix.lower() == ".toml":
        return "config"
    return "corpus" if path.is_file() else None


def usable(paths: list[Path]) -> list[Path]:
    return [p for p in paths if kind_of(p) is not None]


def drop(window, paths: list[Path]) -> None:
    """Act on the first usable path (a drop of several uses the first and says so)."""
    paths = usable(paths)
    if not paths:
        window.session.post_message("Drop a run folder, a config file (.toml) or a text corpus.", "info")
        return
    path, kind = paths[0], kind_of(paths[0])
    session = window.session
    if kind == "run":
        window.open_run(path if path.is_dir() else path.parent)
        return
    try:
        if kind == "config":
            session.set_config(ExperimentConfig.load(path))
            text = f"Loaded the config {path.name} into the builder; Train starts a new run with it."
        else:
            from engine.text.corpus import read_text_file

            read_text_file(path)  # a file that is not UTF-8 text is refused now, not at Train
            cfg = session.config
            session.set_config(cfg.replace(data=dataclasses.replace(cfg.data, corpus=str(path.resolve()))))
            text = f"The builder's corpus is now {path.name}; Train starts a new run on it."
    except UserError as e:
        session.post_message(f"Cannot use {path.name}: {e}")
        return
    if len(paths) > 1:
        text += f" ({len(paths) - 1} more dropped file(s) ignored.)"
    session.post_message(text, "info")
