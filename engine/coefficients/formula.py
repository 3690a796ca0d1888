"""The formula of what the weight pane shows: G of a weight, one of its route classes, or one of its terms,
as a caption, LaTeX for matplotlib's mathtext and the note's text notation (engine.forms printing). The app
typesets it as it does every formula, in its symbolic process (engine/figures/formula_layout.py), so the analysis
process, which derives it, never loads matplotlib (33 MB).

A route class, a sum of terms (docs/route-classes.md), is shown by its description, its number of terms and the
formula of its shortest term (fewest operators). Terms are found by enumerating the weight's terms:
`Forms.term(id)` splits an ID at commas, and labels such as ``A_1@Z_{1,0}#0`` contain one.
"""

from __future__ import annotations

from ..configs.config import ModelConfig
from . import class_description


def formula_text(cfg: ModelConfig, weight: str, kind: str, part: str | None) -> tuple[str, str, str]:
    """(caption, LaTeX, the note's text notation) for kind "total" (G), "class" (part a route class) or "term"
    (part an ID); the formula is "" where there is none to show."""
    from ..forms import TooManyTerms, derive, latex, text
    from ..forms.count_text import count_text

    forms = derive(cfg)
    param = forms.net.param(weight)
    if kind == "total":
        return (f"G of {weight}: Σ over its {count_text(forms.count(weight))} terms = −∂L/∂W",
                rf"G = -\partial L / \partial {param.tex}", f"G = −∂L/∂{param.text}")
    try:
        listed = forms.terms(weight)  # the engine's listing limit: a class's members, a term by its ID
    except TooManyTerms:
        what = f"class {part}: {class_description(part)}" if kind == "class" else f"term {part}"
        return f"{what} ({count_text(forms.count(weight))} terms in all: too many to list)", "", ""
    if kind == "term":
        term = next((t for t in listed if t.id == part), None)
        if term is None:
            return f"no term {part} in this model", "", ""
        return f"term {part}: G =", latex(term.G), text(term.G)
    members = [t for t in listed if t.route_class == part]
    if not members:
        return f"class {part}: {class_description(part)}", "", ""
    shortest = min(members, key=lambda t: t.op_count)
    return (f"class {part}: {class_description(part)}; the sum of {len(members)} term(s), the shortest of "
            f"which ({shortest.id}) is", latex(shortest.G), text(shortest.G))


__all__ = ["formula_text"]
