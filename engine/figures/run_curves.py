"""Curves of several runs overlaid: their logged metrics against step, tokens seen or wall time, with
TensorBoard's smoothing (engine/figures/smoothing.py) for the noisy ones, and the figure and data to export.

A run's curves come from its metrics.jsonl and config.toml alone (tokens per step = batch_size × n_ctx),
so any number of runs overlay without building a model. The figure is matplotlib's object API as in
engine/figures/export.py: one panel per metric, run i in the series colour i that Run curves draws it in on
the screen (engine/figures/palette.py), and one legend beside the panels naming each run in full. The data is CSV in
long form (one line per run and logged step), since runs log different steps.

`CurvesReader` is what the GUI's analysis process keeps (engine/analysis/questions.py `RunCurvesOf`): the
curves of the runs read so far with the stamp of what they were read from (size and mtime of metrics.jsonl
and config.toml), so a run is read again only when its log changed, and the asker is sent only the runs
whose stamp differs from the one it holds.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import os
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .export import csv_cell
from .palette import color_of
from ..configs.config import ConfigError, ExperimentConfig
from ..errors import UserError
from ..rundir.runs import CONFIG, METRICS, RunError, atomic_write_text, read_jsonl
from .smoothing import ema

# Bits per character beside the losses: runs with other tokenizers compare on them, not on loss per token.
METRIC_LABELS = {"train_loss": "train loss", "val_loss": "validation loss",
                 "train_bpc": "train bits per character", "val_bpc": "validation bits per character",
                 "lr": "learning rate", "tokens_per_s": "tokens/s"}
AXIS_LABELS = {"step": "step", "tokens": "tokens seen", "wall_s": "wall time (s)"}
INTEGER_COLUMNS = ("step", "tokens")  # written "120", not "120.0"
SMOOTHED = ("train_loss", "train_bpc", "tokens_per_s")  # logged every step and noisy; validation is sparse


@dataclass(frozen=True)
class RunCurves:
    """One run's logged metrics as columns (NaN where a row has none)."""

    name: str
    path: Path
    columns: dict[str, np.ndarray]  # step, tokens, wall_s and every METRIC_LABELS key
    noise: str | None = None        # engine.training.determinism.noise_note: the run did not train to the bit

    def series(self, metric: str, axis: str = "step", smoothing: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """x and y where y is finite, y smoothed when the metric is a noisy one."""
        y = self.columns[metric]
        if smoothing and metric in SMOOTHED:
            y = ema(y, smoothing)
        ok = np.isfinite(y) & np.isfinite(self.columns[axis])
        return self.columns[axis][ok], y[ok]


def load_curves(path: str | Path, name: str | None = None) -> RunCurves:
    """A run's curves; a run that has not logged a step yet has empty columns. Reads config.toml and
    metrics.jsonl only (a `Run` would read its samples too), as a live run's curves are read again and again."""
    path = Path(path)
    try:
        cfg = ExperimentConfig.load(path / CONFIG)
    except ConfigError as e:
        raise RunError(f"{path} is not a run that can be drawn: {e}") from None
    from ..training.determinism import noise_note

    curves = curves_from_rows(read_jsonl(path / METRICS)[0], name or path.name, path,
                              cfg.train.batch_size * cfg.model.n_ctx)
    return dataclasses.replace(curves, noise=noise_note(path))


def curves_from_rows(rows: Sequence[dict], name: str, path: Path, tokens_per_step: int) -> RunCurves:
    def column(key):
        return np.array([math.nan if not isinstance(r.get(key), (int, float)) else float(r[key]) for r in rows])

    cols = {key: column(key) for key in ("step", "wall_s", *METRIC_LABELS)}
    cols["tokens"] = cols["step"] * tokens_per_step
    return RunCurves(name, Path(path), cols)


Stamp = tuple[int, ...]


def stamp(path: str | Path) -> Stamp:
    """What a run's curves are read from, as (size, mtime) of metrics.jsonl and config.toml (-1: missing)."""
    out: list[int] = []
    for name in (METRICS, CONFIG):
        try:
            st = os.stat(Path(path) / name)
            out += [st.st_size, st.st_mtime_ns]
        except OSError:
            out += [-1, -1]
    return tuple(out)


class CurvesReader:
    """Runs' curves kept with their stamps (the most recent `keep` runs asked for); `reads` counts the logs
    actually read (tests)."""

    def __init__(self, keep: int = 64):
        self.keep, self.reads = keep, 0
        self._kept: OrderedDict[str, tuple[Stamp, RunCurves | str]] = OrderedDict()

    def get(self, path: str) -> tuple[Stamp, RunCurves | str]:
        """(stamp, curves) of the run at `path`, read again only when its stamp changed; a run that cannot
        be drawn gives its one-line reason in place of the curves."""
        now = stamp(path)
        kept = self._kept.pop(path, None)
        if kept is None or kept[0] != now:
            self.reads += 1
            try:
                kept = (now, load_curves(path))
            except UserError as e:
                kept = (now, str(e))
        self._kept[path] = kept
        while len(self._kept) > self.keep:
            self._kept.popitem(last=False)
        return kept

    def changed(self, paths: Sequence[str], known: dict[str, Stamp]) -> dict[str, tuple[Stamp, RunCurves | str]]:
        """{path: (stamp, curves or reason)} for the paths whose stamp is not the one in `known`."""
        out = {}
        for path in paths:
            got = self.get(path)
            if known.get(path) != got[0]:
                out[path] = got
        return out


def overlay_figure(curves: Sequence[RunCurves], axis: str = "step", smoothing: float = 0.0,
                   metrics: Sequence[str] = tuple(METRIC_LABELS)):
    """One panel per metric, each run in its series colour, raw train loss faint behind its smoothed line;
    the legend stands right of the panels, outside them, so it covers no curve and no name is cut."""
    from matplotlib.figure import Figure

    cols = 2 if len(metrics) > 1 else 1
    rows = math.ceil(len(metrics) / cols)
    fig = Figure(figsize=(5.5 * cols + 2.5, 3.4 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, metric in zip(axes, metrics):
        for i, c in enumerate(curves):
            colour = color_of(i)
            if smoothing and metric in SMOOTHED:
                ax.plot(*c.series(metric, axis), lw=0.8, alpha=0.25, color=colour)
            style = dict(marker="o", ms=3) if metric.startswith("val_") else {}
            ax.plot(*c.series(metric, axis, smoothing), lw=1.2, color=colour, label=c.name, **style)
        ax.set_title(METRIC_LABELS[metric])
        ax.set_xlabel(AXIS_LABELS[axis])
        ax.grid(alpha=0.3)
    for ax in axes[len(metrics):]:
        ax.set_visible(False)
    if curves:
        fig.legend(*axes[0].get_legend_handles_labels(), loc="outside right upper", fontsize="small")
    return fig


def save_overlay_table(path: str | Path, curves: Sequence[RunCurves], smoothing: float = 0.0) -> Path:
    """CSV, long form: run, step, tokens, wall_s, every metric, and the smoothed ones at `smoothing`."""
    smoothed = {id(c): {m: ema(c.columns[m], smoothing) for m in SMOOTHED} for c in curves}
    header = ["run", "step", "tokens", "wall_s", *METRIC_LABELS, *(f"{m}_smoothed" for m in SMOOTHED)]
    out = io.StringIO(newline="")
    w = csv.writer(out)
    w.writerow(header)
    for c in curves:
        for i in range(len(c.columns["step"])):
            values = [c.columns[k][i] for k in header[1:-len(SMOOTHED)]]
            values += [smoothed[id(c)][m][i] for m in SMOOTHED]
            w.writerow([c.name] + ["" if math.isnan(v) else csv_cell(int(v) if k in INTEGER_COLUMNS else v)
                                   for k, v in zip(header[1:], values)])
    atomic_write_text(Path(path), out.getvalue())  # never a half-written table under the name asked for
    return Path(path)
