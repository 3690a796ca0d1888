"""`gpt-explorer forms --weight B --other A` and the console's forms2: the mixed form from the command line."""

from __future__ import annotations

from engine.forms import Console
from tests.engine.forms.test_cli import one_error_line, run_cli


def test_other_lists_the_mixed_terms_counts_them_and_verifies_them(capsys):
    rc, out, _ = run_cli(capsys, "forms", "--chain", "6", "--weight", "K_5", "--other", "Q_3", "--count")
    assert rc == 0 and out.strip() == "K_5 by Q_3 24"
    rc, out, _ = run_cli(capsys, "forms", "--chain", "2", "--weight", "K_1", "--other", "Q_0")
    lines = out.splitlines()
    assert rc == 0 and lines[0].startswith("# d<G_K_1, V> pulled back to dQ_0: 8 terms")
    assert sum(line.startswith("  M = ") for line in lines) == 8 and "aa2" in out and "V[K_1]" in out
    rc, out, _ = run_cli(capsys, "forms", "--preset", "seed-chain", "--weight", "blocks.1.W_K", "--other",
                         "blocks.0.W_Q", "--verify")
    assert rc == 0 and out.rstrip().endswith("ok (tolerance 1e-10)")


def test_other_mistakes_are_one_clear_line(capsys):
    line = one_error_line(*run_cli(capsys, "forms", "--chain", "2", "--other", "Q_0")[::2])
    assert "--other needs --weight" in line
    line = one_error_line(*run_cli(capsys, "forms", "--chain", "2", "--weight", "K_1", "--other", "Z")[::2])
    assert "no weight 'Z'" in line
    line = one_error_line(*run_cli(capsys, "forms", "--preset", "tiny", "--weight", "blocks.0.W_K", "--other",
                                   "blocks.1.W_Q")[::2])
    assert "more than 2,500" in line  # every operator has its second derivative: only the count refuses


def test_console_forms2_takes_the_smallest_chain_or_a_network_and_is_in_help():
    c = Console()
    assert c.run('forms2("K_5", "Q_3").length')[0].content == "24"
    assert c.run('forms2(encoder(2, "causal"), "K_1", "Q_0").length')[0].content == "8"
    assert c.run('z = forms2(2, "K_1", "Q_0"); z[0].route')[0].content == "direct"
    assert "forms2(" in c.run("help")[0].content
    assert c.run('help("forms2")')[0].content.startswith('forms2("K_5", "Q_3"')


def test_verify_of_a_per_head_bias_by_another_weight_says_ok_and_why_b_k_is_degenerate(capsys, tmp_path):
    # issue 43's report: this ended in an IndexError (a head's slice of b_Q cut by the wrong axis)
    from dataclasses import replace

    from engine.configs.config import ExperimentConfig
    from tests.engine.forms.helpers import small_config

    path = tmp_path / "biases.toml"
    path.write_text(replace(ExperimentConfig(), model=small_config(attn_bias=True, norm="post")).to_toml())
    rc, out, _ = run_cli(capsys, "forms", "--config", path, "--weight", "blocks.1.b_Q", "--other", "blocks.0.W_Q",
                         "--verify")
    assert rc == 0 and out.rstrip().endswith("ok (tolerance 1e-10)"), out
    rc, out, _ = run_cli(capsys, "forms", "--config", path, "--weight", "blocks.1.W_Q", "--other", "blocks.1.b_K",
                         "--verify")
    assert rc == 0 and out.rstrip().endswith("degenerate (the mixed derivative is round-off): relative to the "
                                             "model's scale"), out


def test_forms2_on_a_chain_too_shallow_names_the_depth_to_choose():
    """Issue 40: at depth 2 (the Forms pane's source), forms2("K_5", "Q_3") said only "no weight 'K_5'"."""
    import pytest

    from engine.forms.console import ConsoleError

    c = Console()
    c.run("net = encoder(2)")
    with pytest.raises(ConsoleError) as refused:
        c.run('forms2("K_5", "Q_3")')
    message = str(refused.value)
    assert "no weight 'K_5' in encoder(2)" in message and "choose depth 6" in message
    assert 'forms2(encoder(6), "K_5", "Q_3")' in message and "K_1" in message  # its own weights listed
    assert c.run('forms2(encoder(6), "K_5", "Q_3").length')[0].content == "24"  # what it says to do works
