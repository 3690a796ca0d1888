"""Telling a caller which stage an import is at: `progress(done, total, stage)` before each of its stages, so
the app can show it (GPT-2 small's import takes half a minute) and the command line can stay silent."""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[int, int, str], None]


def stages(names: tuple[str, ...], progress: Progress | None) -> Callable[[], None]:
    """A function that tells `progress` the next of `names` each time it is called (nothing when None)."""
    done = iter(range(len(names)))

    def say() -> None:
        if progress is not None:
            k = next(done)
            progress(k, len(names), names[k])

    return say
