"""Hostile files and places (issue 18, classes 1, 7, 9, 11): every file is read with a regular-file check
and a size cap and named when wrong; run files that parse but are wrong are refused like user input;
exports go only to writable regular paths, and nothing is written through a symlink inside a run."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest

from engine.cli import main
from engine.configs.config import ConfigError, ExperimentConfig
from engine.text.corpus import CorpusError, read_text_file
from engine.rundir.runs import Run, RunError, RunWriter
from engine.safe_io import UnsafeFileError, check_inside, read_bytes
from engine.training.trainer import Trainer
from tests.engine.training.test_trainer import small_config

posix_only = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and /dev files are POSIX")


@pytest.fixture(scope="module")
def text() -> str:
    from engine.text.corpus import shakespeare_text

    return shakespeare_text()[:20_000]


@pytest.fixture(scope="module")
def finished(text, tmp_path_factory) -> Path:
    """A finished 10-step run (checkpoints at 5 and 10), copied by `run_copy` before being damaged."""
    path = tmp_path_factory.mktemp("finished") / "run"
    list(Trainer(small_config(steps=10, checkpoint_every=5, eval_every=5, snapshot_every=5), path,
                 text=text).steps())
    return path


@pytest.fixture
def run_copy(finished, tmp_path) -> Path:
    dest = tmp_path / "run"
    shutil.copytree(finished, dest)
    return dest


def hostile(tmp_path: Path, kind: str) -> Path:
    return hostile_at(tmp_path / f"hostile-{kind}", kind)


def hostile_at(path: Path, kind: str) -> Path:
    """`path` made a FIFO, a symlink to a device, a directory, or a file over any cap."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind in ("zero", "urandom"):
        path.symlink_to(f"/dev/{kind}")
    elif kind == "directory":
        path.mkdir()
    elif kind == "huge":
        with open(path, "wb") as f:  # sparse: no disk is used
            f.truncate(3 << 30)
    return path


HOSTILE = ["fifo", "zero", "urandom", "directory", "huge"]


@posix_only
@pytest.mark.parametrize("kind", HOSTILE)
def test_a_hostile_config_file_is_refused_by_name(kind, tmp_path):
    path = hostile(tmp_path, kind)
    with pytest.raises(ConfigError, match=f"{path.name}"):
        ExperimentConfig.load(path)
    with pytest.raises(UnsafeFileError, match=f"{path.name} is"):
        read_bytes(path, 1 << 20, "file")


@posix_only
@pytest.mark.parametrize("kind", HOSTILE)
def test_hostile_run_files_are_one_line_never_a_hang(kind, run_copy, tmp_path, capsys):
    for name in ("config.toml", "tokenizer.json"):
        saved = (run_copy / name).read_bytes()
        hostile_at(run_copy / name, kind)
        with pytest.raises(RunError, match=name):
            Run(run_copy)
        assert main(["sample", "--run", str(run_copy), "--tokens", "5"]) == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1
        hostile_at(run_copy / name, "none")
        (run_copy / name).write_bytes(saved)
    for name in ("metrics.jsonl", "probe.json", "snapshots/index.json", "checkpoints/best.json"):
        hostile_at(run_copy / name, kind)
        run = Run(run_copy)  # non-essential files: named in the warnings, the rest still loads
        assert run.load_weights() and run.thinned_steps() == []
    assert run.best_step() is None
    assert any("metrics.jsonl" in w for w in run.warnings) and any("probe.json" in w for w in run.warnings)


@posix_only
@pytest.mark.parametrize("kind", HOSTILE)
def test_a_hostile_corpus_is_refused_by_name(kind, tmp_path):
    path = hostile(tmp_path, kind)
    with pytest.raises(CorpusError, match=path.name):
        read_text_file(path)


@posix_only
@pytest.mark.parametrize("kind", ["zero", "fifo"])
def test_hostile_weight_files_fall_back_or_are_named(kind, run_copy, tmp_path):
    model = run_copy / "checkpoints" / "step-000010" / "model.safetensors"
    model.unlink()
    model.symlink_to("/dev/zero") if kind == "zero" else os.mkfifo(model)
    run = Run(run_copy)
    run.load_weights()
    assert any("step-000010" in w and "using step 5" in w for w in run.warnings)
    snap = run_copy / "snapshots" / "step-000005.safetensors"
    snap.unlink()
    snap.symlink_to("/dev/zero") if kind == "zero" else os.mkfifo(snap)
    assert Run(run_copy).load_weights(5)  # the checkpoint at the same step stands in
    (run_copy / "checkpoints" / "step-000005" / "model.safetensors").unlink()
    with pytest.raises(RunError, match="step-000005.safetensors"):
        Run(run_copy).load_weights(5)


WRONG_RUN_FILES = {
    "config the builder refuses": ("config.toml", lambda t: t.replace("n_head = 2", "n_head = 3"), "n_head"),
    "config of absurd size": ("config.toml", lambda t: t.replace("n_layer = 1", "n_layer = 100000"), "n_layer"),
    "config with lr inf": ("config.toml", lambda t: t.replace("lr = 0.003", "lr = inf"), "train.lr"),
    "tokenizer entry not a string": ("tokenizer.json", lambda t: t.replace('"vocab": ["', '"vocab": [7, "'),
                                     "tokenizer.json"),
    "char tokenizer entry of two characters": ("tokenizer.json", lambda t: t.replace('"vocab": ["', '"vocab": ["ab'),
                                               "tokenizer.json"),
    "tokenizer not a table": ("tokenizer.json", lambda t: "[1, 2]", "tokenizer.json"),
}


@pytest.mark.parametrize("case", WRONG_RUN_FILES, ids=list(WRONG_RUN_FILES))
def test_run_files_that_parse_but_are_wrong_are_refused_by_name(case, run_copy, capsys):
    name, damage, expected = WRONG_RUN_FILES[case]
    path = run_copy / name
    path.write_text(damage(path.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(RunError, match=expected):
        Run(run_copy)
    for argv in (["sample", "--run", str(run_copy)], ["export", "--run", str(run_copy), "--what", "posenc",
                                                       "--out", str(run_copy.parent / "p.csv")]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and expected.split(".")[-1] in err[0]


IMPORT_RECORDS = {"a step before 0": {"source": "folder", "step": -5},
                  "a step after the newest checkpoint": {"source": "folder", "step": 10 ** 30},
                  "a step that is not a number": {"source": "folder", "step": "5"},
                  "a source that is not text": {"source": ["folder"], "step": 5}}


@pytest.mark.parametrize("case", IMPORT_RECORDS, ids=list(IMPORT_RECORDS))
def test_an_import_record_that_cannot_be_one_is_ignored_with_a_warning(case, run_copy):
    """import.json tells what a new run would not keep (engine/training/continuation.py): one that cannot be
    an import's record is named and read as none, so no edit is refused with nonsense (-5 → "15 steps of
    fine-tuning")."""
    from engine.training.continuation import plan_edit

    (run_copy / "import.json").write_text(json.dumps(IMPORT_RECORDS[case]), encoding="utf-8")
    run = Run(run_copy)
    assert run.import_record() is None and any("import.json" in w for w in run.warnings)
    wider = run.config.replace(model=dataclasses.replace(run.config.model, d_model=64))
    assert plan_edit(run, wider).lost == ("the weights trained for 10 steps",)


def test_an_import_s_long_source_is_named_by_its_end(run_copy):
    from engine.training.continuation import plan_edit

    source = "/" + "deep/" * 20_000 + "gpt2"
    (run_copy / "import.json").write_text(json.dumps({"source": source, "step": 5}), encoding="utf-8")
    run = Run(run_copy)
    wider = run.config.replace(model=dataclasses.replace(run.config.model, d_model=64))
    lost = plan_edit(run, wider).lost
    assert lost[0] == "the imported weights (from …" + source[-79:] + ")" and lost[1] == "their 5 steps of fine-tuning"


def test_wrongly_typed_index_best_and_metrics_are_ignored_with_a_warning(run_copy):
    (run_copy / "snapshots" / "index.json").write_text(json.dumps({"steps": "x", "thinned": 7}))
    (run_copy / "checkpoints" / "best.json").write_text(json.dumps({"step": "10", "val_loss": "low"}))
    with open(run_copy / "metrics.jsonl", "a") as f:
        f.write(json.dumps({"step": 11, "train_loss": "1.5"}) + "\n")
    run = Run(run_copy)
    assert run.thinned_steps() == [] and run.best_step() is None
    assert [r["step"] for r in run.metrics()][-1] == 10 and any("metrics.jsonl" in w for w in run.warnings)
    assert RunWriter(run_copy, run.config).best_step is None


@pytest.mark.parametrize("damage", ["missing tensor", "extra tensor", "wrong shape", "nan"])
def test_a_snapshot_that_does_not_fit_the_config_is_named(damage, run_copy):
    import torch
    from safetensors.torch import load_file, save_file

    path = run_copy / "snapshots" / "step-000005.safetensors"
    weights = load_file(str(path))
    if damage == "missing tensor":
        weights.pop("W_E")
    elif damage == "extra tensor":
        weights["W_X"] = torch.zeros(2)
    elif damage == "wrong shape":
        weights["W_E"] = weights["W_E"][:-1]
    else:
        weights["W_E"][0, 0] = float("nan")
    path.with_name(path.name + ".sha256").unlink()  # as written by an older version: no checksum
    save_file(weights, str(path))
    (run_copy / "checkpoints" / "step-000005" / "model.safetensors").unlink()
    with pytest.raises(RunError, match="step-000005.safetensors"):
        Run(run_copy).load_weights(5)


BAD_OUTS = {
    "a directory": lambda tmp: tmp,
    "a missing folder": lambda tmp: tmp / "nowhere" / "x.csv",
    "a folder that is a file": lambda tmp: tmp / "file.txt" / "x.csv",
    "an unwritable place": lambda tmp: Path("/proc/x.csv"),
}


@pytest.mark.parametrize("case", BAD_OUTS, ids=list(BAD_OUTS))
def test_export_to_a_bad_place_is_one_line_and_exit_2(case, run_copy, tmp_path, capsys):
    (tmp_path / "file.txt").write_text("mine")
    out = BAD_OUTS[case](tmp_path)
    if case == "a directory":
        out = tmp_path / "adir.csv"
        out.mkdir()
        out.with_suffix(".tex").mkdir()
    if case == "an unwritable place" and not Path("/proc").is_dir():
        pytest.skip("no /proc here")
    for argv in (["export", "--run", str(run_copy), "--what", "loss", "--out", str(out)],
                 ["forms", "--chain", "1", "--out", str(out.with_suffix(".tex"))]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "cannot write" in err[0] and "Traceback" not in err[0]
    assert (tmp_path / "file.txt").read_text() == "mine"


def test_symlinks_inside_a_run_are_never_written_through(run_copy, tmp_path, text):
    from engine.coefficients.cache import CoefficientStore

    outside = tmp_path / "outside"
    outside.mkdir()
    (run_copy / "cache").symlink_to(outside, target_is_directory=True)
    store = CoefficientStore(Run(run_copy))
    store.record(store.weight_names()[0], 5)  # computes, and does not cache through the link
    assert list(outside.rglob("*")) == []
    for name in ("metrics.jsonl", "checkpoints", "snapshots", ".lock"):
        target = run_copy / name
        moved = tmp_path / f"moved-{name}"
        os.replace(target, moved) if target.exists() else moved.touch()
        target.symlink_to(moved, target_is_directory=moved.is_dir())
        with pytest.raises(RunError, match="symbolic link"):
            Trainer.resume(run_copy, text=text)
        target.unlink()
        os.replace(moved, target)
    with pytest.raises(UnsafeFileError):
        check_inside(run_copy, run_copy / ".." / "elsewhere")
