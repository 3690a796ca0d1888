"""`gpt-explorer --run DIR` opens the app on a run, as `gpt-explorer gui --run DIR` does (issue 16, item 14)."""

from __future__ import annotations

import pytest

from gui import cli


@pytest.mark.parametrize("argv", [["--run", "some/run"], ["gui", "--run", "some/run"]])
def test_run_without_the_gui_command_launches_the_app_on_it(monkeypatch, argv):
    launched = []
    monkeypatch.setattr(cli, "_launch", lambda args: launched.append(args.run) or 0)
    assert cli.main(argv) == 0
    assert launched == ["some/run"]


def test_an_unknown_option_is_still_one_clear_error(monkeypatch, capsys):
    monkeypatch.setattr(cli, "_launch", lambda args: 0)
    with pytest.raises(SystemExit) as e:
        cli.main(["--no-such-option"])
    assert e.value.code == 2 and "no-such-option" in capsys.readouterr().err
