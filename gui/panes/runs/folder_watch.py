"""Follows folders of runs on disk: one signal, coalesced, when a run may have appeared, gone or been renamed.

A run made by `gpt-explorer train` in a terminal (or a fork, an import, a rename in the file manager)
changes a watched folder's entries; Qt's QFileSystemWatcher (inotify on Linux) reports each change at
once, and a `train` writes a folder then its files in a burst, so the changes are gathered into one signal
after a short quiet moment. A run folder is a run only once its config and tokenizer are written
(engine.rundir.listing.is_run): a new folder that is not a run yet is watched too, so the signal comes again when
its files land. Folders that are runs are not watched, since a training run writes into its own folder
every step. Which folders those are comes with the run browser's listing (engine.rundir.listing.RunListing,
made in the analysis process), so the GUI thread stats none of them; the folders watched before stay
watched until that answer comes.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QFileSystemWatcher, QObject, QTimer, Signal

SETTLE_MS = 300  # a `train` writes its folder, config and tokenizer within this


class FolderWatch(QObject):
    sig_changed = Signal()  # a watched folder's entries changed (several changes: one signal)

    def __init__(self, parent=None):
        super().__init__(parent)
        self._watcher = QFileSystemWatcher(self)
        self._settle = QTimer(self, singleShot=True, interval=SETTLE_MS)
        self._watcher.directoryChanged.connect(self._on_changed)
        self._settle.timeout.connect(self.sig_changed)

    def watch(self, folders: list[Path]) -> None:
        """Watch exactly these folders (a RunListing's `watch`)."""
        wanted = {str(f) for f in folders}
        current = set(self._watcher.directories())
        if current - wanted:
            self._watcher.removePaths(sorted(current - wanted))
        if wanted - current:
            self._watcher.addPaths(sorted(wanted - current))

    def watched(self) -> list[str]:
        return self._watcher.directories()

    def _on_changed(self, _path: str) -> None:
        if not self._settle.isActive():  # started, not restarted: a folder written for minutes still signals
            self._settle.start()
