"""matplotlib's colour maps as tables of 256 colours, so the screen draws the maps the exports draw without
importing matplotlib in the app's process (pyqtgraph's `getFromMatplotlib` imports pyplot: 45 MB there).

The tables live in resources/colormaps.json as hex colours, one list per map; `CHOICES` are the maps the app
offers, as the heatmap menu lists them (the heatmap kinds' own, `export.COLORMAPS`, among them). Exports keep
drawing with matplotlib by name, and a test checks that every table equals matplotlib's, so the two cannot drift
apart. When a map is added, `python -m engine.figures.colormap_tables` writes the file again from matplotlib.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np

CHOICES = (("viridis", "viridis"), ("magma", "magma"), ("cividis", "cividis"), ("greys", "Greys"),
           ("red–blue", "RdBu_r"), ("cool–warm", "coolwarm"))  # (label, matplotlib name)
NAMES = tuple(name for _, name in CHOICES)
ENTRIES = 256  # matplotlib's own resolution for these maps
FILE = "colormaps.json"


@cache
def _tables() -> dict[str, list[str]]:
    return json.loads((resources.files("resources") / FILE).read_text(encoding="utf-8"))


def table(name: str) -> np.ndarray:
    """(ENTRIES, 3) uint8 RGB, from the low end of the map to the high end."""
    tables = _tables()
    if name not in tables:
        raise ValueError(f"unknown colour map {name!r}; one of {', '.join(tables)}")
    return np.frombuffer(bytes.fromhex("".join(tables[name])), dtype=np.uint8).reshape(-1, 3).copy()


def from_matplotlib(name: str) -> np.ndarray:
    """matplotlib's map `name` sampled at its ENTRIES colours, as `table` stores it."""
    import matplotlib

    rgba = matplotlib.colormaps[name].resampled(ENTRIES)(np.arange(ENTRIES))
    return np.round(rgba[:, :3] * 255).astype(np.uint8)


def write(path: Path) -> None:
    rows = [f"{json.dumps(name)}: {json.dumps([bytes(rgb).hex() for rgb in from_matplotlib(name)])}"
            for name in NAMES]
    path.write_text("{\n" + ",\n".join(rows) + "\n}\n", encoding="utf-8")


if __name__ == "__main__":
    write(Path(str(resources.files("resources") / FILE)))
