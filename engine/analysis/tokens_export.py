"""`export --what tokens`: a coefficient read in tokens (tokens.py, docs/readings.md#in-tokens) as data or a
figure. Pure functions of the readings, no Qt.

    .csv   one row per saved step (only --step's when given), part (G, ΔW, each route class), direction
           (toward / away), rank and token: step, prev_step, part, direction, rank, token_id, token, value —
           a writer's value is the push (the change of the probe's mean logits along the part), a reader's
           the summed imprints of the probe's positions holding that token
    .npy   at the step: a writer's push of G over the vocabulary (V,), or a reader's imprints of G by probe
           position (B, T)
    .png .svg .pdf   at the step, the tokens of G, of ΔW and of the largest classes as bars; below them, over
           the saved steps, G's leading tokens as a heat map
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..figures import export
from .tokens import UPDATE, WHOLE, TokenReading

FORMATS = export.FIGURE_FORMATS + export.DATA_FORMATS
COLUMNS = ("step", "prev_step", "part", "direction", "rank", "token_id", "token", "value")
PANELS = 6          # parts drawn as bars: G, ΔW and the largest classes
TIMELINE_TOKENS = 12


def rows(readings: list[TokenReading]) -> list[tuple]:
    """The CSV's rows in COLUMNS order."""
    out = []
    for r in readings:
        for part in r.parts:
            rk = r.ranks[part]
            for direction, items in (("toward", rk.toward), ("away", rk.away)):
                for rank, (tid, value) in enumerate(items, 1):
                    out.append((r.step, "" if r.prev_step is None else r.prev_step, part, direction, rank, tid,
                                r.names[tid], value))
    return out


def _write_csv(path: Path, table: list[tuple]) -> None:
    import csv

    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(COLUMNS)
        w.writerows([[*row[:-1], repr(float(row[-1]))] for row in table])


def reading_figure(r: TokenReading, timeline: list[TokenReading] | None = None):
    """Bars of the leading tokens of G, ΔW and the largest classes; G's leading tokens over training below."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    classes = sorted((p for p in r.parts if p not in (WHOLE, UPDATE)), key=lambda p: -r.norms[p])
    parts = [p for p in (WHOLE, UPDATE) if p in r.parts] + classes[:PANELS - 2]
    over = timeline is not None and len(timeline) > 1
    fig = Figure(figsize=(4.2 * min(len(parts), 3), 3.6 * (-(-len(parts) // 3)) + (3.4 if over else 0)),
                 layout="constrained")
    grid = fig.add_gridspec(-(-len(parts) // 3) + (1 if over else 0), min(len(parts), 3))
    unit = "push (mean logit change)" if r.role != "reader" else "imprint (share of G)"
    for k, part in enumerate(parts):
        ax = fig.add_subplot(grid[k // 3, k % 3])
        rk = r.ranks[part]
        items = list(rk.toward[:8]) + list(reversed(rk.away[:8]))
        labels = [export.escape_text(r.names[t]) for t, _ in items]
        values = [v for _, v in items]
        ax.barh(range(len(items)), values, color=["#b2182b" if v > 0 else "#2166ac" for v in values])
        ax.set_yticks(range(len(items)), labels, fontsize=7)
        ax.invert_yaxis()
        ax.axvline(0, color="0.5", lw=0.6)
        name = {WHOLE: "G", UPDATE: f"ΔW (steps {r.prev_step} → {r.step})"}.get(part, f"class {part}")
        ax.set_title(f"{name} · ‖·‖ {r.norms[part]:.3g}", fontsize=8)
        ax.set_xlabel(unit, fontsize=7)
        ax.tick_params(axis="x", labelsize=7)
        ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.ticklabel_format(axis="x", style="sci", scilimits=(-2, 3))
    if over:
        ax = fig.add_subplot(grid[-1, :])
        ids, table = timeline_table(timeline)
        lo, hi = export.levels_for(table, "signed")
        im = ax.imshow(table, cmap=export.COLORMAPS["signed"], vmin=lo, vmax=hi, aspect="auto",
                       interpolation="nearest")
        ax.set_yticks(range(len(ids)), [export.escape_text(timeline[-1].names.get(t) or _name(timeline, t))
                                         for t in ids], fontsize=7)
        steps = [t.step for t in timeline]
        shown = range(0, len(steps), export.label_step(len(steps), 16))
        ax.set_xticks(list(shown), [str(steps[i]) for i in shown], fontsize=7)
        ax.set_xlabel("saved step")
        ax.set_title(f"G's leading tokens over training ({unit})", fontsize=8)
        fig.colorbar(im, ax=ax, shrink=0.8)
    fig.suptitle(export.escape_text(f"{r.weight} in tokens · step {r.step} · {r.how}"), fontsize=8)
    return fig


def _name(readings: list[TokenReading], tid: int) -> str:
    return next(r.names[tid] for r in readings if tid in r.names)


def timeline_table(readings: list[TokenReading], n: int = TIMELINE_TOKENS) -> tuple[list[int], np.ndarray]:
    """(token ids, (tokens, steps) values of G): the tokens that lead G toward most often over the steps, and
    their values at every step (a writer's push; a reader's summed imprints; NaN where not ranked)."""
    count: dict[int, float] = {}
    for r in readings:
        for t, v in r.ranks[WHOLE].toward:
            count[t] = count.get(t, 0.0) + abs(v)
    ids = sorted(count, key=lambda t: -count[t])[:n]
    table = np.full((len(ids), len(readings)), np.nan)
    for j, r in enumerate(readings):
        full = r.by_token()
        ranked = dict(r.ranks[WHOLE].toward + r.ranks[WHOLE].away)
        for i, t in enumerate(ids):
            table[i, j] = full[t] if full is not None else ranked.get(t, np.nan)
    return ids, table


def export_tokens(path: str | Path, readings: list[TokenReading], step: int) -> Path:
    """Write the reading (module docstring); `readings` every step the CSV and the figure's timeline cover,
    `step` the one the .npy and the bars show."""
    fmt = export.format_of(path, FORMATS)
    path = Path(path)
    at = next(r for r in readings if r.step == step)
    if fmt == "csv":
        _write_csv(path, rows(readings))
    elif fmt == "npy":
        np.save(path, at.push[WHOLE] if at.role != "reader" else at.imprints[WHOLE].reshape(at.probe_shape))
    else:
        export.save_figure(reading_figure(at, readings), path)
    return path


def export_run_tokens(path: str | Path, run_dir: str | Path, weight: str, step: int | None = None,
                      progress=None) -> Path:
    """The command line's and the Weight pane's export of a run's reading in tokens (module docstring): the .npy,
    and a .csv with `step` given, hold that step alone; otherwise the CSV and the figure cover the saved steps up
    to it, each reported to `progress(done, total)` as it is read (engine/progress.py's report too)."""
    from .run_analysis import RunAnalysis

    a = RunAnalysis(run_dir)
    at = a.tokens(weight, step)  # checks the name and the step first
    suffix = Path(path).suffix.lower()
    if suffix == ".npy" or suffix == ".csv" and step is not None:
        return export_tokens(path, [at], at.step)
    return export_tokens(path, a.token_timeline(weight, progress=progress, upto=at.step), at.step)


__all__ = ["FORMATS", "COLUMNS", "rows", "reading_figure", "timeline_table", "export_tokens", "export_run_tokens"]
