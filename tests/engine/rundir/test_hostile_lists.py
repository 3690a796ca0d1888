"""The run list, deep files and the lock file (issue 27, classes 5, 6 and 7): a runs folder holding link
loops, special files and damaged runs lists every intact run and names each damaged one with its
reason; a JSON or TOML file nested 100,000 deep anywhere a run or a command reads one is one line, never
a RecursionError; a `.lock` that is not a lock file is refused in one line."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from engine.cli import main
from engine.configs.config import ConfigError, ExperimentConfig, parse_setting
from engine.rundir.fork import fork_record
from engine.rundir.listing import disk_size, list_folders
from engine.rundir.lock import RunLock
from engine.rundir.runs import Run, RunError
from engine.safe_io import MAX_DEPTH, parse_json, parse_toml
from tests.engine.rundir.test_hostile_files import finished, hostile_at, posix_only, run_copy, text  # noqa: F401

DEEP = 100_000
DEEP_JSON = "[" * DEEP + "]" * DEEP
DEEP_TOML = "x = " + "[" * DEEP + "]" * DEEP + "\n"
# a table header of dotted keys: tomllib nests them without recursing, in time that grows faster than their number
# (100 000 keys took 6 s); ten times Python's recursion limit still shows that the depth check does not recurse
DEEP_KEYS = 10 * sys.getrecursionlimit()


# ---- 5: the run list ---------------------------------------------------------------------------

DAMAGES = {  # file: what is put there; each makes a run that Run would refuse or cannot summarise
    "config.toml": ["fifo", "zero", "urandom", "directory", "huge", "garbage", "deep", "absurd"],
    "tokenizer.json": ["fifo", "zero", "directory", "huge"],
    "metrics.jsonl": ["fifo", "zero", "urandom", "directory", "huge"],
    "checkpoints/best.json": ["fifo", "zero", "urandom", "directory", "huge"],
}


def damage(path: Path, kind: str) -> None:
    if kind == "garbage":
        path.write_bytes(b"\xff\xfe[[ not toml")
    elif kind == "deep":
        path.write_text(DEEP_TOML, encoding="utf-8")
    elif kind == "absurd":
        path.write_text(path.read_text(encoding="utf-8").replace("n_layer = 1", "n_layer = 100000"),
                        encoding="utf-8")
    else:
        hostile_at(path, kind)


@posix_only
def test_a_hostile_runs_folder_lists_every_intact_run_and_names_each_damaged_one(finished, tmp_path):
    root = tmp_path / "runs"
    intact = {f"good-{i}" for i in range(3)}
    for name in intact:
        shutil.copytree(finished, root / name)
    damaged = {}
    for file, kinds in DAMAGES.items():
        for kind in kinds:
            name = f"bad-{file.replace('/', '-')}-{kind}"
            shutil.copytree(finished, root / name)
            damage(root / name / file, kind)
            damaged[name] = Path(file).name
    (root / "loop").symlink_to(root / "loop")  # a link to itself
    (root / "ping").symlink_to(root / "pong")
    (root / "pong").symlink_to(root / "ping")
    (root / "nowhere").symlink_to(root / "missing")
    (root / "pipe").mkdir() or os.mkfifo(root / "fifo")
    shutil.copytree(finished, root / "bad-no-tokenizer")
    (root / "bad-no-tokenizer" / "tokenizer.json").unlink()
    damaged["bad-no-tokenizer"] = "tokenizer.json"
    listing = list_folders([root])
    assert {s.name for s in listing.runs} == intact
    named = {p.name: why for p, why in listing.damaged}
    assert set(named) == set(damaged)
    for name, file in damaged.items():
        assert file in named[name], (name, named[name])
    assert root / "pipe" in listing.watch


def _tokenizer_edit(change):
    def edit(run: Path) -> None:
        path = run / "tokenizer.json"
        d = parse_json(path.read_text(encoding="utf-8"))
        path.write_text(__import__("json").dumps(change(d)), encoding="utf-8")
    return edit


def _swap(d: dict) -> dict:
    v = list(d["vocab"])
    v[3], v[4] = v[4], v[3]
    return {**d, "vocab": v}


def _config_edit(old: str, new: str):
    def edit(run: Path) -> None:
        path = run / "config.toml"
        path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    return edit


CONTENT = {  # what is in the file, not what the file is: each makes a run that Run refuses to open
    "a tokenizer that is not JSON": lambda run: (run / "tokenizer.json").write_bytes(b"\x00not json"),
    "an empty tokenizer": _tokenizer_edit(lambda d: {}),
    "a tokenizer of another kind": _tokenizer_edit(lambda d: {**d, "kind": "word", "vocab": ["<unk>", *d["vocab"][1:]]}),
    "a tokenizer a token short": _tokenizer_edit(lambda d: {**d, "vocab": d["vocab"][:-1]}),
    "a character listed twice": _tokenizer_edit(lambda d: {**d, "vocab": [d["vocab"][1], *d["vocab"][1:]]}),
    "a tokenizer with a setting": _tokenizer_edit(lambda d: {**d, "padding": {"length": 10 ** 9}}),
    "another run's tokenizer": _tokenizer_edit(_swap),
    "a BPE file in a character run": _tokenizer_edit(lambda d: {"model": {"type": "BPE", "vocab": {}, "merges": []}}),
    "a deep tokenizer": lambda run: (run / "tokenizer.json").write_text(DEEP_JSON, encoding="utf-8"),
    "a config with another vocabulary size": _config_edit("vocab_size = ", "vocab_size = 1"),
    "a config with another tokenizer": _config_edit('tokenizer = "char"', 'tokenizer = "word"'),
}


def test_the_run_list_names_every_run_that_would_not_open_and_lists_every_one_that_would(finished, tmp_path):
    """Issue 41: the list named a run whose tokenizer.json was a FIFO, but not one whose tokenizer Run refuses
    for what it says (6 of 20 damaged runs were listed as sound)."""
    root = tmp_path / "runs"
    for name, change in CONTENT.items():
        shutil.copytree(finished, root / name)
        change(root / name)
    shutil.copytree(finished, root / "sound")
    listing = list_folders([root])
    named = {p.name: why for p, why in listing.damaged}
    for path in sorted(root.iterdir()):
        try:
            Run(path)
        except RunError as refusal:
            assert path.name in named, f"{path.name} does not open ({refusal}) but is listed as sound"
            assert "tokenizer.json" in named[path.name] or "config.toml" in named[path.name], named[path.name]
        else:
            assert path.name not in named, f"{path.name} opens but is named as damaged: {named.get(path.name)}"
    assert {s.name for s in listing.runs} == {"sound"} and set(named) == set(CONTENT)


def test_a_run_nested_deeper_than_python_recurses_is_sized(finished, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    (run / "cache").mkdir()
    depth = 1200  # more levels than Python's recursion limit
    fd = os.open(run / "cache", os.O_RDONLY)
    for _ in range(depth):  # made level by level: pathlib's mkdir(parents=True) recurses itself
        os.mkdir("d", dir_fd=fd)
        fd, old = os.open("d", os.O_RDONLY, dir_fd=fd), fd
        os.close(old)
    f = os.open("f", os.O_WRONLY | os.O_CREAT, dir_fd=fd)
    os.write(f, b"x" * 1000)
    os.close(f)
    os.close(fd)
    assert disk_size(run) == disk_size(finished) + 1000
    assert [s.name for s in list_folders([tmp_path]).runs] == ["run"]
    deep = run / "cache" / "/".join(["d"] * depth)
    (deep / "f").unlink()
    for level in range(depth, 0, -1):  # and unmade so, for the same reason
        os.rmdir(run / "cache" / "/".join(["d"] * level))


# ---- 6: deep nesting -----------------------------------------------------------------------------

@pytest.mark.parametrize("parse, text_", [(parse_json, DEEP_JSON), (parse_toml, DEEP_TOML),
                                          (parse_json, '{"a":' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1)),
                                          (parse_toml, "[" + ".".join(["t"] * DEEP_KEYS) + "]\n")])
def test_the_parsers_bound_the_depth(parse, text_):
    with pytest.raises(ValueError, match="nested more than"):
        parse(text_)
    assert parse_json("[[1, 2], [3]]") == [[1, 2], [3]] and parse_toml("a.b = 1") == {"a": {"b": 1}}


@pytest.mark.parametrize("name", ["config.toml", "tokenizer.json"])
def test_a_deep_essential_run_file_is_one_line(name, run_copy, capsys):
    (run_copy / name).write_text(DEEP_TOML if name.endswith("toml") else DEEP_JSON, encoding="utf-8")
    with pytest.raises(RunError, match=name.split(".")[0]):
        Run(run_copy)
    assert main(["sample", "--run", str(run_copy), "--tokens", "5"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


@pytest.mark.parametrize("name", ["probe.json", "metrics.jsonl", "samples.jsonl", "checkpoints/best.json",
                                  "snapshots/index.json", "checkpoints/step-000010/checksums.json", "fork.json"])
def test_a_deep_run_file_is_ignored_or_named_never_a_recursion_error(name, run_copy):
    path = run_copy / name
    if name.endswith(".jsonl"):
        path.write_text(path.read_text(encoding="utf-8") + DEEP_JSON + "\n", encoding="utf-8")
    else:
        path.write_text(DEEP_JSON, encoding="utf-8")
    run = Run(run_copy)
    run.load_weights()  # a deep checksums.json: that checkpoint is skipped, named, for the one at step 5
    run.metrics(), run.samples(), run.best_step(), run.thinned_steps()
    assert fork_record(run_copy) is None
    assert list_folders([run_copy]).runs or list_folders([run_copy]).damaged


def test_a_deep_config_or_setting_on_the_command_line_is_one_line(tmp_path, capsys):
    cfg = tmp_path / "deep.toml"
    cfg.write_text(DEEP_TOML, encoding="utf-8")
    with pytest.raises(ConfigError, match="nested"):
        ExperimentConfig.load(cfg)
    assert main(["train", "--config", str(cfg), "--run", str(tmp_path / "run")]) == 2
    assert main(["train", "--set", "train.lr=" + "[" * DEEP + "]" * DEEP, "--run", str(tmp_path / "r2")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all("nested" in line for line in err)
    with pytest.raises(ConfigError):
        parse_setting("model.n_layer={" + "a = {" * DEEP + "}" * DEEP + "}", ExperimentConfig())


# ---- 7: the lock file -----------------------------------------------------------------------------

@posix_only
@pytest.mark.parametrize("kind", ["directory", "fifo", "zero", "link to a file elsewhere"])
def test_a_lock_that_is_not_a_lock_file_is_one_line(kind, run_copy, text, tmp_path):
    from engine.errors import UserError
    from engine.training.trainer import Trainer

    lock = run_copy / ".lock"
    if kind == "link to a file elsewhere":
        (tmp_path / "elsewhere").write_text("keep", encoding="utf-8")
        lock.unlink(missing_ok=True)
        lock.symlink_to(tmp_path / "elsewhere")
    else:
        hostile_at(lock, kind)
    with pytest.raises(UserError, match=r"\.lock") as refused:
        RunLock(run_copy).acquire()
    assert "\n" not in str(refused.value)
    with pytest.raises(UserError, match=r"\.lock"):  # as training a run takes its lock
        list(Trainer.resume(run_copy, text=text, steps=12).steps())
    if kind == "link to a file elsewhere":
        assert (tmp_path / "elsewhere").read_text(encoding="utf-8") == "keep"
