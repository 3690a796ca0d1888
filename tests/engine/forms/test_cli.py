"""`gpt-explorer forms` (docs/command-line.md): counts, verification, terms, the console, and one clear line
on stderr for every mistake."""

import pytest

from engine.cli import main


def run_cli(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def one_error_line(rc, err):
    lines = err.strip().splitlines()
    assert rc != 0 and len(lines) == 1 and lines[0].startswith("gpt-explorer: error: "), err
    return lines[0]


def test_count_prints_one_line_per_weight_then_the_total(capsys):
    rc, out, _ = run_cli(capsys, "forms", "--chain", "3", "--count")
    lines = out.splitlines()
    assert rc == 0 and lines[0] == "Q_0 9" and lines[-1] == "total 78"
    assert sum(int(line.split()[1]) for line in lines[:-1]) == 78
    assert len(lines) == 6 * 3 + 1


def test_count_for_chain_variants_and_a_preset(capsys):
    rc, out, _ = run_cli(capsys, "forms", "--chain", "2", "--residual", "--count")
    assert out.splitlines()[-1] == "total 30"
    rc, out, _ = run_cli(capsys, "forms", "--chain", "2", "--heads", "2", "--count")
    assert out.splitlines()[-1] == "total 63"
    rc, out, _ = run_cli(capsys, "forms", "--preset", "tiny", "--count", "--weight", "W_E")
    assert out.splitlines() == ["W_E 676", "total 676"]
    rc, out, _ = run_cli(capsys, "forms", "--preset", "nanogpt-cpu", "--count")
    assert rc == 0 and out.splitlines()[0].startswith("W_E ") and out.splitlines()[-1].startswith("total ")


def test_verify_prints_the_error_per_weight_and_passes(capsys):
    rc, out, _ = run_cli(capsys, "forms", "--chain", "2", "--layer-norm", "--cross-entropy", "--causal", "--verify")
    lines = out.splitlines()
    assert rc == 0 and len(lines) == 8 * 2 + 2 + 1
    assert all(float(line.split()[1]) < 1e-12 for line in lines[:-1])
    assert lines[-1].endswith("ok (tolerance 1e-08)")


def test_verify_on_a_preset_compares_with_the_torch_model(capsys):
    rc, out, _ = run_cli(capsys, "forms", "--preset", "seed-chain", "--verify", "--weight", "blocks.0.W_Q")
    assert rc == 0 and out.splitlines()[0].startswith("blocks.0.W_Q ")


def test_verify_exits_non_zero_above_the_tolerance(capsys, monkeypatch):
    from engine.forms import verify
    monkeypatch.setattr(verify, "TOLERANCE", 1e-30)
    rc, out, _ = run_cli(capsys, "forms", "--chain", "1", "--verify")
    assert rc == 1 and "FAILED" in out.splitlines()[-1]


def test_term_prints_its_route_class_and_coefficient(capsys):
    rc, out, _ = run_cli(capsys, "forms", "--chain", "2", "--term", "K_0 via X_1@Z_1#1")
    lines = out.splitlines()
    assert rc == 0 and lines[0] == "K_0 via X_1@Z_1#1"
    assert "route class L1.k" in lines[1] and "4 operators" in lines[1]
    assert lines[2].startswith("n_0^{-1/2} Q_0^t X_0^t aa(S_0, mm(U_0, n_1^{-1/2} aaC(S_1^t")
    rc, out, _ = run_cli(capsys, "forms", "--chain", "2", "--term", "K_0 via X_1@Z_1#1", "--format", "latex")
    assert out.splitlines()[2].startswith(r"n_{0}^{-1/2}\,Q_{0}^{t}")
    rc, out, _ = run_cli(capsys, "forms", "--chain", "2", "--term", "K_0 via X_1@Z_1#1", "--format", "html")
    assert "<sub>" in out.splitlines()[2]


def test_listing_groups_terms_by_weight(capsys):
    rc, out, _ = run_cli(capsys, "forms", "--chain", "2", "--weight", "K_0")
    lines = out.splitlines()
    assert lines[0] == "# K_0: 3 terms"
    assert lines[1] == "K_0 via X_1@Z_1#0  [L1.q]" and lines[2].startswith("  G = ")
    rc, out, _ = run_cli(capsys, "forms", "--chain", "1")
    assert out.count("# ") == 6


def test_eval_runs_a_console_line(capsys):
    rc, out, _ = run_cli(capsys, "forms", "--eval",
                         'Y = otimes(oplus(sym("A"), sym("B")), sym("A")); Z = otimes(Y, Y); showHTML(expandAll(Z))')
    assert rc == 0 and out == "AAAA + AABA + BAAA + BABA\n"
    rc, out, _ = run_cli(capsys, "forms", "--eval", "forms(2).length; show(forms(2, 4))")
    assert out.splitlines()[0].startswith("W_0 via X_1@Z_1#0 = ")
    rc, out, _ = run_cli(capsys, "forms", "--preset", "tiny", "--eval", 'count(net, "blocks.1.W_Q")')
    assert out == "8\n"


@pytest.mark.parametrize("argv, message", [
    (["--eval", "__import__('os')"], "not a name of the forms language"),
    (["--eval", "show(1"], "at position 6"),
    (["--chain", "2", "--weight", "Z_9"], "no weight 'Z_9'"),
    (["--chain", "2", "--term", "K_0 via nowhere"], "no term"),
    (["--preset", "tiny"], "more than 2,500"),
    (["--preset", "nope", "--count"], "unknown preset"),
    (["--config", "/nonexistent.toml", "--count"], "not found"),
    (["--residual", "--count"], "apply to --chain"),
    (["--chain", "0", "--count"], "at least 1"),
])
def test_every_mistake_is_one_line_on_stderr(argv, message, capsys):
    rc, out, err = run_cli(capsys, "forms", *argv)
    assert message in one_error_line(rc, err)


def test_out_writes_a_formula_snapshot_of_a_term_a_weight_or_the_form(capsys, tmp_path):
    rc, out, _ = run_cli(capsys, "forms", "--chain", "2", "--term", "K_0 via X_1@Z_1#1", "--out", tmp_path / "t.tex")
    assert rc == 0 and out.strip() == str(tmp_path / "t.tex")
    assert r"\section*{Term K\_0 via X\_1@Z\_1\#1}" in (tmp_path / "t.tex").read_text(encoding="utf-8")
    rc, out, _ = run_cli(capsys, "forms", "--chain", "2", "--weight", "K_0", "--out", tmp_path / "w.html")
    assert rc == 0 and (tmp_path / "w.html").read_text(encoding="utf-8").count('class="row"') == 3
    rc, out, _ = run_cli(capsys, "forms", "--chain", "1", "--out", tmp_path / "f.svg")
    assert rc == 0 and (tmp_path / "f.svg").stat().st_size > 0


def test_out_refuses_an_unknown_suffix_and_a_form_too_large(capsys, tmp_path):
    rc, _, err = run_cli(capsys, "forms", "--chain", "2", "--out", tmp_path / "f.pdf")
    assert ".tex" in one_error_line(rc, err)
    rc, _, err = run_cli(capsys, "forms", "--preset", "nanogpt-cpu", "--out", tmp_path / "f.tex")
    assert "more than" in one_error_line(rc, err)
