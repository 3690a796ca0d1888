"""Open run starts in the runs folder, and after a run was opened, beside it (issue 16, item 3)."""

from __future__ import annotations

from PySide6.QtWidgets import QFileDialog

from gui import settings


def test_open_run_starts_in_the_runs_folder_and_never_inside_the_last_run(make_window, monkeypatch, tmp_path):
    w = make_window()
    run = settings.runs_root() / "tiny-20261123-101010"
    run.mkdir(parents=True)
    starts = []

    def choose(parent, title, start):
        starts.append(start)
        return str(run)

    monkeypatch.setattr(QFileDialog, "getExistingDirectory", choose)
    monkeypatch.setattr(w.controller, "open_run", lambda path: None)
    w.open_run()
    w.open_run()
    assert starts == [str(settings.runs_root()), str(settings.runs_root())]
