"""Exports of a weight's coefficient (issue 7), pure functions on a CoefficientStore, no Qt.

By the file's suffix: .npy G at one step (the weight's own shape); .png .svg .pdf its heatmap at that step;
.csv the norms over every saved step (‖G‖, autograd's ‖grad‖, the agreement, each route class and term,
and the optimizer's update: ‖ΔW‖, cos(ΔW, G), ‖ΔW‖/‖G‖); .gif .mp4 an animation of G over the saved steps
through matplotlib's writers (Pillow for GIF, ffmpeg for MP4), with one colour scale for every frame.
`save_stack` writes G at every step as one (steps, *shape) array.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..figures import export
from ..errors import UserError
from . import as_matrix

ANIMATION_FORMATS = ("gif", "mp4")
FORMATS = export.FIGURE_FORMATS + export.DATA_FORMATS + ANIMATION_FORMATS
FPS = 8

Progress = Callable[[int, int], None]  # (frames done, frames in all)


def axis_titles(weight: str) -> tuple[str, str]:
    """(row title, column title) of a weight as stored: x @ W reads rows as inputs, columns as outputs."""
    short = weight.rsplit(".", 1)[-1]
    if weight == "W_E":
        return "token", "dimension"
    if weight == "W_P":
        return "position", "dimension"
    if weight == "W_U":
        return "dimension", "token"
    if short in ("W_Q", "W_K", "W_V"):
        return "input dimension", "head · d_k + output"
    if short == "W_O":
        return "head · d_k + input", "output dimension"
    if short in ("b_Q", "b_K", "b_V"):
        return "", "head · d_k + output"
    if short.startswith("W_"):
        return "input", "output"
    return "", "index"


def title(weight: str, step: int, part: str | None = None) -> str:
    what = "G" if part is None else f"G [{part}]"
    return f"{what} of {weight} · step {step}"


def check_step(store, step: int | None) -> int:
    steps = store.steps()
    if not steps:
        raise UserError(f"{store.run.path} has no saved weights yet")
    if step is None:
        return steps[-1]
    if step not in steps:
        shown = ", ".join(map(str, steps[:10])) + (" …" if len(steps) > 10 else "")
        raise UserError(f"no weights saved at step {step}; saved steps: {shown}")
    return step


def check_weight(store, weight: str | None) -> str:
    names = store.weight_names()
    if weight not in names:
        head = "--weight is required" if weight is None else f"no weight {weight!r}"
        raise UserError(f"{head}; this model's weights: {', '.join(names)}")
    return weight


def export_coefficient(path: str | Path, store, weight: str, step: int | None = None,
                       progress: Progress | None = None, part: str | None = None) -> Path:
    """Write `weight`'s coefficient to path, the format from its suffix (module docstring)."""
    fmt = export.format_of(path, FORMATS)
    weight = check_weight(store, weight)
    path = Path(path)
    if fmt == "csv":
        return export.save_table(path, store.norms_table(weight))
    if fmt in ANIMATION_FORMATS:
        return save_animation(path, store, weight, progress=progress, part=part)
    step = check_step(store, step)
    matrix = store.record(weight, step).part(part)
    if fmt == "npy":
        np.save(path, matrix)
        return path
    rows, cols = axis_titles(weight)
    return export.save_figure(export.matrix_figure(as_matrix(matrix), kind="signed", title=title(weight, step, part),
                                                   row_title=rows, col_title=cols), path)


def save_stack(path: str | Path, store, weight: str, part: str | None = None) -> Path:
    """NPY: G (or one class or term) at every saved step, stacked (steps, *shape), in step order."""
    export.format_of(path, ("npy",))
    np.save(path, store.stack(check_weight(store, weight), part=part))
    return Path(path)


def export_run_coefficient(path: str | Path, run_dir: str | Path, weight: str, step: int | None = None,
                           part: str | None = None, stack: bool = False) -> Path:
    """The Weight pane's export of a run's coefficient, written where it runs (the app's export process): the
    run's store is opened there, reads the records the pane's analysis process cached on disk and computes the
    rest; an animation reports its frames (report_progress), which is where a cancel stops it. `stack`: the
    NPY of every saved step (save_stack); otherwise `export_coefficient` by the suffix."""
    from ..rundir.runs import Run
    from .cache import CoefficientStore

    store = CoefficientStore(Run(run_dir))
    if stack:
        return save_stack(path, store, weight, part)
    return export_coefficient(path, store, weight, step,
                              lambda done, total: export.report_progress(done, total, "frames"), part)


def mp4_available() -> bool:
    """Whether an MP4 can be written: matplotlib's writer runs ffmpeg (rcParams animation.ffmpeg_path),
    looked up as its FFMpegWriter.isAvailable does, without importing matplotlib.animation (a second)."""
    import shutil

    import matplotlib

    return shutil.which(str(matplotlib.rcParams["animation.ffmpeg_path"])) is not None


def writer_for(fmt: str, fps: int = FPS):
    from matplotlib import animation

    if fmt == "gif":
        return animation.PillowWriter(fps=fps)
    if not mp4_available():
        raise UserError("MP4 needs ffmpeg, which is not installed (matplotlib's writer runs it): "
                        "install ffmpeg, or export a .gif")
    return animation.FFMpegWriter(fps=fps)


def save_animation(path: str | Path, store, weight: str, steps: list[int] | None = None,
                   progress: Progress | None = None, part: str | None = None, fps: int = FPS) -> Path:
    """An animation of G over the saved steps, one frame per step, one symmetric colour scale."""
    fmt = export.format_of(path, ANIMATION_FORMATS)
    writer = writer_for(fmt, fps)
    steps = store.steps() if steps is None else steps
    if not steps:
        raise UserError(f"{store.run.path} has no saved weights yet")
    total = 2 * len(steps)  # computing each frame, then drawing it
    frames = []
    for i, s in enumerate(steps):
        frames.append(as_matrix(store.record(weight, s).part(part)))
        if progress:
            progress(i + 1, total)
    levels = export.levels_for(np.stack(frames), "signed")
    rows, cols = axis_titles(weight)
    fig = export.matrix_figure(frames[0], kind="signed", title=title(weight, steps[0], part), row_title=rows,
                               col_title=cols, levels=levels)
    fig.set_dpi(100)
    ax = fig.axes[0]
    image = ax.images[0]
    with writer.saving(fig, str(path), dpi=100):
        for i, (s, frame) in enumerate(zip(steps, frames)):
            image.set_data(export.display_matrix(frame))
            ax.set_title(title(weight, s, part))
            writer.grab_frame()
            if progress:
                progress(len(steps) + i + 1, total)
    return Path(path)


__all__ = ["FORMATS", "ANIMATION_FORMATS", "axis_titles", "title", "check_step", "check_weight",
           "export_coefficient", "export_run_coefficient", "save_stack", "save_animation", "writer_for"]
