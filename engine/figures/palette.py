"""The app's series palette: one colour per run in Run curves and in its exported figure and TikZ, per part in
the Weight pane's charts and list. One list, read by the screen (gui.theme) and by the files
(engine/figures/run_curves.py, run_curves_tex.py), so that run i has the same colour on the screen and on paper.

Tableau 10 (Tableau's 2016 palette; matplotlib's default cycle is the older one, whose hues differ):
pyqtgraph's own hues made three runs red, orange and yellow.
"""

from __future__ import annotations

SERIES = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
          "#bab0ac")


def color_of(index: int) -> str:
    """The series colour of the index-th run or part (#rrggbb), repeating after ten."""
    return SERIES[index % len(SERIES)]
