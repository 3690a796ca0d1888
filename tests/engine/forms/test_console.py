"""The note's console language: what it runs, what it shows, and that it rejects anything outside the
language with the position and what was expected (docs/reliability.md#the-console: never arbitrary Python)."""

import pytest

from engine.errors import UserError
from engine.forms.console import Console, ConsoleError, run


def texts(line, console=None):
    return [o.content for o in run(line, console)]


def test_the_notes_free_algebra_example_shows_four_words():
    out = run('A = ["A"]; A.op = ""; B = ["B"]; B.op = ""; Y = otimes(oplus(A, B), A); Z = otimes(Y, Y); '
              'showHTML(expandAll(Z))')
    assert [(o.kind, o.content) for o in out] == [("html", "AAAA + AABA + BAAA + BABA")]


def test_sym_makes_a_symbol_too():
    assert texts('A = sym("A"); B = sym("B"); show(expandAll(otimes(oplus(A, B), A)))') == ["A A + B A"]


def test_the_notes_list_words_with_an_operator():
    assert texts('A = ["A"]; A.op = ""; B = sym("B"); X = [A, B]; X.op = "otimes"; show(X); X.op') == ["A B", "otimes"]


def test_the_pipeline_on_the_chain():
    c = Console()
    assert texts("z = flatten(expandmm(form(encoder(2)))); z.length", c) == ["24"]
    assert texts("show(z[13])", c) == ["trace(E^t mm(U_1, aa(S_1, n_1^{-1/2} X_1 Q_1 K_1^t df_0^t C^t) X_1 V_1) W_1)"]
    assert texts("show(finish(cycle(shiftmm(z[9]))))", c) == texts("show(forms(2, 9).G)", c)
    assert texts("show(expandAll(form(encoder(1))))", c) == \
        ["  trace(E^t mm(U_0, dU_0) W_0)\n+ trace(E^t R_0 dW_0)\n+ trace(E^t C df_0)"]


def test_forms_and_terms():
    assert texts("forms(2).length") == ["24"]
    assert texts("t = forms(2, 9); t.id; ") == ["K_0 via X_1@Z_1#1"]
    assert texts("t = forms(2, 9); log(t.id, t.route, t.ops)") == ["K_0 via X_1@Z_1#1 L1.k 4"]
    assert texts('show(forms(2, 4))')[0].startswith("W_0 via X_1@Z_1#0 = ")
    assert texts('count(encoder(3, "residual")); ') == ["126"]
    assert texts('count(encoder(2, "heads=2", "layer_norm"), "K_{0,1}")') == ["6"]  # 3H routes


def test_strings_html_latex_and_log():
    c = Console()
    texts('A = sym("A"); T = transpose(otimes(A, sym("B")))', c)
    assert texts("show(string(T)); show(html(T)); log(latex(T))", c) == \
        ["B^t A^t", "B<sup>t</sup>A<sup>t</sup>", "B^{t}\\,A^{t}"]


def test_d_in_the_free_algebra():
    assert texts('A = sym("A"); B = sym("B"); show(d(otimes(A, B, A)))') == ["dA B A + A dB A + A B dA"]


def test_help_lists_the_functions():
    out = texts("help")[0]
    assert "expandmm" in out and "forms(n or net, k)" in out
    assert texts('help("shiftmm")')[0].startswith("shiftmm(term)")


def test_the_last_expression_is_echoed():
    assert texts("1; 2") == ["2"]
    assert texts('x = "hello"; x') == ["hello"]


@pytest.mark.parametrize("line, where, what", [
    ("__import__('os')", 0, "not a name of the forms language"),
    ("open('/etc/passwd')", 0, "unknown function 'open'"),
    ("eval(\"1\")", 0, "unknown function 'eval'"),
    ("exec('x')", 0, "unknown function 'exec'"),
    ("A.__class__", 2, "not a name"),
    ("os.system('ls')", 9, "only the console's functions can be called"),
    ("x = 1 + 2", 6, "unexpected character '+'"),
    ("show(", 5, "expected a name, number, string, list or '('"),
    ("show(1 2)", 7, "expected ',' or ')'"),
    ("show(1) show(2)", 8, "expected ';' between statements"),
    ("'abc", 0, "never closed"),
    ("y", 0, "'y' is not defined"),
    ("forms(2)[99]", 9, "index 99 out of range"),
    ("encoder(2, \"wide\")", 0, "unknown encoder option"),
    ("encoder(99)", 0, "depth from 1 to 8"),
    ("shiftmm(sym(\"A\"))", 0, "shiftmm"),
    ("x = 3; x.op = 'otimes'", 7, ".op can be set on a list"),
    ("lambda: 1", 6, "unexpected character ':'"),
])
def test_anything_outside_the_language_is_rejected_with_position_and_expectation(line, where, what):
    with pytest.raises(ConsoleError) as e:
        run(line)
    assert e.value.pos == where
    assert f"at position {where}" in str(e.value) and what in str(e.value)
    assert isinstance(e.value, UserError)


def test_the_console_refuses_to_expand_huge_forms():
    with pytest.raises(ConsoleError, match="more than the console expands"):
        run("expandmm(form(encoder(8, \"residual\")))")


def test_show_of_html_and_latex_strings_says_which_they_are():
    c = Console()
    run("z = flatten(expandmm(form(encoder(2))))", c)
    assert [o.kind for o in run("show(html(shiftmm(z[13]))); show(latex(z[13])); show(z[13])", c)] == \
        ["html", "latex", "text"]


def test_outputs_carry_their_mathematics_as_rows():
    c = Console()
    (out,) = run("forms(2)", c)
    assert len(out.rows) == 24 and out.rows[9][0] == "[9] K_0 via X_1@Z_1#1"
    (net,) = run("encoder(1)", c)
    assert net.rows[-1][0] == "form" and len(net.rows) == 7
    (n,) = run("log(forms(2).length)", c)
    assert n.rows == ()
