"""The note's pipeline — encoder(n), form, expandAll, expandmm, shiftmm, cycle — as formula sheets, one per
stage, for the whole form or one term (docs/rules.md), and the note's own question, how Q_3 shapes K_5's
coefficient, as the same method applied once more (engine/forms/mixed.py,
docs/second-order.md#worked-example-the-notes-question-on-a-chain-of-six-layers). The Forms pane's Walkthrough
tab shows them; they are made in the symbolic process.
"""

from __future__ import annotations

from . import snapshot_export as se
from .derive import Forms, Term, TooManyTerms
from .mixed import MixedForm, notes_question

QUESTION_NOTE = ("The note asks it of a chain of six layers, K_5 by Q_3: choose depth 6 above to follow "
                 "its worked example.")


def stage_sheets(forms: Forms, term: Term | None, question: bool = False) -> tuple[list[tuple[str, se.Sheet]], str]:
    """(stage name, sheet) for each step, and a note when the whole form is too large to walk through;
    `question`: the note's question on the network (mixed.notes_question) instead of the form."""
    out = [("encoder", se.equations_sheet(forms))]
    note = ""
    if question:
        B, A = notes_question(forms.net)
        try:
            form = MixedForm(forms, B, A)
        except TooManyTerms as e:
            return out, f"{e}."
        depth = getattr(forms.net.spec, "depth", 0)
        note = "" if depth >= 6 else QUESTION_NOTE
        return out + [(name, se.mixed_stage_sheet(form, name, words)) for name, words in form.stages()], note
    if term is None:
        try:
            stages = forms.form_stages()
        except TooManyTerms as e:
            stages = [("form", forms.net.form)]
            note = f"{e}: choose “One term” above."
        out += [(name, se.stage_sheet(forms, name, w)) for name, w in stages]
    else:
        out += [(name, se.stage_sheet(forms, name, w, term)) for name, w in forms.stages(term)]
    return out, note
