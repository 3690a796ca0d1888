"""The forms engine (FORMS.md): the training error's differential pulled back to every weight, derived
symbolically, evaluated term by term, and verified against autograd. Never imports Qt.

Modules: words (the interned DAG), rules (Leibniz, expandAll, expandmm, shiftmm, cycle, finish), network
(definitions and their monomials), chain (the note's encoder(n)), gpt (the GPT of a ModelConfig), derive
(terms, IDs, route classes, counts, one term's stages), evaluate (numbers), verify (autograd), printing
(text, LaTeX, HTML), sympy_bridge, console (the note's command language).
"""
