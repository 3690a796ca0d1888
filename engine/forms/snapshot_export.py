"""Formula snapshots (docs/design.md): a term, a weight's coefficient, a walkthrough stage or the whole form,
written as LaTeX (.tex, a document that compiles on its own), SVG or PNG (matplotlib mathtext, no usetex),
or HTML with each formula as inline SVG drawn by the same mathtext (any browser shows it as mathematics;
the HTML printer's text, which only had sub- and superscripts, is kept as the formula's accessible label).
Pure functions without Qt, like engine/figures/export.py, whose `format_of` chooses the format by the file's suffix
and whose FigureOptions (the export dialog's resolution) set a PNG's DPI. An SVG or PNG page is as large as
what it shows plus a margin (measured before it is drawn, so it is drawn once), so a title or subtitle longer
than the widest formula is not cut.

A `Sheet` is what gets written: a title, a line under it, and (label, formula) rows. Rows too wide for the
page are wrapped by engine.figures.formula_layout.wrap; a sheet longer than a page continues on further pages — in the .tex and
.html as one document, in SVG and PNG as further files ``name-p2.svg``, ``name-p3.svg``, …

A whole weight's sheet has hundreds of rows and takes minutes to lay out and draw, so every writer reports
its rows and pages as it goes (engine.figures.export.report_progress), which is also where a cancel stops
it; whoever runs it writes under a temporary name (the GUI's export queue does), so a cancelled export
leaves no page behind.
"""

from __future__ import annotations

import html as html_escape
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from ..figures.export import figure_options, format_of, report_progress
from ..figures import formula_layout as layout
from . import printing
from .derive import DEFAULT_LIMIT, Forms, Term, TooManyTerms
from .words import Sum, Trace, Word

FORMATS = ("tex", "svg", "png", "html")
FILTERS = "LaTeX document (*.tex);;SVG image (*.svg);;PNG image (*.png);;HTML page (*.html)"
FONT_PT = 12.0          # formula size in SVG and PNG
PAGE_WIDTH_PT = 620.0   # SVG and PNG: formula lines wrap at this width
PAGE_LINES = 48         # SVG and PNG: formula lines per page
TEX_WIDTH_PT = 440.0    # the .tex wraps at this width (A4 with 2 cm margins at 10 pt is ~480 pt)


@dataclass(frozen=True)
class Formula:
    label: str          # plain text (a term ID, a stage name), may be ""
    tex: str            # LaTeX as printing.latex writes it (mathtext-safe), no dollars
    html: str = ""      # the same formula from the HTML printer, when it came from a word


@dataclass(frozen=True)
class Sheet:
    title: str
    formulas: tuple[Formula, ...]
    subtitle: str = ""


def formula(label: str, w: Word, lhs: str = "", lhs_html: str | None = None) -> Formula:
    """A row from a word; `lhs` (LaTeX, e.g. "G =") is put in front, `lhs_html` in the HTML (default lhs)."""
    lhs_html = lhs if lhs_html is None else lhs_html
    return Formula(label, f"{lhs} {printing.latex(w)}".strip(),
                   (html_escape.escape(lhs_html) + " " if lhs_html else "") + printing.html(w))


def word_rows(w: Word, label: str = "") -> tuple[Formula, ...]:
    """A sum of traces (a stage of the whole form) as one row per trace; anything else as one row."""
    if type(w) is Sum and all(type(t) is Trace for t in w.terms):
        return tuple(formula(f"{label} [{k}]".strip(), t) for k, t in enumerate(w.terms))
    return (formula(label, w),)


def term_sheet(forms: Forms, term: Term) -> Sheet:
    """One term: its word as the expansion writes it, and its coefficient G."""
    return Sheet(f"Term {term.id}", (formula("term", forms.term_word(term)), formula("coefficient", term.G, "G =")),
                 f"{forms.net.title} · weight {term.weight} · route {term.route_class} · "
                 f"{term.operators}")


def weight_sheet(forms: Forms, weight: str, limit: int = DEFAULT_LIMIT) -> Sheet:
    """A weight's coefficient: the G of each of its terms (they add up to the weight's G)."""
    try:
        terms = forms.terms(weight, limit)
    except TooManyTerms as e:
        raise UserError(f"{e}; export one term instead") from None
    rows = tuple(formula(t.id, t.G, "G =") for t in terms)
    return Sheet(f"Coefficient of {weight}", rows,
                 f"{forms.net.title} · {len(rows)} terms · the weight's G is their sum, read as trace(G dW)")


def stage_sheet(forms: Forms, stage: str, w: Word, term: Term | None = None) -> Sheet:
    """A walkthrough stage of the whole form, or of one term."""
    what = f"term {term.id}" if term is not None else "the whole form"
    return Sheet(f"{stage} — {what}", word_rows(w), forms.net.title)


def mixed_stage_sheet(form, stage: str, words: list[Word]) -> Sheet:
    """A stage of the mixed form's walkthrough (engine/forms/mixed.py `MixedForm.stages`): one row per word,
    the mixed terms labelled by their IDs with their coefficients as M = …."""
    if stage == "mixed terms":
        rows = tuple(formula(t.id, w, "M =") for t, w in zip(form.terms, words))
    else:
        rows = tuple(formula(f"[{k}]", w) for k, w in enumerate(words))
    return Sheet(f"{stage} — {form.weight} by {form.other}", rows,
                 f"{form.net.title} · {form.count()} mixed terms · Σ Mᵗ = ∂⟨G_B, V⟩/∂A = −H_AB V")


def form_sheet(forms: Forms, limit: int = DEFAULT_LIMIT) -> Sheet:
    """The whole form, finished: every term's ID and coefficient, in Leibniz order."""
    try:
        terms = forms.terms(None, limit)
    except TooManyTerms as e:
        raise UserError(f"{e}; export one weight or one term instead") from None
    return Sheet(f"The form of {forms.net.title}", tuple(formula(t.id, t.G, "G =") for t in terms),
                 f"{len(terms)} terms, one per route; ω = Σ trace(G dW)")


def equations_sheet(forms: Forms) -> Sheet:
    """encoder(n): the network's definitions and its form."""
    rows = tuple(Formula("", f"{printing.latex(a)} = {printing.latex(w)}",
                         f"{printing.html(a)} = {printing.html(w)}") for a, w in forms.net.equations())
    return Sheet(forms.net.title, rows + (formula("form", forms.net.form, r"\omega =", "ω ="),))


# ---- writing ----

def export_sheet(path: str | Path, sheet: Sheet) -> list[Path]:
    """Write the sheet by the path's suffix; returns every file written (further pages of SVG and PNG)."""
    fmt = format_of(path, FORMATS)
    path = Path(path)
    if not sheet.formulas:
        raise UserError("nothing to export: the sheet has no formulas")
    try:
        if fmt == "tex":
            path.write_text(tex_document(sheet), encoding="utf-8")
            return [path]
        if fmt == "html":
            path.write_text(html_document(sheet), encoding="utf-8")
            return [path]
        return _write_pages(path, sheet, fmt)
    except layout.FormulaError as e:
        raise UserError(str(e)) from None
    except OSError as e:
        raise UserError(f"cannot write {path}: {e.strerror}") from None


def tex_document(sheet: Sheet) -> str:
    """A standalone LaTeX document (article, amsmath): one align* per formula, wrapped lines."""
    out = [r"\documentclass[10pt]{article}", r"\usepackage[a4paper,margin=2cm]{geometry}",
           r"\usepackage{amsmath}", r"\allowdisplaybreaks", r"\setlength{\parindent}{0pt}",
           r"\begin{document}", r"\section*{" + _tex_text(sheet.title) + "}"]
    if sheet.subtitle:
        out.append(_tex_text(sheet.subtitle) + r"\par")
    for k, f in enumerate(sheet.formulas):
        if f.label:
            out.append(r"\medskip\texttt{" + _tex_text(f.label) + "}")
        lines = layout.wrap(f.tex, TEX_WIDTH_PT, 10.0)
        out.append(r"\begin{align*}")
        out.append(" \\\\\n".join("  &" + line for line in lines))
        out.append(r"\end{align*}")
        report_progress(k + 1, len(sheet.formulas), "rows laid out")
    out.append(r"\end{document}")
    return "\n".join(out) + "\n"


def html_document(sheet: Sheet) -> str:
    """A well-formed (XHTML-compatible) page: each formula as inline SVG (mathtext), its LaTeX in a title
    and the HTML printer's text as its label for screen readers."""
    esc = html_escape.escape
    rows = []
    for k, f in enumerate(sheet.formulas):
        plain = re.sub(r"<[^>]+>", "", f.html) if f.html else f.tex
        math = _inline_svg(layout.wrap(f.tex, PAGE_WIDTH_PT, FONT_PT), plain)
        label = f'<div class="label">{esc(f.label)}</div>' if f.label else ""
        rows.append(f'<div class="row">{label}<div class="math" title="{esc(f.tex)}">{math}</div></div>')
        report_progress(k + 1, len(sheet.formulas), "rows drawn")
    return ("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
            "<meta charset=\"utf-8\"/>\n"
            f"<title>{esc(sheet.title)}</title>\n"
            "<style>body{font-family:serif;margin:2em;max-width:60em} .label{font-family:monospace;"
            "color:#555;margin-top:1em} .math svg{max-width:100%;height:auto}"
            "</style>\n</head>\n<body>\n"
            f"<h1>{esc(sheet.title)}</h1>\n" + (f"<p>{esc(sheet.subtitle)}</p>\n" if sheet.subtitle else "")
            + "\n".join(rows) + "\n</body>\n</html>\n")


def pages(sheet: Sheet, width_pt: float = PAGE_WIDTH_PT, fontsize: float = FONT_PT,
          page_lines: int | None = None) -> list[list[tuple[str, list[str]]]]:
    """The sheet's rows as (label, wrapped lines), split into pages of about `page_lines` lines."""
    page_lines = PAGE_LINES if page_lines is None else page_lines
    out: list[list[tuple[str, list[str]]]] = [[]]
    used = 0
    for k, f in enumerate(sheet.formulas):
        report_progress(k, len(sheet.formulas), "rows laid out")
        lines = layout.wrap(f.tex, width_pt, fontsize)
        need = len(lines) + (1 if f.label else 0)
        if out[-1] and used + need > page_lines:
            out.append([])
            used = 0
        out[-1].append((f.label, lines))
        used += need
    return out


def page_paths(path: Path, n: int) -> list[Path]:
    return [path] + [path.with_name(f"{path.stem}-p{k}{path.suffix}") for k in range(2, n + 1)]


def _write_pages(path: Path, sheet: Sheet, fmt: str) -> list[Path]:
    import matplotlib
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.figure import Figure

    laid = pages(sheet)
    paths = page_paths(path, len(laid))
    fs = FONT_PT
    dpi = figure_options().dpi
    pitch = {"title": 2.0 * fs, "note": 1.6 * fs, "label": 1.5 * fs, "math": 2.1 * fs}
    style = {"title": dict(fontsize=fs * 1.15, weight="bold"), "note": dict(fontsize=fs * 0.8, color="#444"),
             "label": dict(fontsize=fs * 0.8, family="monospace", color="#333"), "math": dict(fontsize=fs)}
    for k, (page, target) in enumerate(zip(laid, paths)):
        report_progress(k, len(laid), "pages written")
        items = [("title", sheet.title + (f"  (page {k + 1} of {len(laid)})" if len(laid) > 1 else ""))]
        if sheet.subtitle and k == 0:
            items.append(("note", sheet.subtitle))
        for label, lines in page:
            if label:
                items.append(("label", label))
            items += [("math", line) for line in lines]
        # Drawn once, on a page as large as its ink plus a margin: the box matplotlib's tight bounding box would
        # find (it drew every page twice, and each drawing parsed every formula again: mathtext's parse cache
        # holds 50 and is kept per renderer). Texts are placed in points from the first baseline and measured
        # where they are: plain text by the Agg renderer (cheap), formulas by the extents the layout measured
        # (cached, mostly from wrapping), with the least ascent and descent matplotlib gives a line of text.
        fig = Figure(dpi=dpi)
        to_pt = 72.0 / dpi
        measurer = RendererAgg(1, 1, dpi)
        placed = []  # (artist, x, baseline) in points
        box = [float("inf"), float("inf"), -float("inf"), -float("inf")]  # left, bottom, right, top in points
        y = 0.0
        for kind, text in items:
            y -= pitch[kind]
            s = f"${text}$" if kind == "math" else text.replace("$", r"\$")
            t = fig.text(fs / 72, y / 72, s if kind != "math" else "x", va="baseline", ha="left",
                         transform=fig.dpi_scale_trans, **style[kind])
            e = t.get_window_extent(measurer)
            left, bottom, right, top = e.x0 * to_pt, e.y0 * to_pt, e.x1 * to_pt, e.y1 * to_pt
            if kind == "math":  # measuring a page's lines takes about as long as drawing them: a cancel
                w, h, d = layout.extent(text, fs)  # may stop here too
                report_progress(k, len(laid), "pages written")
                right, bottom, top = fs + w, min(bottom, y - d), max(top, y + h - d)
                t.set_text(s)
            placed.append((t, y))
            box = [min(box[0], left), min(box[1], bottom), max(box[2], right), max(box[3], top)]
        pad = fs  # points of white around the ink, as savefig's pad_inches was
        fig.set_size_inches((box[2] - box[0] + 2 * pad) / 72, (box[3] - box[1] + 2 * pad) / 72)
        for t, y in placed:
            t.set_position(((fs - box[0] + pad) / 72, (y - box[1] + pad) / 72))
        with layout._LOCK, matplotlib.rc_context({"svg.fonttype": "path"}):
            fig.savefig(target, format=fmt, dpi=dpi, facecolor="white")
    report_progress(len(laid), len(laid), "pages written")
    return paths


def _inline_svg(lines: list[str], label: str) -> str:
    """Formula lines drawn by mathtext as an <svg> element to put in a page (glyphs as paths: no font
    needed where it is opened)."""
    import io

    import matplotlib
    from matplotlib.figure import Figure

    fs = FONT_PT
    pitch = 2.1 * fs
    height = pitch * len(lines) + 0.6 * fs
    width = max([layout.width(t, fs) for t in lines] + [fs]) + fs
    fig = Figure(figsize=(width / 72, height / 72))
    for k, line in enumerate(lines):
        fig.text(0.5 * fs / width, 1 - (pitch * (k + 1) - 0.4 * fs) / height, f"${line}$", fontsize=fs,
                 va="baseline", ha="left")
    out = io.StringIO()
    with layout._LOCK, matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "formula"}):
        fig.savefig(out, format="svg", transparent=True)
    svg = out.getvalue()
    svg = svg[svg.index("<svg"):]
    aria = html_escape.escape(label, quote=True)
    return svg.replace("<svg", f'<svg role="img" aria-label="{aria}"', 1)


def _tex_text(s: str) -> str:
    """Plain text for LaTeX's text mode (IDs have _ @ # { } and the like)."""
    repl = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "_": r"\_", "#": r"\#", "&": r"\&",
            "%": r"\%", "$": r"\$", "^": r"\^{}", "~": r"\~{}", "·": r"\textperiodcentered{}",
            "ω": r"$\omega$", "Σ": r"$\Sigma$", "—": "---", "−": "-"}
    return "".join(repl.get(ch, ch) for ch in s)


__all__ = ["FORMATS", "FILTERS", "Formula", "Sheet", "formula", "word_rows", "term_sheet", "weight_sheet",
           "stage_sheet", "form_sheet", "equations_sheet", "export_sheet", "tex_document", "html_document",
           "pages", "page_paths"]
