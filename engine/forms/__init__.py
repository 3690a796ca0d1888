"""The forms engine (docs/forms.md): the training error's differential pulled back to every weight, derived
symbolically, evaluated term by term, and verified against autograd. Never imports Qt.

Modules, one concept each: words (the interned DAG), rules (Leibniz, expandAll, expandmm, cycle, shift,
shiftmm, finish), network (named values defined by words, their labelled Leibniz monomials), chain (the
note's encoder(n)), gpt (the GPT of a ModelConfig), derive (terms with IDs, route classes, counts, one
term's stages), evaluate (numbers), snapshot (a GPT's numbers on a probe batch), verify (autograd),
printing (text, LaTeX for mathtext, HTML), sympy_bridge (import it explicitly: it loads sympy), console
(the note's command language) and snapshot_export (a term, a weight's coefficient, a stage or the whole
form as .tex, SVG, PNG, HTML; formulas laid out by engine/figures/formula_layout.py, which needs no torch).

What the GUI calls:

    forms = derive(cfg)                     # Forms, cached per ModelConfig; or Forms(encoder(n, ...))
    forms.counts(); forms.count(w)          # terms per weight, without enumerating
    forms.terms(w, limit=2500)              # [Term]: .id .weight .symbol .route_class .op_count .G .P
    forms.term(id); forms.term_at(k)        # by stable ID / Leibniz position
    forms.stages(term)                      # [(stage, word)]: form, expandAll, expandmm, shifts, finish
    forms.net.equations(); forms.net.form   # encoder(n) and form, as words
    text(w); latex(w); mathtext(w); html(w)
    snap = Snapshot(cfg, weights, x, y)     # a snapshot's weights on the probe batch
    snap.total(w); snap.classes(w); snap.terms(w); snap.term(id)
    Console().run(line)                     # [Output(kind, content, rows)]: rows = (label, LaTeX) of a value
    snapshot_export.export_sheet(path, snapshot_export.term_sheet(forms, term))   # also weight_/stage_/form_sheet

The symbols, their derivation, printing and the console load without torch (the symbolic process, which serves the
Forms pane, has none: docs/design.md#processes-threads-and-caches); numbers do: `bind`, `Snapshot`, evaluate,
bound, verify and the `leaves` of gpt and chain import it when first used.
"""

from .chain import ChainSpec, encoder
from .console import Console, ConsoleError, Output
from .derive import DEFAULT_LIMIT, Forms, Term, TooManyTerms, forms, route_class
from .gpt import derive, network
from .printing import html, latex, mathtext, text
from .words import Label

_WITH_TORCH = {"bind": ".gpt", "Snapshot": ".snapshot"}  # names whose modules import torch: loaded when asked


def __getattr__(name: str):
    if name in _WITH_TORCH:
        import importlib

        return getattr(importlib.import_module(_WITH_TORCH[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ChainSpec", "encoder", "Console", "ConsoleError", "Output", "DEFAULT_LIMIT", "Forms", "Term",
           "TooManyTerms", "forms", "route_class", "bind", "derive", "network", "html", "latex", "mathtext",
           "text", "Snapshot", "Label"]
