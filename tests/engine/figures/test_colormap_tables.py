"""The colour maps the screen draws from resources/colormaps.json are matplotlib's, which the exports draw
with: the same 256 colours, for every map the app offers."""

from __future__ import annotations

import numpy as np
import pytest

from engine.figures import colormap_tables, export


@pytest.mark.parametrize("name", colormap_tables.NAMES)
def test_each_table_is_matplotlibs_map(name):
    got = colormap_tables.table(name)
    assert got.shape == (colormap_tables.ENTRIES, 3) and got.dtype == np.uint8
    np.testing.assert_array_equal(got, colormap_tables.from_matplotlib(name))


def test_the_heatmap_kinds_maps_are_tabled_and_an_unknown_name_is_refused():
    assert set(export.COLORMAPS.values()) <= set(colormap_tables.NAMES)
    with pytest.raises(ValueError, match="unknown colour map 'jet'"):
        colormap_tables.table("jet")


def test_writing_the_file_again_gives_the_file_shipped(tmp_path):
    from importlib import resources

    colormap_tables.write(tmp_path / "colormaps.json")
    shipped = (resources.files("resources") / colormap_tables.FILE).read_text(encoding="utf-8")
    assert (tmp_path / "colormaps.json").read_text(encoding="utf-8") == shipped
