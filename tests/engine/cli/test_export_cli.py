"""`gpt-explorer export`: every view of a run directory to a valid file holding the run's numbers, no Qt."""

from __future__ import annotations

import csv
import shutil
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from engine.model import probes
from engine.cli import main
from engine.configs.config import DataConfig, ExperimentConfig, ModelConfig, TrainConfig
from engine.text.corpus import shakespeare_text
from engine.rundir.runs import Run
from engine.training.trainer import Trainer
from tests import fresh_imports


# a config's TOML -> the run trained for it in this process, which `trained` copies (a temporary folder, removed
# when the process ends); made when first asked for
_TRAINED: dict[str, Path] = {}
_TEMPLATES: list[tempfile.TemporaryDirectory] = []


def trained(path, cfg: ExperimentConfig) -> Run:
    """The run of `cfg` trained on the plays' first 20,000 characters, in `path`.

    Trained once per config in a process and copied: some 40 tests and module fixtures ask for one of a few
    tiny runs (0.1-0.15 s of training each, quiet), and each caller gets a folder of its own, so what one test
    writes into its run no other test sees. Training is seeded: a copy is what training again would write."""
    key = cfg.to_toml()
    done = _TRAINED.get(key)
    if done is None:
        if not _TEMPLATES:
            _TEMPLATES.append(tempfile.TemporaryDirectory(prefix="tiny-runs-"))
        done = Path(tempfile.mkdtemp(dir=_TEMPLATES[0].name)) / "run"
        list(Trainer(cfg, done, text=shakespeare_text()[:20_000]).steps())
        _TRAINED[key] = done
    # copy, not copy2: the files are new where they land, as training there would have made them
    shutil.copytree(done, path, copy_function=shutil.copy, dirs_exist_ok=True)
    return Run(path)


def tiny_run(path, **model):
    """A real run: 4 steps of a 2-layer, 2-head model, snapshots at 0, 2, 4 and a checkpoint at 4 (`trained`)."""
    m = dict(n_layer=2, n_head=2, d_model=16, d_ff=32, n_ctx=16, pos_encoding="sinusoidal")
    m.update(model)
    return trained(path, ExperimentConfig(
        name="tiny-test", model=ModelConfig(**m),
        train=TrainConfig(steps=4, batch_size=4, warmup_steps=1, eval_every=2, eval_batches=1,
                          checkpoint_every=4, snapshot_every=2, sample_tokens=8, torch_threads=1, device="cpu"),
        data=DataConfig(corpus="test text")))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return tiny_run(tmp_path_factory.mktemp("export") / "run")


def cli(capsys, *argv) -> tuple[int, str, str]:
    rc = main(["export", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_attention_for_one_head_and_every_head_holds_the_models_numbers(run, tmp_path, capsys):
    ids = probes.prompt_ids(run.tokenizer, "KING:\nWhat say", 16)
    want = probes.attention_maps(run.build_model(2), ids).weights
    rc, out, err = cli(capsys, "--run", run.path, "--what", "attention", "--step", 2, "--prompt", "KING:\nWhat say",
                       "--out", tmp_path / "all.npy")
    assert rc == 0, err
    assert out.strip() == f"wrote {tmp_path / 'all.npy'}"
    np.testing.assert_allclose(np.load(tmp_path / "all.npy"), want, rtol=1e-6)
    rc, _, err = cli(capsys, "--run", run.path, "--what", "attention", "--step", 2, "--layer", 1, "--head", 0,
                     "--prompt", "KING:\nWhat say", "--out", tmp_path / "one.csv")
    assert rc == 0, err
    rows = list(csv.reader(open(tmp_path / "one.csv", encoding="utf-8")))
    assert rows[0][1:] == list(probes.visible_tokens(run.tokenizer, ids))
    got = np.array([[float(v) for v in r[1:]] for r in rows[1:]])
    np.testing.assert_allclose(got, want[1, 0], rtol=1e-6)
    assert np.isnan(got[0, 1]) and not np.isinf(got).any()


@pytest.mark.parametrize("suffix", ["png", "svg", "pdf"])
def test_attention_figures_are_valid(run, tmp_path, capsys, suffix):
    out = tmp_path / f"attention.{suffix}"
    rc, _, err = cli(capsys, "--run", run.path, "--what", "attention", "--layer", 0, "--out", out)
    assert rc == 0, err
    data = out.read_bytes()
    if suffix == "svg":
        assert "layer 0 · head 1" in "".join(ET.fromstring(data).itertext())
    else:
        assert data.startswith(b"\x89PNG" if suffix == "png" else b"%PDF-")


def test_mask_posenc_and_loss(run, tmp_path, capsys):
    assert cli(capsys, "--run", run.path, "--what", "mask", "--prompt", "To be, or", "--out", tmp_path / "m.npy")[0] == 0
    np.testing.assert_array_equal(np.isfinite(np.load(tmp_path / "m.npy")), np.tril(np.ones((9, 9), bool)))
    assert cli(capsys, "--run", run.path, "--what", "posenc", "--out", tmp_path / "p.npy")[0] == 0
    np.testing.assert_allclose(np.load(tmp_path / "p.npy"), probes.positional_matrix(run.build_model()),
                               atol=0)
    assert cli(capsys, "--run", run.path, "--what", "loss", "--out", tmp_path / "loss.csv")[0] == 0
    rows = list(csv.DictReader(open(tmp_path / "loss.csv")))
    assert [float(r["train_loss"]) for r in rows] == [m["train_loss"] for m in run.metrics()]
    assert cli(capsys, "--run", run.path, "--what", "loss", "--out", tmp_path / "loss.pdf")[0] == 0


@pytest.mark.parametrize("argv, message", [
    (["--what", "attention", "--out", "x.jpg"], "choose a file ending in .png"),
    (["--what", "attention", "--layer", "2", "--out", "x.png"], "--layer must be between 0 and 1"),
    (["--what", "attention", "--head", "0", "--out", "x.png"], "--head needs --layer"),
    (["--what", "attention", "--step", "3", "--out", "x.npy"], "no weights saved at step 3"),
    (["--what", "coefficient", "--weight", "blocks.7.W_K", "--out", "x.png"], "no weight 'blocks.7.W_K'"),
    (["--what", "mask", "--prompt", "", "--out", "x.png"], "the prompt is empty"),
])
def test_mistakes_are_one_line_errors(run, tmp_path, capsys, argv, message):
    argv = [str(tmp_path / a) if a.startswith("x.") else a for a in argv]
    rc, _, err = cli(capsys, "--run", run.path, *argv)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and message in err and "Traceback" not in err
    assert not list(tmp_path.glob("x.*"))


def test_missing_run_and_folder(tmp_path, capsys):
    rc, _, err = cli(capsys, "--run", tmp_path / "nope", "--what", "loss", "--out", tmp_path / "l.csv")
    assert rc == 2 and "run directory not found" in err
    rc, _, err = cli(capsys, "--run", tmp_path, "--what", "loss", "--out", tmp_path / "no" / "l.csv")
    assert rc == 2 and "does not exist" in err


def test_export_never_loads_qt(run, tmp_path):
    code = ("import sys\nfrom engine.cli import main\n"
            f"rc = main(['export', '--run', {str(run.path)!r}, '--what', 'attention', '--out', "
            f"{str(tmp_path / 'a.png')!r}])\n"
            "bad = sorted(n for n in sys.modules if n.split('.')[0] in ('PySide6', 'shiboken6', 'pyqtgraph', 'gui'))\n"
            "print(rc, ','.join(bad))\n")
    out = fresh_imports.run(code)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[-2] == "0 " and (tmp_path / "a.png").stat().st_size > 1000


def test_an_export_that_fails_midway_leaves_the_old_file_and_nothing_beside_it(run, tmp_path, capsys, monkeypatch):
    from engine.cli import export as cli_export
    from engine.errors import UserError

    def half_then_fail(a, args):
        with open(args.out, "w", encoding="utf-8") as f:
            f.write("step,half")
        raise UserError("the disk is full (as a test says)")

    out = tmp_path / "loss.csv"
    out.write_text("the user's earlier file\n", encoding="utf-8")
    monkeypatch.setitem(cli_export.HANDLERS, "loss", half_then_fail)
    rc, _, err = cli(capsys, "--run", run.path, "--what", "loss", "--out", out)
    assert rc != 0 and "as a test says" in err and "Traceback" not in err
    assert out.read_text(encoding="utf-8") == "the user's earlier file\n"
    assert [p.name for p in tmp_path.iterdir()] == ["loss.csv"]  # no hidden partial folder is left
    monkeypatch.undo()
    rc, stdout, err = cli(capsys, "--run", run.path, "--what", "loss", "--out", out)
    assert rc == 0, err
    assert stdout.strip() == f"wrote {out}" and out.read_text(encoding="utf-8").startswith("step")
    assert [p.name for p in tmp_path.iterdir()] == ["loss.csv"]
