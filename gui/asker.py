"""The app's one asker: every question about a run goes to the analysis process through it, and every answer
comes back through it (docs/design.md#how-a-pane-gets-its-numbers).

Two kinds of asking meet here:
- views (engine/views/): the asker `watch`es each view model, and whenever the workspace or a view changes it
  asks each view on screen for its `needs(workspace)` and sends what is not out yet; an answer goes to every view
  that asked (`take`), a failure to `failed` (not asked again until the view forgets), a long answer's reports to
  `progressed`, with the time left estimated here (engine/progress.py's Rate, kept across the slices of a
  question asked again, a head timeline);
- acts (`ask`): a question someone asked once (Generate on a run at rest, an export), answered once and never
  dropped for a newer one, before what views need.

Questions go to their lane of the analysis process (gui/analysis.py: `now` for one step's answer, `long` for
what reads every saved step, a thread each), one out at a time per lane, so a light question never waits behind
a long one; the next of a lane is an act's (in the order asked), else what a view on screen needs most, oldest
first. A question out that no
view needs any more (its view moved on: another weight, another prompt, another run) is cancelled in the process,
where it stops at its next progress report, and its lane is free at once.

THE one rule for staleness: each question is tagged with the serial of the run open when it was asked (an
`OpenRun`'s: two openings of one folder differ), unless it is about no open run (the runs listing, a pair of ticked
runs, an export); an answer whose serial is not the open run's is dropped, whatever it is. Opening another run
cancels everything out about the previous one and makes the views that follow the open run forget what they
hold, in the workspace's one `sig_run_replaced`, before any pane hears it (the asker is the first to listen).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal

from engine.analysis.questions import LANES
from engine.progress import Progress, Rate
from engine.service_process import CANCELLED

from . import analysis


@dataclass(eq=False)
class Act:
    """A question asked once: `on_done(answer)`, `on_failed(message)`, `on_progress(Progress)`."""

    question: Any
    on_done: Callable[[Any], None]
    on_failed: Callable[[str], None] | None = None
    on_progress: Callable[[Progress], None] | None = None
    serial: int | None = None   # the open run's when asked (None: about no open run)
    ticket: int | None = None   # once sent


@dataclass(eq=False)
class _Out:
    """A question sent to the analysis process and not answered yet."""

    question: Any
    ticket: int                 # the asker's own number for it (a restarted process numbers afresh)
    serial: int | None
    views: list = field(default_factory=list)   # the views that asked for it
    act: Act | None = None
    cancelled: bool = False
    cancel: Any = None          # stops it where it runs


class _Relay(QObject):
    sig_reply = Signal(object)  # emitted on the analysis process's reader thread, heard on the GUI thread


class Asker(QObject):
    def __init__(self, workspace, parent: QObject | None = None, service: Callable | None = None):
        """`service()`: the analysis process (gui/analysis.py's; tests may give another)."""
        super().__init__(parent)
        self.workspace = workspace
        self._service = service or analysis.process
        self._tickets = itertools.count(1)
        self._views: list = []
        self._acts: list[Act] = []             # asked, not sent yet, in the order asked
        self._out: dict[int, _Out] = {}        # ticket -> what is out
        self._busy: dict[str, int] = {}        # lane -> the ticket out there (not cancelled)
        self._since: dict = {}                 # question -> when a view first needed it (its age)
        self._rates: dict = {}                 # question -> Rate of its long answer
        self._order = itertools.count()
        self._pending = False
        self._relay = _Relay(self)
        self._relay.sig_reply.connect(self._on_reply, Qt.ConnectionType.QueuedConnection)
        workspace.sig_run_replaced.connect(self._on_run_replaced)
        for event in (workspace.sig_run_attached, workspace.sig_selection_changed, workspace.sig_draft_changed,
                      workspace.sig_weights_published, workspace.sig_training_changed):
            event.connect(self.later)

    # ---- what views and acts do --------------------------------------------------------------

    def watch(self, view, owner: QObject | None = None) -> None:
        """Ask what `view` needs from now on, whenever it or the workspace changes; until `owner` (its pane)
        is deleted, if one is given."""
        self._views.append(view)
        view.changed.connect(self.later)
        if owner is not None:
            owner.destroyed.connect(lambda *_: self.unwatch(view))
        self.later()

    def unwatch(self, view) -> None:
        """Ask nothing more for `view`; what is out for it alone is cancelled."""
        if view not in self._views:
            return
        self._views.remove(view)
        view.changed.disconnect(self.later)
        for o in list(self._out.values()):
            if view in o.views:
                o.views = [v for v in o.views if v is not view]
                if not o.views and o.act is None:
                    self._stop(o)

    def ask(self, question, on_done: Callable[[Any], None], on_failed: Callable[[str], None] | None = None,
            on_progress: Callable[[Progress], None] | None = None, about_open_run: bool = True) -> Act:
        """Ask `question` once; `about_open_run`: its answer is dropped if another run is opened first."""
        act = Act(question, on_done, on_failed, on_progress, self.serial() if about_open_run else None)
        self._acts.append(act)
        self.later()
        return act

    def cancel(self, act: Act) -> None:
        """Stop an act: it is not sent, or is cancelled in the process; none of its callbacks is called."""
        if act in self._acts:
            self._acts.remove(act)
        out = self._out.get(act.ticket) if act.ticket is not None else None
        if out is not None:
            out.act = None
            self._stop(out)

    def close(self) -> None:
        """Its window closes: cancel everything out, send nothing more."""
        for o in list(self._out.values()):
            o.act, o.views = None, []
            self._stop(o)
        self._acts.clear()
        for view in self._views:
            view.changed.disconnect(self.later)
        self._views.clear()

    def serial(self) -> int:
        """The open run's serial (0: none open); a question is tagged with it when asked."""
        open_run = self.workspace.open_run
        return 0 if open_run is None else open_run.serial

    @property
    def idle(self) -> bool:
        """Nothing out and nothing waiting (tests wait for it)."""
        return not self._out and not self._acts and not self._pending

    def out(self) -> list:
        """The questions out now (tests read it)."""
        return [o.question for o in self._out.values() if not o.cancelled]

    def later(self, *_why) -> None:
        """Look again at what is needed, in the next turn of the event loop (every change of a turn at once)."""
        if not self._pending:
            self._pending = True
            try:
                QTimer.singleShot(0, self, self._pump)
            except RuntimeError:  # its window was deleted; a pane still hidden on the way out has nothing to ask
                pass

    # ---- choosing what to send ---------------------------------------------------------------

    def _pump(self) -> None:
        self._pending = False
        wanted: dict = {}       # question -> the views that need it (seen or not)
        askable: list = []      # (rank, question, view) of the views on screen
        for view in self._views:
            needs = view.missing(self.workspace)
            for k, question in enumerate(needs):
                wanted.setdefault(question, []).append(view)
                since = self._since.setdefault(question, next(self._order))
                if view.seen or view.while_hidden:
                    askable.append(((k, since), question))
        self._since = {q: t for q, t in self._since.items() if q in wanted}
        out = {o.question: o for o in self._out.values() if not o.cancelled and o.act is None}
        for question, o in out.items():
            if question in wanted:
                o.views = wanted[question]
            else:
                self._stop(o)  # its view moved on
        self._rates = {q: r for q, r in self._rates.items() if q in wanted or q in out
                       or any(a.question == q for a in self._acts)}
        askable.sort(key=lambda a: a[0])
        for lane in LANES:
            if lane in self._busy:
                continue
            act = next((a for a in self._acts if a.question.lane == lane), None)
            if act is not None:
                self._acts.remove(act)
                self._start(act.question, act.serial, act=act)
                continue
            pick = next((q for _, q in askable if q.lane == lane and q not in out), None)
            if pick is not None:
                self._start(pick, self.serial() if wanted[pick][0].follows_open_run else None,
                            views=wanted[pick])

    def _start(self, question, serial: int | None, views: list | None = None, act: Act | None = None) -> None:
        ticket = next(self._tickets)
        o = _Out(question, ticket, serial, list(views or ()), act)
        if act is not None:
            act.ticket = ticket
        self._out[ticket] = o
        self._busy[question.lane] = ticket
        relay = self._relay

        def reply(_number: int, kind: str, payload) -> None:  # on the analysis process's reader thread
            try:
                relay.sig_reply.emit((ticket, kind, payload))
            except RuntimeError:  # the asker was deleted (its window closed) while this was out
                pass

        service = self._service()
        number = service.ask(question, reply)
        o.cancel = lambda: service.cancel(number)

    def _stop(self, o: _Out) -> None:
        """Cancel `o` in the process; its lane takes the next question at once."""
        if o.cancelled:
            return
        o.cancelled = True
        if self._busy.get(o.question.lane) == o.ticket:
            del self._busy[o.question.lane]
        o.cancel()
        self.later()

    # ---- what comes back -----------------------------------------------------------------------

    def _on_reply(self, message: tuple) -> None:
        ticket, kind, payload = message
        o = self._out.get(ticket)
        if o is None:
            return
        fresh = o.serial is None or o.serial == self.serial()  # THE rule: only about the run open now
        if kind in ("progress", "part"):
            if fresh and not o.cancelled and kind == "progress":
                progress = self._rates.setdefault(o.question, Rate()).progress(*payload)
                for view in o.views:
                    view.progressed(o.question, progress)
                if o.act is not None and o.act.on_progress is not None:
                    o.act.on_progress(progress)
            return
        del self._out[ticket]
        if self._busy.get(o.question.lane) == ticket:
            del self._busy[o.question.lane]
        self.later()
        if not fresh or (kind == "failed" and payload == CANCELLED):
            return
        if kind == "done":
            for view in o.views:
                view.take(o.question, payload)
            if o.act is not None:
                o.act.on_done(payload)
        else:
            for view in o.views:
                view.failed(o.question, payload)
            if o.act is not None and o.act.on_failed is not None:
                o.act.on_failed(payload)

    def _on_run_replaced(self, _open_run=None) -> None:
        """Another run is open: nothing out about the previous one is wanted, nothing held of it is shown."""
        serial = self.serial()
        for o in list(self._out.values()):
            if o.serial is not None and o.serial != serial:
                o.act = None
                self._stop(o)
        self._acts = [a for a in self._acts if a.serial is None or a.serial == serial]
        for view in self._views:
            if view.follows_open_run:
                view.forget()
        self.later()
