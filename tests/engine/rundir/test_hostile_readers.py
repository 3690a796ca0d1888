"""One loading path for every command (issue 27, class 4): weights whose checksum files were deleted are
still checked against the digest in their own header; `export` falls back past damaged weights as
`sample` and `train --run` do; the coefficient cache reads weights through the same checks and names a
damaged file."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from engine.cli import main
from engine.coefficients.cache import read_array
from engine.rundir.runs import Run, RunError
from tests.engine.rundir.test_hostile_runs import corpus, finished, flip_last_byte  # noqa: F401 (a fixture)


@pytest.fixture
def run_dir(tmp_path, corpus) -> Path:  # noqa: F811
    return finished(tmp_path, corpus)


def garble_unverified(path: Path) -> None:
    """Garbled tensor bytes, with the checksum file beside them deleted."""
    flip_last_byte(path)
    side = path.with_name(path.name + ".sha256")
    (side if side.exists() else path.parent / "checksums.json").unlink()


def test_garbled_weights_whose_checksum_files_are_deleted_are_still_refused(run_dir):
    garble_unverified(run_dir / "snapshots" / "step-000000.safetensors")
    with pytest.raises(RunError, match="step-000000.safetensors does not match the checksum in its header"):
        Run(run_dir).load_weights(0)
    garble_unverified(run_dir / "checkpoints" / "step-000010" / "model.safetensors")
    with pytest.raises(RunError, match="step-000010/model.safetensors does not match the checksum in its header"):
        Run(run_dir).load_checkpoint(10)


def test_garbled_weights_never_reach_sampling_or_export(run_dir, tmp_path, capsys):
    garble_unverified(run_dir / "checkpoints" / "step-000010" / "model.safetensors")
    garble_unverified(run_dir / "snapshots" / "step-000010.safetensors")
    expected = Run(run_dir).load_checkpoint(5)[0]
    assert main(["sample", "--run", str(run_dir), "--tokens", "10", "--seed", "1"]) == 0
    assert "skipped checkpoints/step-000010" in capsys.readouterr().err
    for what, out in (("attention", "a.csv"), ("posenc", "p.csv"), ("coefficient", "g.npy")):
        extra = ["--weight", "blocks.0.W_Q"] if what == "coefficient" else []
        assert main(["export", "--run", str(run_dir), "--what", what, "--out", str(tmp_path / out), *extra]) == 0
        out_, err = capsys.readouterr()
        assert "step 10" in err and "using step 5" in err, (what, err)
    g = np.load(tmp_path / "g.npy")
    assert g.shape == tuple(expected["blocks.0.W_Q"].shape)


def test_export_names_a_run_with_no_intact_weights(run_dir, tmp_path, capsys):
    for p in sorted((run_dir / "snapshots").glob("*.safetensors")):
        flip_last_byte(p)
    for p in sorted((run_dir / "checkpoints").glob("step-*/model.safetensors")):
        flip_last_byte(p)
    assert main(["export", "--run", str(run_dir), "--what", "attention", "--out", str(tmp_path / "a.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no intact weights" in err[0]


DAMAGE = {
    "garbled": lambda p: flip_last_byte(p),
    "garbled, sidecar deleted": garble_unverified,
    "truncated": lambda p: p.write_bytes(p.read_bytes()[:100]),
    "emptied": lambda p: p.write_bytes(b""),
    "a fifo": lambda p: (p.unlink(), os.mkfifo(p)),
    "a link to an endless device": lambda p: (p.unlink(), p.symlink_to("/dev/zero")),
    "non-finite": lambda p: _resave(p, lambda w: w.fill_(float("nan"))),
    "misshapen": lambda p: _resave(p, lambda w: None, shape=(3, 3)),
}


def _resave(path: Path, change, shape=None) -> None:
    from safetensors.torch import load_file

    from engine.rundir.layout import parse_step
    from engine.rundir.runs import save_weights

    weights = load_file(str(path))
    if shape is not None:
        weights["blocks.0.W_Q"] = torch.zeros(shape)
    change(weights["blocks.0.W_Q"])
    path.with_name(path.name + ".sha256").unlink()
    save_weights(weights, path, parse_step(path.name))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX files")
@pytest.mark.parametrize("damage", DAMAGE)
def test_the_coefficient_cache_reads_through_the_checks_and_names_the_file(damage, run_dir):
    shape = tuple(Run(run_dir).load_weights(0)["blocks.0.W_Q"].shape)
    assert read_array(run_dir, 0, "blocks.0.W_Q", shape).shape == shape
    DAMAGE[damage](run_dir / "snapshots" / "step-000000.safetensors")
    with pytest.raises(RunError, match="snapshots/step-000000.safetensors"):
        read_array(run_dir, 0, "blocks.0.W_Q", shape)
    at_5 = read_array(run_dir, 5, "blocks.0.W_Q", shape)
    DAMAGE[damage](run_dir / "snapshots" / "step-000005.safetensors")  # its checkpoint holds it too
    assert np.array_equal(read_array(run_dir, 5, "blocks.0.W_Q", shape), at_5)


# ---- a checkpoint's own training state, checked before it is used ---------------------------------

BAD_STATES = {"wall_s string": ("wall_s", "long"), "wall_s nan": ("wall_s", float("nan")),
              "wall_s negative": ("wall_s", -5.0), "best_val vector": ("best_val", torch.tensor([1.0, 2.0])),
              "best_val nan": ("best_val", float("nan")), "step bool": ("step", True),
              "step other": ("step", 5), "step negative": ("step", -10), "moments nan": ("optimizer", None)}


@pytest.mark.parametrize("case", BAD_STATES)
def test_a_checkpoint_with_a_bad_training_state_is_skipped_or_refused_in_one_line(case, run_dir, tmp_path, capsys):
    from engine.rundir.integrity import write_checksums
    from engine.rundir.runs import MODEL_FILE, STATE_FILE

    ckpt = run_dir / "checkpoints" / "step-000010"
    state = torch.load(ckpt / STATE_FILE, weights_only=True)
    key, value = BAD_STATES[case]
    if key == "optimizer":
        next(iter(state["optimizer"]["state"].values()))["exp_avg"].fill_(float("nan"))
    else:
        state[key] = value
    torch.save(state, ckpt / STATE_FILE)
    write_checksums(ckpt, [MODEL_FILE, STATE_FILE])
    argv = ["train", "--fork", str(run_dir), "--set", "train.lr=1e-3", "--fork-step", "10", "--run",
            str(tmp_path / "fork")]
    if key == "best_val":  # a fork's best is its own from its first step: the parent's is not read
        assert main(argv) == 0
    else:
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "checkpoint" in err[0], err
        assert not (tmp_path / "fork").exists()
    capsys.readouterr()
    assert main(["train", "--run", str(run_dir), "--steps", "12"]) in (0, 2)  # resumed from step 5, or refused
    out, err = capsys.readouterr()
    assert "Traceback" not in err and ("resuming at step 5" in out or len(err.strip().splitlines()) == 1)
