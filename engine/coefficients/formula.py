"""The formula of what the weight pane shows: G of a weight, one of its route classes, or one of its terms,
as a caption and matplotlib mathtext (engine.forms printing), rendered to PNG bytes without Qt.

A route class, a sum of terms (docs/route-classes.md), is shown by its description, its number of terms and the
formula of its shortest term (fewest operators). Terms are found by enumerating the weight's terms:
`Forms.term(id)` splits an ID at commas, and labels such as ``A_1@Z_{1,0}#0`` contain one.
"""

from __future__ import annotations

import io

from ..configs.config import ModelConfig
from . import class_description

LIMIT = 2500  # terms enumerated to find a class's members or a term by its ID


def formula_text(cfg: ModelConfig, weight: str, kind: str, part: str | None) -> tuple[str, str]:
    """(caption, mathtext or "") for kind "total" (G), "class" (part a route class) or "term" (part an ID)."""
    from ..forms import TooManyTerms, derive, mathtext

    forms = derive(cfg)
    param = forms.net.param(weight)
    if kind == "total":
        return (f"G of {weight}: Σ over its {forms.count(weight)} terms = −∂L/∂W",
                rf"$G = -\partial L / \partial {param.tex}$")
    try:
        listed = forms.terms(weight, LIMIT)
    except TooManyTerms:
        what = f"class {part}: {class_description(part)}" if kind == "class" else f"term {part}"
        return f"{what} ({forms.count(weight)} terms in all: too many to list)", ""
    if kind == "term":
        term = next((t for t in listed if t.id == part), None)
        if term is None:
            return f"no term {part} in this model", ""
        return f"term {part}: G =", mathtext(term.G)
    members = [t for t in listed if t.route_class == part]
    if not members:
        return f"class {part}: {class_description(part)}", ""
    shortest = min(members, key=lambda t: t.op_count)
    return (f"class {part}: {class_description(part)}; the sum of {len(members)} term(s), the shortest of "
            f"which ({shortest.id}) is", mathtext(shortest.G))


def render_formula(cfg: ModelConfig, weight: str, kind: str, part: str | None, color: str = "black",
                   fontsize: int = 13, dpi: int = 110) -> tuple[str, bytes]:
    """(caption, PNG bytes of the formula on a transparent background, or b"" when there is none)."""
    caption, text = formula_text(cfg, weight, kind, part)
    if not text:
        return caption, b""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(0.01, 0.01))
    fig.text(0, 0, text, fontsize=fontsize, color=color)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, transparent=True, bbox_inches="tight", pad_inches=0.05)
    return caption, buf.getvalue()


__all__ = ["formula_text", "render_formula"]
