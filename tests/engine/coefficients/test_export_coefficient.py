"""`gpt-explorer export --what coefficient`: valid files holding the numbers of the coefficient store."""

from __future__ import annotations

import csv
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PIL import Image

from engine.coefficients import export as coefficients_export
from engine.cli import main
from engine.coefficients.cache import CoefficientStore
from engine.errors import UserError

from .test_coefficients import tiny_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return tiny_run(tmp_path_factory.mktemp("export-coefficient") / "run")


def cli(capsys, *argv) -> tuple[int, str, str]:
    rc = main(["export", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_npy_holds_G_at_the_step(run, tmp_path, capsys):
    out = tmp_path / "g.npy"
    rc, stdout, err = cli(capsys, "--run", run.path, "--what", "coefficient", "--weight", "blocks.0.W_Q",
                          "--step", 2, "--out", out)
    assert rc == 0, err
    assert stdout.strip() == f"wrote {out}"
    want = CoefficientStore(run, disk=False).record("blocks.0.W_Q", 2).G
    np.testing.assert_array_equal(np.load(out), want)
    rc, _, err = cli(capsys, "--run", run.path, "--what", "coefficient", "--weight", "blocks.1.b_in",
                     "--out", tmp_path / "newest.npy")
    assert rc == 0, err
    got = np.load(tmp_path / "newest.npy")
    assert got.shape == (32,)  # a bias keeps its own shape
    np.testing.assert_array_equal(got, CoefficientStore(run, disk=False).record("blocks.1.b_in", 6).G)


@pytest.mark.parametrize("suffix", ["png", "svg", "pdf"])
def test_heatmap_figures_are_valid(run, tmp_path, capsys, suffix):
    out = tmp_path / f"g.{suffix}"
    rc, _, err = cli(capsys, "--run", run.path, "--what", "coefficient", "--weight", "blocks.1.W_O", "--step", 4,
                     "--out", out)
    assert rc == 0, err
    data = out.read_bytes()
    if suffix == "svg":
        assert "G of blocks.1.W_O · step 4" in "".join(ET.fromstring(data).itertext())
    else:
        assert data.startswith(b"\x89PNG" if suffix == "png" else b"%PDF-")


def test_csv_holds_the_norms_over_steps(run, tmp_path, capsys):
    out = tmp_path / "norms.csv"
    rc, _, err = cli(capsys, "--run", run.path, "--what", "coefficient", "--weight", "blocks.1.W_K", "--out", out)
    assert rc == 0, err
    rows = list(csv.reader(open(out, encoding="utf-8")))
    header, body = rows[0], np.array([[float(v) for v in r] for r in rows[1:]])
    store = CoefficientStore(run, disk=False)
    assert header[:4] == ["step", "norm_G", "norm_grad", "agreement"]
    np.testing.assert_array_equal(body[:, 0], store.steps())
    assert [r[0] for r in rows[1:]] == [str(s) for s in store.steps()]  # steps as integers (issue 40)
    for i, s in enumerate(store.steps()):
        rec = store.record("blocks.1.W_K", s)
        assert body[i, 1] == pytest.approx(np.linalg.norm(rec.G), rel=1e-6)
        assert body[i, header.index("class:direct")] == pytest.approx(np.linalg.norm(rec.classes["direct"]),
                                                                       rel=1e-6)


def test_gif_has_one_frame_per_saved_step(run, tmp_path, capsys):
    out = tmp_path / "g.gif"
    rc, _, err = cli(capsys, "--run", run.path, "--what", "coefficient", "--weight", "blocks.0.W_V", "--out", out)
    assert rc == 0, err
    assert "animation 100%" in err
    with Image.open(out) as im:
        assert im.format == "GIF" and im.n_frames == len(CoefficientStore(run, disk=False).steps()) == 5


def test_mp4_without_ffmpeg_says_so(run, tmp_path, capsys, monkeypatch):
    from matplotlib import animation

    monkeypatch.setattr(animation.FFMpegWriter, "isAvailable", classmethod(lambda cls: False))
    rc, _, err = cli(capsys, "--run", run.path, "--what", "coefficient", "--weight", "W_E", "--out", tmp_path / "a.mp4")
    assert rc != 0 and "ffmpeg" in err and "Traceback" not in err


@pytest.mark.parametrize("argv,message", [
    (["--weight", "blocks.9.W_Q"], "no weight 'blocks.9.W_Q'"),
    ([], "--weight is required"),
    (["--weight", "W_E", "--step", 5], "no weights saved at step 5"),
])
def test_mistakes_are_one_line(run, tmp_path, capsys, argv, message):
    rc, _, err = cli(capsys, "--run", run.path, "--what", "coefficient", *argv, "--out", tmp_path / "x.npy")
    assert rc != 0 and message in err and "Traceback" not in err


def test_stack_and_part_exports(run, tmp_path):
    store = CoefficientStore(run, disk=False)
    path = coefficients_export.save_stack(tmp_path / "stack.npy", store, "blocks.1.W_Q")
    stack = np.load(path)
    assert stack.shape == (len(store.steps()), 16, 16)
    np.testing.assert_array_equal(stack[2], store.record("blocks.1.W_Q", 3).G)
    coefficients_export.export_coefficient(tmp_path / "c.npy", store, "blocks.1.W_Q", 4, part="L1.mlp")
    np.testing.assert_array_equal(np.load(tmp_path / "c.npy"), store.record("blocks.1.W_Q", 4).classes["L1.mlp"])
    with pytest.raises(UserError):
        coefficients_export.save_stack(tmp_path / "stack.csv", store, "blocks.1.W_Q")
