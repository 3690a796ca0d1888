"""Every door of the command line treats a step and a damaged file alike (issue 41's smaller doors): an unsaved
--step is refused in one line by every export, heads and sample (export --what routes ignored it); a saved
step that routes is given splits the intervals up to it; a snapshot replaced by the checkpoint of its step, and a
checkpoint folder missing a file, are named by the commands that met them (heads and interaction-map replaced
without a word, and such a folder was skipped silently)."""

from __future__ import annotations

import shutil

import pytest

from engine.rundir.runs import Run
from engine.text.corpus import shakespeare_text
from tests.engine.cli.test_cli_train import one_error_line, run_cli
from tests.engine.cli.test_export_cli import tiny_run

WHATS = ("loss", "attention", "mask", "posenc", "coefficient", "update", "heads", "routes", "interaction",
         "interaction-map")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """4 steps: snapshots at 0, 2, 4 and a checkpoint at 4."""
    return tiny_run(tmp_path_factory.mktemp("doors") / "run").path


def options(what: str) -> list:
    return {"coefficient": ["--weight", "blocks.0.W_Q"], "update": ["--weight", "blocks.0.W_Q"],
            "routes": ["--weight", "blocks.0.W_Q"], "interaction": ["--weight", "blocks.0.W_Q", "--other",
                                                                    "blocks.0.W_K"]}.get(what, [])


STRAY = {"--class to coefficient": (["--what", "coefficient", "--weight", "blocks.0.W_Q", "--class", "direct"],
                                     "--class does not apply to --what coefficient; it is for --what code"),
         "--weight to loss": (["--what", "loss", "--weight", "W_E"], "--weight does not apply to --what loss"),
         "--layer to mask": (["--what", "mask", "--layer", "0"], "--layer does not apply to --what mask; it is for "
                                                                 "--what attention"),
         "--prompt to heads": (["--what", "heads", "--prompt", "KING"], "it is for --what attention and mask"),
         "--other to routes": (["--what", "routes", "--weight", "W_E", "--other", "W_E"], "--other does not apply")}


@pytest.mark.parametrize("case", STRAY, ids=list(STRAY))
def test_an_export_option_its_what_does_not_read_is_refused(case, run, tmp_path, capsys):
    """Every option a --what did not read was ignored without a word: --what coefficient --class L0.mlp wrote
    the whole G where one route class was asked for."""
    argv, said = STRAY[case]
    line = one_error_line(*run_cli(capsys, "export", "--run", run, *argv, "--out", tmp_path / "x.csv")[::2])
    assert said in line and not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize("what", WHATS)
def test_every_export_refuses_a_step_that_was_not_saved(what, run, tmp_path, capsys):
    out = tmp_path / ("x.npy" if what not in ("loss", "heads", "interaction-map") else "x.csv")
    line = one_error_line(*run_cli(capsys, "export", "--run", run, "--what", what, "--step", 3, *options(what),
                                   "--out", out)[::2])
    assert "has no weights saved at step 3 (it has 0, 2, 4)" in line and not out.exists()


@pytest.mark.parametrize("argv", [["heads", "--step", 3], ["sample", "--step", 3, "--tokens", 2]])
def test_heads_and_sample_refuse_it_too(argv, run, capsys):
    line = one_error_line(*run_cli(capsys, argv[0], "--run", run, *argv[1:])[::2])
    assert "has no weights saved at step 3" in line


def test_routes_at_a_saved_step_split_the_intervals_up_to_it(run, tmp_path, capsys):
    import csv

    for step, out in ((2, tmp_path / "upto2.csv"), (None, tmp_path / "all.csv")):
        rc, _, err = run_cli(capsys, "export", "--run", run, "--what", "routes", "--weight", "blocks.0.W_Q",
                             *(["--step", step] if step else []), "--out", out)
        assert rc == 0, err
    def ends(path):
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        key = next(k for k in rows[0] if k in ("step", "to", "end", "step_to"))
        return {int(r[key]) for r in rows}
    assert ends(tmp_path / "upto2.csv") == {2} and ends(tmp_path / "all.csv") == {2, 4}
    line = one_error_line(*run_cli(capsys, "export", "--run", run, "--what", "routes", "--weight", "blocks.0.W_Q",
                                   "--step", 0, "--out", tmp_path / "x.csv")[::2])
    assert "fewer than two saved steps up to 0" in line


@pytest.fixture
def damaged_snapshot(run, tmp_path):
    """The run with its step-4 snapshot garbled: the checkpoint of step 4 holds the same weights."""
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    snap = copy / "snapshots" / "step-000004.safetensors"
    data = bytearray(snap.read_bytes())
    data[-100:] = b"\x00" * 100
    snap.unlink()  # a hard link of the checkpoint's file: garble a copy of its own
    snap.write_bytes(bytes(data))
    return copy


@pytest.mark.parametrize("argv", [["heads", "--format", "csv"], ["export", "--what", "interaction-map", "--out", "m.npy"],
                                  ["export", "--what", "attention", "--out", "a.npy"]])
def test_a_snapshot_replaced_by_its_step_s_checkpoint_is_named(argv, damaged_snapshot, tmp_path, capsys):
    argv = [a if a not in ("m.npy", "a.npy") else tmp_path / a for a in argv]
    rc, _, err = run_cli(capsys, argv[0], "--run", damaged_snapshot, *argv[1:])
    assert rc == 0, err
    assert "snapshot step-000004.safetensors" in err and "using the checkpoint at step 4" in err, err


@pytest.mark.parametrize("missing", ["model.safetensors", "state.pt"])
def test_a_checkpoint_folder_missing_a_file_is_named_by_every_command(missing, run, tmp_path, capsys):
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    (copy / "checkpoints" / "step-000004" / missing).unlink()
    said = f"checkpoints/step-000004 has no {missing}; it was skipped"
    assert said in Run(copy).warnings
    rc, _, err = run_cli(capsys, "sample", "--run", copy, "--tokens", 2, "--step", 2)
    assert rc == 0 and said in err, err
    rc, _, err = run_cli(capsys, "export", "--run", copy, "--what", "loss", "--out", tmp_path / "loss.csv")
    assert rc == 0 and said in err, err
    corpus = tmp_path / "plays.txt"
    corpus.write_text(shakespeare_text()[:20_000], encoding="utf-8")
    rc, out, err = run_cli(capsys, "train", "--run", copy, "--steps", 6, "--corpus", corpus)  # from step 2
    assert rc == 0 and "resuming at step 2" in out and said in err, err
    copy = tmp_path / "again"
    shutil.copytree(run, copy)
    (copy / "checkpoints" / "step-000004" / missing).unlink()
    shutil.rmtree(copy / "checkpoints" / "step-000002")
    line = one_error_line(*run_cli(capsys, "train", "--run", copy, "--steps", 6, "--corpus", corpus)[::2])
    assert "has no intact checkpoint to resume from" in line and said in line  # never started afresh over it
    assert (copy / "config.toml").exists() and (copy / "snapshots" / "step-000004.safetensors").exists()
