"""The weight pane's formula (engine/coefficients/formula.py): LaTeX and the text notation of G, a route class and a
term, derived without matplotlib, which the analysis process that derives them then never loads."""

from __future__ import annotations

from engine.coefficients.formula import formula_text
from engine.configs.presets import load_preset
from engine.forms import derive, latex, text
from tests.fresh_imports import loaded_by


def test_a_class_is_shown_by_its_shortest_term_and_a_term_by_its_own_coefficient():
    cfg = load_preset("tiny").model
    caption, tex, notation = formula_text(cfg, "blocks.0.W_Q", "total", None)
    assert caption.startswith("G of blocks.0.W_Q") and tex.startswith("G = ") and notation.startswith("G = ")
    terms = derive(cfg).terms("blocks.0.W_Q")
    direct = min((t for t in terms if t.route_class == "direct"), key=lambda t: t.op_count)
    caption, tex, notation = formula_text(cfg, "blocks.0.W_Q", "class", "direct")
    assert f"({direct.id})" in caption and (tex, notation) == (latex(direct.G), text(direct.G))
    assert "$" not in tex  # the app's formula renderer wraps and typesets it
    assert formula_text(cfg, "blocks.0.W_Q", "term", terms[1].id)[1:] == (latex(terms[1].G), text(terms[1].G))
    assert formula_text(cfg, "blocks.0.W_Q", "term", "nonsense") == ("no term nonsense in this model", "", "")


def test_deriving_a_formula_loads_no_matplotlib(tmp_path):
    code = ("from engine.coefficients.formula import formula_text\n"
            "from engine.configs.presets import load_preset\n"
            "formula_text(load_preset('tiny').model, 'blocks.0.W_Q', 'class', 'direct')\n")
    assert loaded_by(code, ("matplotlib",), tmp_path) == []
