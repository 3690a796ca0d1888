"""Runs made from weights that came from elsewhere (issue 27, classes 2 and 3): a fork with --set and a
nanoGPT import validate everything — the config as --config is, the checkpoint's own fields, the
weights — before a file is written, and build the run beside its target before renaming it in; a fork
copies only its parent's regular files, within the size caps of reading."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
import torch

from engine.cli import main
from engine.text.tokenizer import CharTokenizer
from engine.rundir.create import create_run
from engine.rundir.runs import SNAPSHOTS, Run, RunError
from tests.engine.rundir.test_hostile_runs import corpus, finished, one_line  # noqa: F401 (a fixture)
from tests.engine.importers.test_nanogpt import ARGS, CHARS, write_out_dir


@pytest.fixture(scope="module")
def parent(tmp_path_factory, corpus) -> Path:  # noqa: F811
    return finished(tmp_path_factory.mktemp("parent"), corpus)


def nothing_beside(target: Path) -> None:
    """Neither the run nor a temporary folder for it is left behind."""
    assert not target.exists()
    assert not [p for p in target.parent.iterdir() if p.name.startswith(f".tmp-{target.name}")]


# ---- 2: a fork validates every setting, and the step, before writing ----------------------------

BAD_SETTINGS = ["train.lr=nan", "train.lr=inf", "train.lr=-1", "train.lr=1e6", "train.beta2=1.5",
                "train.beta1=nan", "model.dropout=2.0", "model.dropout=nan", "model.n_head=0",
                "model.n_head=3", "model.d_model=0", "model.n_layer=1000000", "train.batch_size=10000000",
                "train.steps=-3", "train.grad_clip=-inf", "train.optimizer=lion", "train.torch_threads=100000"]


@pytest.mark.parametrize("setting", BAD_SETTINGS)
def test_a_fork_with_a_bad_setting_is_refused_before_anything_is_written(setting, parent, tmp_path, capsys):
    child = tmp_path / "child"
    assert main(["train", "--fork", str(parent), "--set", setting, "--run", str(child)]) == 2
    assert setting.split("=")[0].split(".")[1] in one_line(capsys) or "shape" in capsys.readouterr().err
    nothing_beside(child)


@pytest.mark.parametrize("step", ["7", "-5", "10000", "3"])
def test_a_fork_step_without_a_checkpoint_leaves_nothing_so_the_corrected_command_works(
        step, parent, tmp_path, capsys):
    child = tmp_path / "child"
    argv = ["train", "--fork", str(parent), "--set", "train.lr=1e-3", "--run", str(child)]
    assert main(argv + ["--fork-step", step]) == 2
    line = one_line(capsys)
    assert "no checkpoint at step" in line or "before its fork step" in line
    nothing_beside(child)
    assert main(argv + ["--fork-step", "5"]) == 0
    assert Run(child).metrics()[-1]["step"] == 10


def test_a_fork_into_a_folder_that_is_not_empty_or_is_a_file_is_refused_untouched(parent, tmp_path, capsys):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine.txt").write_text("keep", encoding="utf-8")
    (tmp_path / "file").write_text("keep", encoding="utf-8")
    for target in ("full", "file"):
        assert main(["train", "--fork", str(parent), "--set", "train.lr=1e-3", "--run",
                     str(tmp_path / target)]) == 2
        one_line(capsys)
    assert (tmp_path / "full" / "mine.txt").read_text(encoding="utf-8") == "keep"
    assert (tmp_path / "file").read_text(encoding="utf-8") == "keep"


# ---- 2: an import validates the checkpoint's fields and weights before writing -------------------

def deep_list(depth: int = 3000) -> list:
    """A list nested more deeply than Python's recursion limit (repr and json.dumps of it fail)."""
    top = here = []
    for _ in range(depth):
        here.append([])
        here = here[0]
    return top


def bad_checkpoint(folder: Path, case: str) -> None:
    import sys

    write_out_dir(folder)
    ckpt = torch.load(folder / "ckpt.pt", weights_only=True)
    where, key, value = BAD_CHECKPOINTS[case]
    value = deep_list() if value is deep_list else value
    if where == "model":
        ckpt["model"]["transformer.h.0.mlp.c_fc.weight"][0, 0] = value
    else:
        (ckpt if where == "top" else ckpt[where])[key] = value
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000)  # pickling the deep list recurses; reading it back does not
    try:
        torch.save(ckpt, folder / "ckpt.pt")
    finally:
        sys.setrecursionlimit(limit)


BAD_CHECKPOINTS = {
    "iter_num string": ("top", "iter_num", "250"), "iter_num nan": ("top", "iter_num", math.nan),
    "iter_num negative": ("top", "iter_num", -1), "iter_num bool": ("top", "iter_num", True),
    "iter_num huge": ("top", "iter_num", 10 ** 12),
    "best_val_loss vector": ("top", "best_val_loss", torch.tensor([1.0, 2.0])),
    "best_val_loss inf": ("top", "best_val_loss", torch.tensor(math.inf)),
    "best_val_loss nan": ("top", "best_val_loss", math.nan), "best_val_loss string": ("top", "best_val_loss", "x"),
    "dropout string": ("model_args", "dropout", "0.1"), "dropout nan": ("model_args", "dropout", math.nan),
    "dropout one": ("model_args", "dropout", 1.0), "dropout negative": ("model_args", "dropout", -0.1),
    "n_layer huge": ("model_args", "n_layer", 1_000_000), "n_head zero": ("model_args", "n_head", 0),
    "n_head not dividing": ("model_args", "n_head", 3), "n_embd zero": ("model_args", "n_embd", 0),
    "n_embd float": ("model_args", "n_embd", 16.5), "block_size string": ("model_args", "block_size", "12"),
    "lr inf": ("config", "learning_rate", math.inf), "lr nan": ("config", "learning_rate", math.nan),
    "lr negative": ("config", "learning_rate", -1e-3), "beta2 above one": ("config", "beta2", 1.5),
    "batch_size inf": ("config", "batch_size", math.inf), "batch_size fraction": ("config", "batch_size", 8.5),
    "batch_size huge": ("config", "batch_size", 10 ** 9), "seed string": ("config", "seed", "1337"),
    "weight nan": ("model", None, math.nan), "weight inf": ("model", None, -math.inf),
    "iter_num deep": ("top", "iter_num", deep_list), "best_val_loss deep": ("top", "best_val_loss", deep_list),
    "lr deep": ("config", "learning_rate", deep_list), "n_layer deep": ("model_args", "n_layer", deep_list),
}


@pytest.mark.parametrize("case", BAD_CHECKPOINTS)
def test_a_checkpoint_with_a_bad_field_or_weight_is_refused_before_anything_is_written(case, tmp_path, capsys):
    bad_checkpoint(tmp_path / "out", case)
    target = tmp_path / "run"
    assert main(["import", "nanogpt", str(tmp_path / "out"), "--run", str(target)]) == 2
    one_line(capsys)
    nothing_beside(target)


def test_a_checkpoint_with_good_fields_imports_with_them(tmp_path):
    write_out_dir(tmp_path / "out", args=dict(ARGS, dropout=0.2), iter_num=0)
    assert main(["import", "nanogpt", str(tmp_path / "out"), "--run", str(tmp_path / "run")]) == 0
    run = Run(tmp_path / "run")
    assert run.config.model.dropout == 0.2 and run.checkpoint_steps() == [0]
    assert run.config.train.lr == 1e-3 and run.config.train.batch_size == 8


# ---- 2: create_run itself, as every importer calls it ---------------------------------------------

def test_create_run_refuses_before_writing_and_writes_in_one_piece(parent, tmp_path):
    run = Run(parent)
    weights, probe = run.load_weights(10), run.probe()
    target = tmp_path / "made"
    cases = {"step": dict(step=-1), "step type": dict(step=5.0), "best": dict(best_val=math.inf),
             "weights": dict(weights={**weights, "W_E": weights["W_E"] * math.nan}),
             "shapes": dict(weights={k: v for k, v in weights.items() if k != "b_U"})}
    for case, kw in cases.items():
        with pytest.raises(RunError):
            create_run(target, run.config, run.tokenizer, probe, kw.pop("weights", weights), **kw)
        nothing_beside(target)
    with pytest.raises(RunError, match="vocabulary"):
        create_run(target, run.config, CharTokenizer(CHARS), probe, weights)
    create_run(target, run.config, run.tokenizer, probe, weights, step=10, best_val=torch.tensor(1.5))
    made = Run(target)
    assert made.checkpoint_steps() == [10] and made.snapshot_steps() == [10] and made.best_step() == 10
    assert all(torch.equal(made.load_weights(10)[k], weights[k]) for k in weights)
    nothing_beside(tmp_path / "not-made")


# ---- 3: a fork copies only its parent's regular files ---------------------------------------------

def hostile(kind: str, path: Path, elsewhere: Path) -> None:
    path.unlink()
    if kind == "link to a file elsewhere":
        elsewhere.write_bytes(b"\0" * 64)
        path.symlink_to(elsewhere)
    elif kind == "link to an endless device":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "link to a folder":
        path.symlink_to(elsewhere.parent)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX files")
@pytest.mark.parametrize("kind", ["link to a file elsewhere", "link to an endless device", "fifo", "folder",
                                  "link to a folder"])
def test_a_fork_does_not_follow_its_parents_links_or_read_its_special_files(kind, parent, tmp_path, capsys):
    source = tmp_path / "parent"
    assert main(["train", "--fork", str(parent), "--set", "train.lr=2e-3", "--run", str(source),
                 "--fork-step", "5"]) == 0  # a copy of the parent to spoil
    capsys.readouterr()
    hostile(kind, source / SNAPSHOTS / "step-000000.safetensors", tmp_path / "secret.bin")
    child = tmp_path / "child"
    assert main(["train", "--fork", str(source), "--set", "train.lr=1e-3", "--run", str(child),
                 "--fork-step", "5"]) == 0
    assert "step-000000.safetensors was not copied" in capsys.readouterr().err
    copied = child / SNAPSHOTS / "step-000000.safetensors"
    assert not copied.exists() and not copied.is_symlink()
    assert Run(child).metrics()[-1]["step"] == 10


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX files")
def test_a_fork_does_not_copy_logs_its_parent_links_to(parent, tmp_path, capsys):
    source = tmp_path / "parent"
    assert main(["train", "--fork", str(parent), "--set", "train.lr=2e-3", "--run", str(source),
                 "--fork-step", "5"]) == 0
    capsys.readouterr()
    other = tmp_path / "other.jsonl"
    other.write_text('{"step": 1, "train_loss": 99.0}\n', encoding="utf-8")
    (source / "metrics.jsonl").unlink()
    (source / "metrics.jsonl").symlink_to(other)
    child = tmp_path / "child"
    assert main(["train", "--fork", str(source), "--set", "train.lr=1e-3", "--run", str(child),
                 "--fork-step", "5"]) == 0
    assert "metrics.jsonl was not copied" in capsys.readouterr().err
    assert all(r["train_loss"] != 99.0 for r in Run(child).metrics())


def test_what_a_killed_creation_left_beside_its_target_is_removed_by_the_next(parent, tmp_path):
    run = Run(parent)
    dead = tmp_path / ".tmp-made-999999999"  # no such process
    (dead / "snapshots").mkdir(parents=True)
    mine = tmp_path / f".tmp-made-{os.getpid()}"
    mine.mkdir()
    live = tmp_path / f".tmp-made-{os.getppid()}"  # a creation still under way in another process
    live.mkdir()
    create_run(tmp_path / "made", run.config, run.tokenizer, run.probe(), run.load_weights(10), step=10)
    assert not dead.exists() and not mine.exists() and live.is_dir()
    assert Run(tmp_path / "made").checkpoint_steps() == [10]
