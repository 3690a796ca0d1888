"""Printing: the note's text notation, HTML, and LaTeX that matplotlib's mathtext renders (tests render
every formula the printer emits — here every kind of node, operator and name it can print)."""

import pytest

from engine.figures import formula_layout
from engine.forms import chain, gpt
from engine.forms.derive import Forms
from engine.forms.evaluate import _placeholder
from engine.forms.printing import html, latex, mathtext, render, text
from engine.forms.rules import pull
from engine.forms.words import Diag, DiagOf, Fn, Num, Op, Scalar, Sym, T, add, neg, prod, walk

from .helpers import small_config


def _words_to_print():
    """Formulas covering every node, operator kind and name style the printers know."""
    out = []
    ch = Forms(chain.encoder(2, residual=True, heads=2, layer_norm=True, cross_entropy=True, causal=True))
    g = gpt.derive(small_config(tied=True, norm="pre", activation="gelu", pos_encoding="learned"))
    gp = gpt.derive(small_config(norm="post", activation="relu"))
    for f, weights, full in ((ch, ["g_0", "Q_{0,1}", "U_o"], True), (g, ["W_E", "blocks.0.W_in", "ln_f.g"], False),
                             (gp, ["blocks.0.ln2.g", "blocks.1.W_K"], False)):
        net = f.net
        out += [net.form]
        # every equation of the chain; of the GPTs, one of each kind the chain does not have
        out += [w for a, w in net.equations() if full or a.text in ("X_0", "R_0", "A_0", "Z", "E")]
        for name in weights:
            ts = f.terms(name, limit=None)
            out += [ts[0].G, ts[-1].G]
        if full:
            out += [w for _, w in f.stages(f.terms(weights[1], limit=None)[-1])]
        df = net.definitions[-3]
        psi = _placeholder(df.atom)
        out += [pull(psi, m.word)[0] for m in net.monomials(df.atom.name)]
    A, B = Sym("A"), Sym("B")
    out.append(add(prod(Num(-2), A, add(A, B)), neg(prod(Scalar("n", -1), B)), prod(Num("1/2"), T(A))))
    return out


def test_the_words_printed_cover_every_node_and_operator():
    seen = set()
    for w in _words_to_print():
        for x in walk(w):
            seen.add(x.kind if type(x) in (Op, Fn) else type(x).__name__)
    assert {"mm", "gg", "aa", "aaC", "ln", "lnC", "a", "m", "gelu", "N"} <= seen
    assert {"Diag", "DiagOf", "Trace", "Diff", "Scalar", "Sum", "Prod", "T"} <= seen


def test_every_latex_string_renders_in_mathtext():
    # the app's own rasteriser: one mathtext pass each (matplotlib's math_to_image laid each out twice)
    for tex in dict.fromkeys(latex(w) for w in _words_to_print()):
        formula_layout.render([tex])


def test_text_uses_the_notes_notation():
    f = Forms(chain.encoder(2))
    eq = {a.text: text(w) for a, w in f.net.equations()}
    assert eq["Z_1"] == "n_1^{-1/2} X_1 Q_1 K_1^t X_1^t"
    assert eq["U_1"] == "S_1 X_1 V_1 + C b_1"
    assert eq["R_1"] == "m(U_1)"
    assert eq["E"] == "T - X_2"
    assert text(f.net.form) == "trace(E^t dX_2)"


def test_latex_writes_operators_with_their_base_as_a_subscript():
    f = Forms(chain.encoder(1))
    assert latex(f.term("Q_0").G) == (
        r"n_{0}^{-1/2}\,K_{0}^{t}\,X_{0}^{t}\,\mathrm{aaC}_{S_{0}^{t}}\left[X_{0}\,V_{0}\,"
        r"\mathrm{mm}_{U_{0}^{t}}\left[W_{0}\,E^{t}\right]\right]\,X_{0}")
    assert "$" not in latex(f.term("Q_0").G) and mathtext(f.term("Q_0").G).startswith("$")


def test_html_juxtaposes_single_letters_and_uses_tags():
    A, B = Sym("A"), Sym("B")
    assert html(add(prod(A, A, B, A), prod(B, A))) == "AABA + BA"
    assert html(prod(Sym("X_1", text="X_1", html="X<sub>1</sub>"), T(Sym("Q", html="Q")))) == \
        "X<sub>1</sub>Q<sup>t</sup>"
    assert html(neg(A)) == "\u2212A"


def test_gpt_names_print_as_the_model_names_them():
    net = gpt.network(small_config(n_head=2))
    wq = net.param("blocks.1.W_Q").symbols[1]
    assert text(T(wq)) == "WQ_{1,1}^t"
    assert latex(T(wq)) == "{W^{Q}_{1,1}}^{t}"
    assert html(wq) == "W<sup>Q</sup><sub>1,1</sub>"


def test_unknown_format_is_refused():
    with pytest.raises(ValueError, match="format"):
        render(Sym("A"), "rtf")


def test_diag_prints_for_a_gain_and_its_coefficient():
    g = Sym("g", "weight", "1", "d")
    assert text(Diag(g)) == "diag(g)" and text(DiagOf(Sym("P"))) == "diag(P)"
