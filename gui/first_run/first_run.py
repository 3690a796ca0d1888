"""A newcomer's way in, held by the main window: the welcome (its four actions), the sample run and the tour.

Each action is an act of the window's own (training a preset, opening a run, the Hugging Face import), so the
welcome adds no second way of doing anything. The sample opens when it is ready; asked for while it trains in
the background, it opens once done, unless the user has opened or trained something else meanwhile.
"""

from __future__ import annotations

from PySide6.QtCore import QObject

from engine.configs.presets import load_preset

from .. import settings
from .sample import SAMPLE_PRESET, SampleRun
from .tour import Tour, bring_forward
from .welcome import WelcomeDialog

LESSON_PRESET = "induction-lesson"


def sample_config():
    """The sample run's config (tests give a smaller one)."""
    return load_preset(SAMPLE_PRESET)


class FirstRun(QObject):
    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.welcome: WelcomeDialog | None = None
        self.tour = Tour(window)
        self._sample: SampleRun | None = None
        self._open_when_ready = False
        window.session.sig_run_replaced.connect(lambda open_run: self._on_run_opened(open_run and open_run.run))

    @property
    def sample(self) -> SampleRun:
        if self._sample is None:
            self._sample = SampleRun(settings.runs_root() / "sample", sample_config(), self)
            self._sample.sig_progress.connect(self._on_sample_progress)
            self._sample.sig_ready.connect(self._on_sample_ready)
            self._sample.sig_failed.connect(self._on_sample_failed)
        return self._sample

    # ---- the welcome ----------------------------------------------------------------------------

    def show_welcome(self) -> None:
        """The welcome, and the sample trained meanwhile if it is not yet (the user may want it next)."""
        if not self.window.isVisible():  # closed before its panes were built (a quick Ctrl+C): nothing to open
            return
        if self.welcome is None:
            self.welcome = WelcomeDialog(self.window)
            self.welcome.sig_chosen.connect(self.act)
        self._show_sample_state()
        self.welcome.show()
        self.sample.ensure()

    def act(self, key: str) -> None:
        {"lesson": self.watch_heads_form, "sample": self.open_sample, "gpt2": self.open_gpt2,
         "tour": self.start_tour}[key]()

    def watch_heads_form(self) -> None:
        """The induction lesson, trained from its first step, with the heads chart in sight."""
        w = self.window
        if not w.new_run():
            return
        self._open_when_ready = False
        w.session.set_config(load_preset(LESSON_PRESET))
        if "pane_training" in w.panes:
            bring_forward(w.panes["pane_training"].head_timeline)
        w.session.request_training("train")

    def open_sample(self) -> None:
        w = self.window
        if self.sample.ready():
            if w.open_run(self.sample.path) and self.welcome is not None:
                self.welcome.accept()
            return
        self._open_when_ready = True
        self.sample.ensure()
        self._show_sample_state()

    def open_gpt2(self) -> None:
        from ..run_menu import import_hf

        import_hf(self.window)

    # ---- the tour -------------------------------------------------------------------------------

    def start_tour(self) -> None:
        """The tour, on the sample run when nothing is open (so each pane has something to point at)."""
        w = self.window
        if w.session.run is None and not w.controller.alive:
            self.open_sample()
        self.tour.start()

    # ---- the sample's progress --------------------------------------------------------------------

    def shutdown(self) -> None:
        if self._sample is not None:
            self._sample.stop()

    def _show_sample_state(self) -> None:
        if self.welcome is None:
            return
        s = self.sample
        if s.training:
            step, total = s.progress
            wait = "opens when done" if self._open_when_ready else "being trained in the background"
            self.welcome.set_sample_state(f"(It is {wait}: step {step:,} of {total:,}.)")
        elif s.error:
            self.welcome.set_sample_state(f"(It could not be trained: {s.error}.)")
        else:
            self.welcome.set_sample_state("")

    def _on_sample_progress(self, _step: int, _total: int) -> None:
        self._show_sample_state()

    def _on_sample_ready(self, _path: str) -> None:
        self._show_sample_state()
        if self._open_when_ready:
            self._open_when_ready = False
            if self.window.session.run is None and not self.window.controller.alive:
                self.window.open_run(self.sample.path)
                if self.welcome is not None and self.welcome.isVisible():
                    self.welcome.accept()

    def _on_sample_failed(self, message: str) -> None:
        self._show_sample_state()
        if self._open_when_ready:
            self._open_when_ready = False
            self.window.session.post_message(f"The sample run could not be trained: {message}")

    def _on_run_opened(self, run) -> None:
        """Something else was opened: the sample no longer opens by itself."""
        if run is not None and self._sample is not None and run.path != self._sample.path:
            self._open_when_ready = False
