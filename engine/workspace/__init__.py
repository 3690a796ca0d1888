"""What is open in the app, as one Qt-free model with events (napari's ViewerModel, glue's state objects):
the open run with everything that belongs to it, the builder's draft, the selection and where training stands.

`Workspace` is the model; the GUI's Qt views bind to its events through gui/session.py, and tests drive it
without Qt. See docs/design.md#what-is-open.
"""

from .events import Event
from .open_run import LiveWeights, OpenRun
from .workspace import Draft, Selection, Workspace

__all__ = ["Draft", "Event", "LiveWeights", "OpenRun", "Selection", "Workspace"]
