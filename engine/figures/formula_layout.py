"""Formulas laid out for the screen and for snapshots: LaTeX lines no wider than a width, and their pixels.

The printers (printing/latex.py) write one long line and matplotlib's mathtext cannot break one, so a
formula too wide for its space is cut at its products' thin spaces ``\\,`` and its sums' signs, outside any
braces, and packed greedily into lines; continuation lines are indented. Brackets that would be split
across lines are written plainly (``[`` instead of ``\\left[``: a ``\\left`` must close on its own line).
Widths are measured with mathtext itself, piece by piece (pieces recur between formulas, and their
measures are cached). `render` turns lines into an RGBA array with mathtext's Agg rasteriser (no figure, no
usetex); `lay_out_formula` says how tall that image will be before it is drawn, from the same measures (a
formula that fits on one line is drawn to be measured, and the drawing kept for its image). Everything here
holds one lock around matplotlib's parsers, so an
export and a renderer may run on two threads. The module imports neither torch nor the forms engine, so
`render_formula` is cheap to run in a separate process (the forms pane renders there: mathtext's parser is
pure Python and would hold the interpreter lock the GUI thread needs).
"""

from __future__ import annotations

import functools
import math
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

CONTINUATION = r"\quad\quad "
PAD = 2           # pixels around a rendered formula
SLOT_SLACK = 3    # pixels a laid-out line has beyond its measured height: mathtext's ink may exceed it by one
INKS = 256        # drawn lines kept (a line's ink is a few tens of kB)
_LOCK = threading.Lock()
_BRACKETS = ((r"\left[", "["), (r"\right]", "]"), (r"\left(", "("), (r"\right)", ")"))
_SIGN = re.compile(r" [+-] ")


class FormulaError(ValueError):
    """mathtext could not read a formula (shown as text instead)."""


def loosen(tex: str) -> str:
    """The formula with plain brackets, so a line may end inside one."""
    for a, b in _BRACKETS:
        tex = tex.replace(a, b)
    return tex


def chunks(tex: str) -> list[str]:
    """Pieces a line may break between: at ``\\,`` and before a sum's sign, outside braces."""
    out, depth, start, i = [], 0, 0, 0
    while i < len(tex):
        ch = tex[i]
        if ch == "\\" and tex.startswith(r"\,", i) and depth == 0:
            out.append(tex[start:i])
            i += 2
            start = i
            continue
        if ch == "\\" and i + 1 < len(tex):
            i += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif depth == 0 and _SIGN.match(tex, i - 1 if i else 0) and ch in "+-" and i > start:
            out.append(tex[start:i - 1])
            start = i
        i += 1
    out.append(tex[start:])
    return [c.strip() for c in out if c.strip()]


@functools.lru_cache(maxsize=20_000)
def extent(tex: str, fontsize: float = 12.0) -> tuple[float, float, float]:
    """The formula's width, height above the baseline and depth below it, in points (1/72 inch)."""
    from matplotlib.font_manager import FontProperties

    with _LOCK:
        try:
            got = _parser("path").parse(f"${tex}$", dpi=72, prop=FontProperties(size=fontsize))
        except ValueError as e:
            raise FormulaError(f"mathtext cannot read {tex[:80]!r}: {str(e).splitlines()[0]}") from None
    return float(got.width), float(got.height), float(got.depth)


def width(tex: str, fontsize: float = 12.0) -> float:
    """The formula's width in points at this font size."""
    return extent(tex, fontsize)[0]


def line_height(line: str, whole: str, fontsize: float = 12.0) -> float:
    """The height plus depth in points of one line `wrap` made of the formula `whole`, from the extents of
    its pieces (`wrap` measured them already): a box's height and depth are those of its tallest and
    deepest parts. A line that is the whole formula is measured as it is."""
    if line == whole:
        parts = [line]
    else:
        parts = chunks(line.removeprefix(CONTINUATION))
    sizes = [extent(p, fontsize) for p in parts]
    return max(h for _, h, _ in sizes) + max(d for _, _, d in sizes)


@functools.cache
def _parser(kind: str):
    from matplotlib.mathtext import MathTextParser

    return MathTextParser(kind)


def wrap(tex: str, max_width: float, fontsize: float = 12.0,
         whole_width: Callable[[str, float], float] | None = None) -> list[str]:
    """Lines of at most `max_width` points (a single piece wider than that keeps a line of its own).

    Packed from the widths of the pieces, which recur from formula to formula and are cached; the whole
    formula is measured only when its pieces fit on one line (a long formula's own parse cost as much as
    drawing it, and a weight's sheet has hundreds), by `whole_width` (points) if given, else by `width`."""
    pieces = chunks(loosen(tex))
    indent = width(CONTINUATION + "x", fontsize) - width("x", fontsize)
    space = width(r"x\,x", fontsize) - width("xx", fontsize)
    lines: list[list[str]] = [[]]
    used = 0.0
    for piece in pieces:
        w = width(piece, fontsize)
        room = max_width - (indent if len(lines) > 1 else 0.0)
        if lines[-1] and used + space + w > room:
            lines.append([])
            used = 0.0
        used += (space if lines[-1] else 0.0) + w
        lines[-1].append(piece)
    if len(lines) == 1 and (whole_width or width)(tex, fontsize) <= max_width:
        return [tex]  # as written, its brackets sized to what they hold
    return [(CONTINUATION if k else "") + r"\,".join(parts) for k, parts in enumerate(lines)]


def render(lines: list[str], fontsize: float = 12.0, dpi: float = 100.0, color=(0, 0, 0),
           line_gap: float = 0.35, slots: tuple[int, ...] | None = None) -> np.ndarray:
    """The lines rendered one under another, left-aligned: an (H, W, 4) uint8 RGBA array whose alpha is
    the ink, `color` (RGB 0–255) its colour. With `slots` (`lay_out_formula`'s), each line is centred in a
    slot of that many pixels, one under the other (a slot holds the font's whole height, which spaces the
    lines), so the image is as tall as was laid out before it was drawn. Raises FormulaError for what
    mathtext cannot read."""
    images = [drawn(line, fontsize, dpi).ink for line in lines]
    gap = int(round(line_gap * fontsize * dpi / 72)) if slots is None else 0
    heights = slots if slots is not None else [a.shape[0] for a in images]
    W = max(a.shape[1] for a in images) + 2 * PAD
    H = sum(heights) + gap * (len(images) - 1) + 2 * PAD
    out = np.zeros((H, W, 4), dtype=np.uint8)
    out[..., :3] = np.asarray(color, dtype=np.uint8)
    y = PAD
    for a, slot in zip(images, heights):
        cut = max(0, (a.shape[0] - slot + 1) // 2)  # a line taller than its slot loses its blank edges
        a = a[cut:cut + slot]
        top = y + (slot - a.shape[0]) // 2
        out[top:top + a.shape[0], PAD:PAD + a.shape[1], 3] = a
        y += slot + gap
    return out


class Drawn(NamedTuple):
    ink: np.ndarray   # (H, W) uint8 alpha, read-only
    width: float      # mathtext's measures of the drawing, in pixels at its dpi
    depth: float


@functools.lru_cache(maxsize=INKS)
def drawn(line: str, fontsize: float, dpi: float) -> Drawn:
    """One line as mathtext's Agg rasteriser draws it. Cached: the screen's layout of a formula that fits on one
    line measures it by drawing it (`lay_out_formula`), so its image then costs nothing; a theme's change draws
    every formula again in another colour, a resize or a list's page turned back draws lines already drawn, and
    mathtext's own cache holds 50 parses (a long line's parse is ~0.1 s)."""
    from matplotlib.font_manager import FontProperties

    with _LOCK:
        try:
            got = _parser("agg").parse(f"${line}$", dpi=dpi, prop=FontProperties(size=fontsize))
        except ValueError as e:
            raise FormulaError(f"mathtext cannot read {line[:80]!r}: {str(e).splitlines()[0]}") from None
    image = np.array(got.image, dtype=np.uint8)
    image.setflags(write=False)
    return Drawn(image, float(got.width), float(got.depth))


def _screen_lines(tex: str, width_px: int, dpr: float, fontsize: float) -> list[str]:
    """The lines of a formula on screen: whether it fits whole is measured by drawing it, at the screen's dpi
    (its image is then drawn already); its pieces, when it does not, by their extents (cached)."""
    dpi = 96.0 * dpr
    return wrap(tex, width_px * 72.0 / 96.0, fontsize, lambda t, fs: drawn(t, fs, dpi).width * 72.0 / dpi)


def lay_out_formula(tex: str, width_px: int, dpr: float, fontsize: float = 12.0) -> tuple[tuple[int, ...], int]:
    """The height of each line `render_formula` draws for these arguments, and of its image, in device
    pixels, so a view can take its final size first. A formula that fits on one line is drawn to measure it
    (one parse serves the layout and the image: measuring it apart cost as much as drawing it); the lines
    of a longer one are known from the extents of its pieces before they are drawn. A line's slot has
    SLOT_SLACK pixels more than its measured height."""
    dpi = 96.0 * dpr
    lines = _screen_lines(tex, width_px, dpr, fontsize)
    if lines == [tex]:
        whole = drawn(tex, fontsize, dpi)
        # its drawing's height and half its depth below it: within a few device pixels of the room its extents
        # gave (a line's height plus its depth): at dpr 1 mostly 1 less (-1..+5), at dpr 2 mostly 7 less (-8..+3)
        slots = (whole.ink.shape[0] + math.ceil(max(whole.depth, 0.0) / 2) + SLOT_SLACK,)
    else:
        slots = tuple(math.ceil(line_height(line, tex, fontsize) * dpi / 72) + SLOT_SLACK for line in lines)
    return slots, sum(slots) + 2 * PAD


def render_formula(tex: str, width_px: int, dpr: float, color, fontsize: float = 12.0,
                   slots: tuple[int, ...] | None = None) -> tuple[bytes, int, int]:
    """One formula wrapped to `width_px` logical pixels (96 per inch) at device pixel ratio `dpr`, as
    (RGBA bytes, width, height) in device pixels: plain data, to cross a process boundary. With `slots`
    from `lay_out_formula`, the image has the height it laid out."""
    lines = _screen_lines(tex, width_px, dpr, fontsize)
    if slots is not None and len(slots) != len(lines):
        raise ValueError(f"{len(slots)} slots for {len(lines)} lines: lay out with the same arguments")
    rgba = render(lines, fontsize, 96.0 * dpr, color, slots=slots)
    return rgba.tobytes(), rgba.shape[1], rgba.shape[0]


__all__ = ["FormulaError", "CONTINUATION", "loosen", "chunks", "extent", "width", "line_height", "wrap", "Drawn", "drawn",
           "render", "lay_out_formula", "render_formula", "formula_work", "Typeset"]


def formula_work(kind: str, tex: str, width_px: int, dpr: float, color, fontsize: float,
                 slots: tuple[int, ...] | None):
    """One formula's layout or image, in plain values: "layout" gives (each line's height, the image's height);
    "render" gives (bytes, width, height)."""
    if kind == "layout":
        return lay_out_formula(tex, width_px, dpr, fontsize)
    return render_formula(tex, width_px, dpr, color, fontsize, slots)


@dataclass(frozen=True)
class Typeset:
    """formula_work as a question of the app's symbolic process (engine/service_process.py), on a lane of its
    own, so a page of formulas and the Forms pane's listing never wait for each other. Its values are plain, so
    this module is all the process needs of the renderer that asks."""

    kind: str      # "layout" or "render"
    args: tuple    # formula_work's arguments after the kind
    lane = "formula"

    def answer(self, _state, _job):
        return formula_work(self.kind, *self.args)
