"""Open run starts in the runs folder, and after a run was opened, beside it (issue 16, item 3)."""

from __future__ import annotations

from PySide6.QtWidgets import QFileDialog

from gui import settings


def test_each_dialog_starts_in_the_runs_folder_or_the_one_it_remembers_and_open_run_never_in_the_last_run(
        make_window, monkeypatch, tmp_path):
    """Open run starts in the runs folder, and never inside the run opened last; every other dialog starts in the
    runs folder, not the working folder; a remembered folder deleted since opens its nearest existing parent; the
    Weight pane's exports and File → Export… share one remembered folder. (One window for the four: each built
    one, and only the first used it.)"""
    from gui.widgets import dialogs

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

    # every dialog starts in the runs folder, not the working folder
    starts = []

    def cancel(parent, title, start, filters):
        starts.append(start)
        return "", ""

    monkeypatch.setattr(QFileDialog, "getOpenFileName", cancel)
    monkeypatch.chdir(tmp_path)
    assert dialogs.ask_path(None, "open", "Load config", "TOML (*.toml)") is None
    assert dialogs.ask_path(None, "open", "Choose a corpus", "Text (*.txt)") is None
    assert starts == [str(settings.runs_root())] * 2

    # a remembered folder deleted since opens its nearest existing parent
    settings.set_last_folder("Load config", tmp_path / "gone" / "deeper")
    assert dialogs._start("Load config", "x.toml") == str(tmp_path / "x.toml")

    # the Weight pane and File → Export… share one remembered export folder
    chosen = tmp_path / "figures"
    chosen.mkdir()
    starts = []

    def save(parent, title, start, filters):
        starts.append(start)
        return str(chosen / "G.png"), ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", save)
    dialogs.ask_path(None, "save", "Export coefficient", "PNG (*.png)", suggested="G.png",
                     start=tmp_path, remember=dialogs.EXPORTS)
    dialogs.ask_path(None, "save", "Export coefficient (MP4 needs ffmpeg)", "GIF (*.gif)", suggested="G.gif",
                     remember=dialogs.EXPORTS)
    assert starts == [str(tmp_path / "G.png"), str(chosen / "G.gif")]
    assert dialogs._start(dialogs.EXPORTS, "f.png") == str(chosen / "f.png")  # File → Export… too


def test_mp4_is_offered_only_where_ffmpeg_is_installed(monkeypatch):
    import shutil

    from gui.panes.weight import export

    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert "mp4" not in export.offered(export.ALL) and "gif" in export.offered(export.ALL)
    assert export.offered(export.FILTERS["animation"]) == "GIF animation (*.gif)"
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}")
    assert "MP4 video (*.mp4)" in export.offered(export.ALL)
