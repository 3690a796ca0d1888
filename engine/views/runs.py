"""The run browser's view model: the folders it lists, and the listing it was answered
(engine.rundir.listing.RunListing, computed in the analysis process so the GUI thread stats no file)."""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.questions import RunListing
from .view import View


@dataclass(eq=False)
class RunsView(View):
    follows_open_run = False   # the runs on disk, whichever run is open
    while_hidden = True        # the pane lists again when seen; a listing asked (a rename, a fork) is answered

    folders: tuple[str, ...] = ()   # the runs folder and the folders the user added
    look: int = 0                   # raised to list again (Refresh, a folder changed, a run stopped)
    listing: object = None          # the RunListing answered last
    listed: int = -1                # the look it answers

    def needs(self, workspace) -> list:
        return [] if self.listed >= self.look else [RunListing(self.folders, self.look)]

    def take(self, question, listing) -> None:
        if question.look >= self.listed:
            self.update(listing=listing, listed=question.look)  # `listed` last: it says a listing came

    def list_again(self, folders: tuple[str, ...] | None = None) -> None:
        """Ask for a new listing (of `folders`, when they changed)."""
        self.update(folders=self.folders if folders is None else tuple(folders), look=self.look + 1, failures={})

    @property
    def listing_due(self) -> bool:
        """A listing asked for has not come yet."""
        return self.listed < self.look and not self.failures
