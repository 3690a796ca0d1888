"""Formula snapshots (engine/forms/snapshot_export.py) and the layout under them: every format writes a
valid file — the .tex compiles when a TeX install is present, the SVG parses, the PNG opens, the HTML is
well-formed — long formulas wrap within the page and long forms continue on further pages."""

import dataclasses
import functools
import shutil
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from engine.errors import UserError
from engine.figures import formula_layout as layout
from engine.forms import Forms, encoder, latex
from engine.forms import snapshot_export as se


@pytest.fixture(scope="module")
def depth2():
    return Forms(encoder(2))


def sheets(f):
    t = f.term("K_0 via X_1@Z_1#1")
    return {"term": se.term_sheet(f, t), "weight": se.weight_sheet(f, "K_0"),
            "stage": se.stage_sheet(f, "shiftmm", f.form_stages()[3][1]), "form": se.form_sheet(f),
            "equations": se.equations_sheet(f)}


@pytest.mark.parametrize("what", ["term", "weight", "stage", "form", "equations"])
def test_every_format_writes_a_valid_file(tmp_path, depth2, what):
    whole = sheets(depth2)[what]
    # mathtext reads every line of every row of the sheet, as the SVG and PNG pages wrap them; the writers differ
    # in what they do with the title, labels and rows, not in how many rows there are, so they write the first
    # three (the stage and the form have 24: a PNG of them all is a mathtext parse per line)
    for f in whole.formulas:
        for line in layout.wrap(f.tex, se.PAGE_WIDTH_PT, se.FONT_PT):
            assert layout.width(line, se.FONT_PT) > 0
    sheet = dataclasses.replace(whole, formulas=whole.formulas[:3])
    for ext in ("png", "svg", "html", "tex"):
        paths = se.export_sheet(tmp_path / f"{what}.{ext}", sheet)
        assert paths and all(p.stat().st_size > 0 for p in paths)
        for p in paths:
            if ext == "svg":
                assert ET.parse(p).getroot().tag.endswith("svg")
            elif ext == "png":
                from PIL import Image
                with Image.open(p) as im:
                    im.verify()
            elif ext == "html":
                root = ET.fromstring(p.read_text(encoding="utf-8").split("\n", 1)[1])
                assert root.tag.endswith("html")
    tex = (tmp_path / f"{what}.tex").read_text(encoding="utf-8")
    assert tex.startswith(r"\documentclass") and tex.rstrip().endswith(r"\end{document}")


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no TeX install")
@pytest.mark.parametrize("what", ["term", "form", "equations"])
def test_the_tex_compiles_on_its_own(tmp_path, depth2, what):
    se.export_sheet(tmp_path / "f.tex", sheets(depth2)[what])
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "f.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:]
    assert (tmp_path / "f.pdf").stat().st_size > 0


def test_the_term_sheet_holds_the_terms_word_and_its_G(depth2):
    t = depth2.term("K_0 via X_1@Z_1#1")
    sheet = se.term_sheet(depth2, t)
    assert sheet.formulas[1].tex == "G = " + latex(t.G)
    assert "4 operators" in sheet.subtitle and "L1.k" in sheet.subtitle
    assert len(se.weight_sheet(depth2, "K_0").formulas) == 3


def test_long_formulas_wrap_within_the_width():
    f = Forms(encoder(3))
    tex = latex(f.term_word(f.term_at(0)))
    assert layout.width(tex) > 400
    lines = layout.wrap(tex, 300)
    assert len(lines) >= 2
    assert all(layout.width(line) <= 300 + 1 for line in lines)
    assert all(r"\left" not in line and r"\right" not in line for line in lines)
    img = layout.render(lines, 12, 100, (10, 20, 30))
    assert img.dtype == np.uint8 and img.shape[2] == 4 and img[..., 3].max() > 0
    assert (img[..., :3] == (10, 20, 30)).all()


def test_a_long_form_continues_on_further_pages(tmp_path, depth2, monkeypatch):
    monkeypatch.setattr(se, "PAGE_LINES", 6)  # three rows of a label and one line each
    sheet = se.form_sheet(depth2)
    laid = se.pages(sheet)
    assert len(laid) >= 2 and sum(len(rows) for rows in laid) == 24
    assert all(sum(1 + len(lines) for _, lines in page) <= se.PAGE_LINES for page in laid)
    first_rows = dataclasses.replace(sheet, formulas=sheet.formulas[:7])  # drawing all 24 shows no more
    laid = se.pages(first_rows)
    assert len(laid) == 3
    paths = se.export_sheet(tmp_path / "form.png", first_rows)
    assert [p.name for p in paths] == ["form.png"] + [f"form-p{k}.png" for k in range(2, len(laid) + 1)]


def test_chunks_break_outside_braces_only():
    assert layout.chunks(r"a + b - c\,d_{x\,y}") == ["a", "+ b", "- c", r"d_{x\,y}"]


def test_unknown_suffixes_and_too_many_terms_are_user_errors(tmp_path, depth2):
    with pytest.raises(UserError, match=r"\.tex"):
        se.export_sheet(tmp_path / "f.pdf", se.form_sheet(depth2))
    with pytest.raises(UserError, match="more than"):
        se.form_sheet(Forms(encoder(6, residual=True)))


def test_a_subtitle_wider_than_the_formulas_is_not_cut_and_png_takes_the_chosen_dpi(tmp_path):
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextPath
    from PIL import Image

    from engine.figures import export

    subtitle = "encoder(3) · weight blocks.1.W_Q · route L1.mlp · 12 operators · a subtitle wider than x²"
    sheet = se.Sheet("Term", (se.Formula("term", "x^{2}"),), subtitle)
    path = se.export_sheet(tmp_path / "t.png", sheet)[0]
    needed_pt = TextPath((0, 0), subtitle, size=0.8 * se.FONT_PT, prop=FontProperties()).get_extents().width
    with Image.open(path) as im:
        width, height = im.size
    assert width >= needed_pt * 150 / 72
    sharp = export.using_figure_options(export.FigureOptions(dpi=300), se.export_sheet, tmp_path / "s.png", sheet)
    with Image.open(sharp[0]) as im:
        assert abs(im.size[0] / width - 2) < 0.05 and abs(im.size[1] / height - 2) < 0.05


def test_the_html_page_shows_each_formula_as_mathematics(tmp_path, depth2):
    sheet = sheets(depth2)["weight"]
    path = se.export_sheet(tmp_path / "w.html", sheet)[0]
    root = ET.fromstring(path.read_text(encoding="utf-8").split("\n", 1)[1])
    svg = "{http://www.w3.org/2000/svg}svg"
    drawn = list(root.iter(svg))
    assert len(drawn) == len(sheet.formulas)
    for el, f in zip(drawn, sheet.formulas):
        assert el.get("role") == "img" and el.get("aria-label").startswith("G =")
        assert list(el.iter("{http://www.w3.org/2000/svg}path")) or list(el.iter("{http://www.w3.org/2000/svg}use"))


def test_one_operator_is_not_one_operators(depth2):
    t = depth2.term("K_0 via X_1@Z_1#1")
    assert t.operators == "4 operators" and dataclasses.replace(t, op_count=1).operators == "1 operator"


def test_a_paged_export_reports_rows_then_pages_and_a_cancel_leaves_no_page(tmp_path, depth2, monkeypatch):
    """A whole weight's sheet takes minutes: the writer says how far it is, and stops when told to."""
    from engine.figures.export import ExportCancelled, reporting_progress
    from engine.safe_io import write_whole

    monkeypatch.setattr(se, "PAGE_LINES", 6)
    sheet = dataclasses.replace(se.form_sheet(depth2), formulas=se.form_sheet(depth2).formulas[:7])
    reports = []
    paths = reporting_progress(lambda *r: reports.append(r), write_whole, tmp_path / "form.svg",
                               lambda at: se.export_sheet(at, sheet))
    rows = [r for r in reports if r[2] == "rows laid out"]
    pages = [r for r in reports if r[2] == "pages written"]
    assert [r[0] for r in rows] == list(range(7)) and {r[1] for r in rows} == {7}
    assert sorted({r[0] for r in pages}) == [0, 1, 2, 3] and {r[1] for r in pages} == {3} == {len(paths)}
    assert [r[0] for r in pages] == sorted(r[0] for r in pages)
    assert reports.index(rows[-1]) < reports.index(pages[0])  # laid out first, then drawn

    def stop_after_the_first_page(done, total, unit):
        if unit == "pages written" and done == 1:
            assert not list((tmp_path / "again").glob("form*"))  # page 1 is written, but not under its name
            raise ExportCancelled

    (tmp_path / "again").mkdir()
    with pytest.raises(ExportCancelled):
        reporting_progress(stop_after_the_first_page, write_whole, tmp_path / "again" / "form.svg",
                           lambda at: se.export_sheet(at, sheet))
    assert not list((tmp_path / "again").iterdir())  # neither the page written nor its hidden folder


def test_tex_and_html_report_every_row(tmp_path, depth2):
    from engine.figures.export import reporting_progress

    sheet = dataclasses.replace(se.form_sheet(depth2), formulas=se.form_sheet(depth2).formulas[:3])
    for ext, unit in (("tex", "rows laid out"), ("html", "rows drawn")):
        reports = []
        reporting_progress(lambda *r: reports.append(r), se.export_sheet, tmp_path / f"f.{ext}", sheet)
        assert reports == [(k, 3, unit) for k in (1, 2, 3)]


@pytest.mark.parametrize("dpr", [1.0, 2.0])
def test_a_formula_is_laid_out_at_the_height_it_is_drawn_before_it_is_drawn(depth2, dpr):
    """The forms pane gives a row its height from the layout, then draws into it: the image must have that
    height exactly, and no line's ink may be cut by its slot."""
    from matplotlib.font_manager import FontProperties

    texs = [latex(t.G) for t in depth2.terms(None)[:6]] + [r"\omega = x", r"\left[ A_{1} \right]^{t}"]
    for tex in texs:
        for width_px in (300, 900):
            slots, height = layout.lay_out_formula(tex, width_px, dpr)
            lines = layout.wrap(tex, width_px * 72 / 96)
            assert len(slots) == len(lines) and height == sum(slots) + 2 * layout.PAD
            _, _, h = layout.render_formula(tex, width_px, dpr, (0, 0, 0), slots=slots)
            assert h == height
            for line, slot in zip(lines, slots):
                ink = layout._parser("agg").parse(f"${line}$", dpi=96 * dpr, prop=FontProperties(size=12)).image
                assert np.asarray(ink).shape[0] <= slot


def test_wrapping_measures_the_whole_formula_only_when_it_may_fit(monkeypatch):
    """A long formula's own parse costs as much as drawing it: wrap packs its pieces and measures the
    whole only when the pieces fit on one line (a weight's 676 terms as LaTeX: about 100 s before, 5 s after)."""
    tex = latex(Forms(encoder(3)).term_at(0).G)
    layout.extent.cache_clear()
    measured = []
    real = layout.extent.__wrapped__
    monkeypatch.setattr(layout, "extent", lambda t, fs=12.0: measured.append(t) or real(t, fs))
    assert len(layout.wrap(tex, 300)) > 1 and tex not in measured
    assert layout.wrap("x + y", 300) == ["x + y"] and "x + y" in measured


def test_a_page_is_drawn_once_with_a_margin_around_its_ink(tmp_path, monkeypatch):
    """A page is as large as its ink plus the margin (the box savefig's tight bounding box found, which drew the
    page twice and parsed every formula again): every line parsed once at the page's resolution, nothing cut,
    about 12 pt of white on each side, the deepest line last and the widest formula at the right."""
    from matplotlib import mathtext
    from PIL import Image

    sheet = se.Sheet("T", (se.Formula("a", r"x^{2^{k}}"), se.Formula("b", r"\sum_{i} A_{i_{j_{k}}} B^{t} C D E F G H")))
    parsed = []  # mathtext's parses, not the hits of its cache
    real = mathtext.MathTextParser._parse_cached.__wrapped__
    monkeypatch.setattr(mathtext.MathTextParser, "_parse_cached", functools.lru_cache(50)(
        lambda self, s, dpi, *rest: parsed.append((s, dpi)) or real(self, s, dpi, *rest)))
    path = se.export_sheet(tmp_path / "t.png", sheet)[0]
    assert sorted(s for s, dpi in parsed if dpi == 150) == sorted(f"${f.tex}$" for f in sheet.formulas)
    with Image.open(path) as im:
        ink = np.asarray(im.convert("L")) < 250
    rows, cols = np.nonzero(ink)
    margins = (rows.min(), ink.shape[0] - 1 - rows.max(), cols.min(), ink.shape[1] - 1 - cols.max())
    pad = se.FONT_PT * 150 / 72
    assert all(pad - 4 <= m <= pad + 4 for m in margins), margins


def test_a_formula_drawn_again_in_another_colour_is_not_parsed_again(monkeypatch):
    """A theme's change draws every formula on screen again in its new colour: the lines' ink is kept, so that
    costs no parse (mathtext's own cache holds 50, fewer than a page's lines at two widths)."""
    from matplotlib import mathtext

    parsed = []  # mathtext's parses, not the hits of its cache
    real = mathtext.MathTextParser._parse_cached.__wrapped__
    monkeypatch.setattr(mathtext.MathTextParser, "_parse_cached", functools.lru_cache(50)(
        lambda self, s, dpi, *rest: parsed.append(s) or real(self, s, dpi, *rest)))
    layout.drawn.cache_clear()
    tex = r"\mathrm{tr}\left(A_{1}^{t}\,B\right) + C_{2}"
    dark, w, h = layout.render_formula(tex, 300, 1.0, (0, 0, 0))
    drawn = len(parsed)
    mathtext.MathTextParser._parse_cached.cache_clear()  # as a page of lines at two widths leaves it
    light, w2, h2 = layout.render_formula(tex, 300, 1.0, (250, 250, 250))
    assert len(parsed) == drawn and (w2, h2) == (w, h)
    dark, light = (np.frombuffer(b, np.uint8).reshape(h, w, 4) for b in (dark, light))
    assert (dark[..., 3] == light[..., 3]).all() and dark[..., 3].max() > 0 and (light[..., :3] == 250).all()


def test_a_formula_that_fits_on_one_line_is_parsed_once_for_its_layout_and_its_image(monkeypatch):
    """On screen a formula is laid out, then drawn: when it fits on one line, measuring it apart cost as much as
    drawing it, so the layout draws it and the image is that drawing."""
    from matplotlib import mathtext

    parsed = []
    real = mathtext.MathTextParser._parse_cached.__wrapped__
    monkeypatch.setattr(mathtext.MathTextParser, "_parse_cached", functools.lru_cache(50)(
        lambda self, s, dpi, *rest: parsed.append(s) or real(self, s, dpi, *rest)))
    layout.drawn.cache_clear()
    tex = r"\mathrm{tr}\left(B_{7}^{t}\,C\right) + D_{3}"
    slots, height = layout.lay_out_formula(tex, 600, 1.0)
    _, _, h = layout.render_formula(tex, 600, 1.0, (0, 0, 0), slots=slots)
    assert len(slots) == 1 and h == height and parsed.count(f"${tex}$") == 1
