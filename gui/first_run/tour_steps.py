"""The guided tour's stops, in order: which pane (a dock's object name) or part of one (a widget's object name
inside it) each spotlights, and the one sentence it says there, in the app's own words. A table without Qt,
so the tour's text is read and tested in one place (gui/first_run/tour.py shows it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TourStep:
    title: str
    text: str
    pane: str = ""   # the dock spotlit (brought forward when tabbed); "" spotlights the whole window
    part: str = ""   # a widget inside the pane, by object name, spotlit instead of the whole pane


STEPS = (
    TourStep("The builder",
             "Choose a preset or set every part of the model here; the parameter count, the memory and the "
             "block diagram follow each change, and a weight clicked in the diagram opens in the Weight pane.",
             "pane_architecture"),
    TourStep("Training",
             "Train (F5) runs here, live: the loss falls as you watch, and a dashed line on the curve marks "
             "each step at which a head took its role.",
             "pane_training"),
    TourStep("Heads over training",
             "One row per attention head, one column per saved step: a head lights up as it takes a role, "
             "like the sample's previous-token head and the induction head that reads it.",
             "pane_training", "head_timeline"),
    TourStep("Attention",
             "What every head attends to for a prompt you type, as heatmaps or as lines between tokens, live "
             "while training or at any saved step of the timeline.",
             "pane_heatmaps"),
    TourStep("The form of the error",
             "For each weight W, the coefficient G with dE = trace(G dW), written out as mathematics, with "
             "the note's walkthrough and its console.",
             "pane_forms"),
    TourStep("One weight",
             "One weight over the whole of training: its coefficient G split into the routes it flows along, "
             "beside the update the optimizer actually made.",
             "pane_weight"),
    TourStep("Runs",
             "Every run on disk: open, rename or fork one into a pair that differs in one setting, and tick "
             "runs to overlay their curves in Run curves or subtract them in Run diff.",
             "pane_runs"),
    TourStep("And more",
             "File → Export… (Ctrl+E) writes any figure or its numbers, F1 lists every shortcut, and Help → "
             "Tour brings this tour back."),
)
