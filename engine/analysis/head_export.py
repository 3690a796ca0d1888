"""Head scores for people and files: the table `gpt-explorer heads` prints, and `export --what heads`
(the timeline as CSV, or as a heads × steps figure per score above the loss curve, sharing its step axis).

Figures use matplotlib's object API through engine.figures.export (never pyplot), so they run off the GUI thread.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ..errors import UserError
from .head_roles import ROLE_NAMES, THRESHOLDS
from .head_timeline import HeadTimeline
from .heads import SCORES

# the scores drawn when no one score is asked for: the ones with roles, and what a head is worth
FIGURE_SCORES = ("previous_token", "induction", "duplicate", "first_token", "copying", "ablation")
KINDS = {"copying": "signed", "ablation": "signed", "dla": "signed", "distance": "sequential",
         "entropy": "sequential"}  # the rest are fractions of attention: "probability", levels [0, 1]


def head_rows(timeline: HeadTimeline) -> list[dict]:
    """One dict per head at the timeline's last step: layer, head, every score, and its roles with the step
    each formed at ("induction from 650")."""
    L, H = timeline.values[SCORES[0]].shape[1:]
    roles: dict[tuple[int, int], list[str]] = {}
    for r in timeline.roles():
        roles.setdefault((r.layer, r.head), []).append(f"{ROLE_NAMES[r.score]} from {r.formed}")
    return [{"layer": layer, "head": head,
             **{name: float(timeline.values[name][-1, layer, head]) for name in SCORES},
             "roles": "; ".join(roles.get((layer, head), []))}
            for layer in range(L) for head in range(H)]


def format_csv(rows: Sequence[Mapping]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["layer", "head", *SCORES, "roles"])
    for r in rows:
        w.writerow([r["layer"], r["head"], *(repr(r[name]) for name in SCORES), r["roles"]])
    return buf.getvalue()


def format_text(rows: Sequence[Mapping], timeline: HeadTimeline) -> str:
    """A table of every head's scores at the last step, then the role labels and how they are decided."""
    step = timeline.steps[-1]
    names = {"previous_token": "prev", "induction": "induct", "duplicate": "dup", "first_token": "first",
             "distance": "dist", "entropy": "entropy", "copying": "copy", "ablation": "ablate", "dla": "dla"}
    lines = [f"head scores at step {step} (probe loss {timeline.loss[-1]:.4f}; {len(timeline.steps)} saved steps)",
             "layer head " + " ".join(f"{names[n]:>7}" for n in SCORES)]
    for r in rows:
        lines.append(f"{r['layer']:5d} {r['head']:4d} " + " ".join(f"{r[n]:7.3f}" for n in SCORES))
    labels = [r.label for r in timeline.roles()]
    lines += ["", "roles:" if labels else "roles: none"] + [f"  {label}" for label in labels]
    lines.append("thresholds: " + ", ".join(f"{ROLE_NAMES[n]} ≥ {t}" for n, t in THRESHOLDS.items())
                 + "; a role formed at the first saved step from which it stays above")
    lines.append("ablate: probe loss with the head's output replaced by its mean over the probe's positions, "
                 "minus the loss; dla: its direct logit attribution to the targets")
    lines.append(timeline.ablation)
    if timeline.induction_derived:
        lines.append("note: this run predates stored induction probes; the probe was derived from its seed")
    return "\n".join(lines) + "\n"


def save_timeline_csv(path: str | Path, timeline: HeadTimeline) -> Path:
    """Long format: one line per saved step and head, every score, and the probe loss at that step."""
    L, H = timeline.values[SCORES[0]].shape[1:]
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["step", "layer", "head", *SCORES, "probe_loss", "ablation_note"])
        for k, step in enumerate(timeline.steps):
            for layer in range(L):
                for head in range(H):
                    w.writerow([step, layer, head, *(repr(float(timeline.values[n][k, layer, head])) for n in SCORES),
                                repr(float(timeline.loss[k])), timeline.ablation])
    return Path(path)


def timeline_figure(timeline: HeadTimeline, metrics: Sequence[Mapping], scores: Sequence[str] = FIGURE_SCORES):
    """One heads × steps panel per score (rows "L0 H0" …, colour the score) above the loss curve."""
    from matplotlib.figure import Figure

    from ..figures.export import COLORMAPS, levels_for, loss_table

    steps = np.asarray(timeline.steps, dtype=np.float64)
    edges = _edges(steps)
    L, H = timeline.values[scores[0]].shape[1:]
    fig = Figure(figsize=(8, 1.2 + 0.18 * L * H * len(scores) + 2.2), layout="constrained")
    axes = fig.subplots(len(scores) + 1, 1, sharex=True,
                        gridspec_kw={"height_ratios": [max(L * H, 4)] * len(scores) + [max(L * H, 4) * 0.9]})
    for ax, name in zip(axes, scores):
        a = timeline.values[name].reshape(len(steps), L * H).T  # (heads, steps)
        kind = KINDS.get(name, "probability")
        lo, hi = levels_for(a, kind)
        mesh = ax.pcolormesh(edges, np.arange(L * H + 1) - 0.5, a, cmap=COLORMAPS[kind], vmin=lo, vmax=hi)
        ax.set_ylim(L * H - 0.5, -0.5)
        ax.set_yticks(range(L * H), [f"L{i // H} H{i % H}" for i in range(L * H)], fontsize=6)
        ax.set_title(name.replace("_", " "), fontsize=9, loc="left")
        if name == "ablation" and timeline.ablation:
            ax.set_title(timeline.ablation, fontsize=6, loc="right")
        fig.colorbar(mesh, ax=ax, pad=0.01)
    loss_ax = axes[-1]
    table = loss_table(metrics) if metrics else None
    if table is not None:
        loss_ax.plot(table["step"], table["train_loss"], lw=1, label="train")
    loss_ax.plot(steps, timeline.loss, "o-", ms=3, label="probe batch")
    loss_ax.set_xlabel("step")
    loss_ax.set_ylabel("loss")
    loss_ax.grid(alpha=0.3)
    loss_ax.legend(fontsize=7)
    return fig


def export_heads(path: str | Path, timeline: HeadTimeline, metrics: Sequence[Mapping],
                 score: str | None = None) -> Path:
    """.csv: the whole timeline (save_timeline_csv); .png .svg .pdf: timeline_figure (one score if given)."""
    from ..figures.export import FIGURE_FORMATS, format_of, save_figure

    fmt = format_of(path, FIGURE_FORMATS + ("csv",))
    if score is not None and score not in SCORES:
        raise UserError(f"unknown head score {score!r}; choose one of {', '.join(SCORES)}")
    if fmt == "csv":
        return save_timeline_csv(path, timeline)
    return save_figure(timeline_figure(timeline, metrics, (score,) if score else FIGURE_SCORES), path)


def _edges(steps: np.ndarray) -> np.ndarray:
    """Cell edges halfway between saved steps (one step either side of a lone step)."""
    if steps.size == 1:
        return np.array([steps[0] - 0.5, steps[0] + 0.5])
    mid = (steps[1:] + steps[:-1]) / 2
    return np.concatenate([[2 * steps[0] - mid[0]], mid, [2 * steps[-1] - mid[-1]]])
