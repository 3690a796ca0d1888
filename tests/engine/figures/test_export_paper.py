"""Figures fit for a paper (issue 16, item 7): square cells for square matrices, axis titles on a grid, a
colour bar that names its quantity, a caption with run, step and prompt, and the chosen DPI and width."""

import struct
import xml.etree.ElementTree as ET

import numpy as np

from engine.figures import export

TOKENS = list("First Citizen:\nB")  # 16 single characters


def png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def stack(R=2, C=3, n=16):
    rng = np.random.default_rng(1)
    a = rng.random((R, C, n, n))
    a[..., np.triu_indices(n, 1)[0], np.triu_indices(n, 1)[1]] = -np.inf
    return a


def test_grid_tiles_are_square_titled_on_the_outside_and_label_every_token_upright():
    fig = export.grid_figure(stack(), row_labels=TOKENS, col_labels=TOKENS, value_title="attention weight")
    tiles = [ax for ax in fig.axes if ax.images]
    assert len(tiles) == 6
    for ax in tiles:
        assert ax.get_aspect() == 1.0
        x0, x1 = ax.get_xlim()
        y0, y1 = ax.get_ylim()
        assert abs(abs(x1 - x0) - abs(y1 - y0)) < 1e-9
    bottom_left = tiles[3]
    assert bottom_left.get_xlabel() == "key" and bottom_left.get_ylabel() == "query"
    labels = [t.get_text() for t in bottom_left.get_xticklabels()]
    assert len(labels) == 16 and all(t.get_rotation() == 0 for t in bottom_left.get_xticklabels())
    bar = next(ax for ax in fig.axes if not ax.images and ax.get_ylabel())
    assert bar.get_ylabel() == "attention weight, hatched: masked"


def test_a_rectangular_matrix_fills_its_axes_and_a_square_one_has_square_cells():
    assert export.matrix_figure(np.ones((4, 9))).axes[0].get_aspect() == "auto"
    assert export.matrix_figure(np.ones((5, 5))).axes[0].get_aspect() == 1.0


def test_a_caption_names_run_step_and_prompt_in_the_figure(tmp_path):
    caption = "run tiny-20261123 · step 250 · prompt “First Citizen”"
    svg = export.export_matrix(tmp_path / "a.svg", np.eye(4), kind="probability", title="attention weights",
                               value_title="attention weight", caption=caption)
    text = "".join(ET.parse(svg).getroot().itertext())
    assert caption in text and "attention weight" in text and "NaN" not in text


def test_the_chosen_resolution_and_width_set_the_png_size(tmp_path):
    plain = png_size(export.export_matrix(tmp_path / "plain.png", np.eye(6)))
    options = export.FigureOptions(dpi=300, width_in=3.5)
    path = export.using_figure_options(options, export.export_matrix, tmp_path / "paper.png", np.eye(6))
    w, h = png_size(path)
    assert w == 1050 and abs(h / w - plain[1] / plain[0]) < 0.01
    wide = export.using_figure_options(export.FigureOptions(dpi=100), export.export_grid, tmp_path / "g.png",
                                       stack())
    fig = export.grid_figure(stack())
    assert png_size(wide) == tuple(round(v * 100) for v in fig.get_size_inches())


def pdf_font_types(path) -> set[bytes]:
    """The /Subtype of every font a PDF embeds (matplotlib writes font dictionaries uncompressed)."""
    import re

    data = path.read_bytes()
    return set(re.findall(rb"/Type\s*/Font\b[^>]*?/Subtype\s*/(\w+)", data)) | \
        set(re.findall(rb"/Subtype\s*/(\w+)[^>]*?/Type\s*/Font\b", data))


def test_pdfs_embed_truetype_fonts_not_type_3(tmp_path):
    """Issue 40: exported PDFs embedded Type 3 fonts, which IEEE PDF eXpress and some ACM checks reject."""
    figure = export.export_matrix(tmp_path / "m.pdf", np.eye(4), row_labels=TOKENS[:4], col_labels=TOKENS[:4],
                                  title="a title", value_title="value")
    loss = export.export_loss(tmp_path / "l.pdf", [{"step": s, "train_loss": 3 - s / 10} for s in range(1, 5)])
    for path in (figure, loss):
        kinds = pdf_font_types(path)
        assert kinds and b"Type3" not in kinds, (path.name, kinds)
