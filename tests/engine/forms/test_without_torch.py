"""The symbolic engine works without torch (docs/design.md#processes-threads-and-caches): the symbolic process,
which derives, lists, prints and runs the console for the Forms pane, must not hold torch's ~220 MB."""

from tests.fresh_imports import loaded_by

HEAVY = ("torch", "sympy", "matplotlib", "PySide6")


def test_deriving_listing_printing_and_the_console_load_no_torch(tmp_path):
    code = "\n".join([
        "from engine.configs.presets import load_preset",
        "from engine.forms import Console, Forms, derive, encoder, html, latex, mathtext, text",
        "from engine.forms import snapshot_export as se",
        "from engine.forms.mixed import MixedForm, notes_question",
        "f = Forms(encoder(4, residual=True, heads=2, layer_norm=True, cross_entropy=True, causal=True))",
        "w = max(f.counts(), key=f.counts().get)",
        "terms = f.terms(w, limit=None)",
        "t = terms[-1]",
        "for word in (t.G, f.term_word(t), f.net.form):",
        "    latex(word); text(word); html(word); mathtext(word)",
        "f.stages(t)",
        "se.term_sheet(f, t); se.weight_sheet(f, w); se.equations_sheet(f)",
        "B, A = notes_question(f.net)",
        "MixedForm(f, B, A).stages()",
        "g = derive(load_preset('tiny').model)",
        "assert g.count() > 0 and g.term_at(g.count() - 1).G is not None",
        "c = Console()",
        "for line in ('forms(3)', 'net = encoder(2); show(html(forms(net)[0]))', 'n = gpt(\"tiny\")', 'help'):",
        "    c.run(line)",
    ])
    assert loaded_by(code, HEAVY, tmp_path) == []
