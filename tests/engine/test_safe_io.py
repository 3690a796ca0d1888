"""engine/safe_io.py's write_whole: an export's files appear under their names only complete, and a
failed or cancelled one leaves nothing (the bounded reads are tested with hostile files in
tests/engine/rundir/test_hostile_files.py)."""

from __future__ import annotations

import pytest

from engine.errors import UserError
from engine.safe_io import UnsafeFileError, write_whole


def test_pages_appear_only_once_all_are_whole_and_come_back_in_order(tmp_path):
    target = tmp_path / "sheet.svg"

    def write(at):
        assert at.name == "sheet.svg" and at.parent != tmp_path and at.parent.parent == tmp_path
        for k in (1, 2, 10):
            name = at if k == 1 else at.with_name(f"sheet-p{k}.svg")
            name.write_text(f"page {k}")
            assert not list(tmp_path.glob("sheet*"))  # nothing under the names asked for while writing
        return at

    paths = write_whole(target, write)
    assert paths == [target, tmp_path / "sheet-p2.svg", tmp_path / "sheet-p10.svg"]
    assert [p.read_text() for p in paths] == ["page 1", "page 2", "page 10"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sheet-p10.svg", "sheet-p2.svg", "sheet.svg"]


def test_a_failed_write_leaves_the_old_file_and_no_new_one(tmp_path):
    target = tmp_path / "g.png"
    target.write_bytes(b"the export before")

    def write(at):
        at.write_bytes(b"half of a")
        at.with_name("g-p2.png").write_bytes(b"page")
        raise RuntimeError("the disk is full")

    with pytest.raises(RuntimeError):
        write_whole(target, write)
    assert [p.name for p in tmp_path.iterdir()] == ["g.png"] and target.read_bytes() == b"the export before"


def test_a_write_that_makes_nothing_or_a_bad_place_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="wrote nothing"):
        write_whole(tmp_path / "x.csv", lambda at: None)
    with pytest.raises(UnsafeFileError, match="does not exist"):
        write_whole(tmp_path / "missing" / "x.csv", lambda at: at.write_text("1"))
    assert not list(tmp_path.iterdir())
