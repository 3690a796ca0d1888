"""`gpt-explorer train`: a run from the command line, resume, and one clear line for every bad input."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import torch

from engine.cli import main
from engine.text.corpus import shakespeare_text
from engine.rundir.runs import Run
from engine.training.trainer import Trainer
from tests import fresh_imports
from tests.engine.training.test_trainer import small_config

SMALL = """name = "small"
[model]
n_layer = {n_layer}
n_head = {n_head}
d_model = 32
d_ff = 64
n_ctx = 16
[train]
steps = 12
batch_size = 8
eval_every = 6
eval_batches = 2
snapshot_every = 6
checkpoint_every = 6
sample_tokens = 10
torch_threads = 1
"""


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    """A small config and corpus, and broken ones for the refusals."""
    f = {name: tmp_path / name for name in ("small.toml", "heads.toml", "layers.toml", "corpus.txt",
                                             "empty.txt", "binary.txt", "latin1.txt", "short.txt")}
    f["small.toml"].write_text(SMALL.format(n_layer=1, n_head=2))
    f["heads.toml"].write_text(SMALL.format(n_layer=1, n_head=3))
    f["layers.toml"].write_text(SMALL.format(n_layer=0, n_head=2))
    f["corpus.txt"].write_text(shakespeare_text()[:20_000], encoding="utf-8")
    f["empty.txt"].write_text("")
    f["binary.txt"].write_bytes(bytes(range(256)) * 10)
    f["latin1.txt"].write_bytes("Ô Roméo, où es-tu ? ".encode("latin-1") * 50)
    f["short.txt"].write_text("To be, or not to be.")
    return f


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_train_writes_a_run_that_resumes_and_samples(files, tmp_path, capsys):
    run_dir = tmp_path / "run"
    rc, out, err = run_cli(capsys, "train", "--config", files["small.toml"], "--corpus", files["corpus.txt"],
                           "--run", run_dir, "--seed", 7)
    assert rc == 0, err
    assert "step 12/12" in out and "val " in out and "tok/s" in out and "left" in out and "done" in out
    run = Run(run_dir)
    assert run.config.train.seed == 7 and run.config.data.corpus == str(files["corpus.txt"].resolve())
    assert run.checkpoint_steps()[-1] == 12
    rc, out, err = run_cli(capsys, "train", "--run", run_dir, "--steps", 15)
    assert rc == 0 and "resuming at step 12" in out and "step 15/15" in out
    assert "val —" not in out  # the last validation loss is shown from the start
    rc, out, _ = run_cli(capsys, "train", "--run", run_dir)
    assert rc == 0 and "already finished at step 15" in out
    rc, out, err = run_cli(capsys, "sample", "--run", run_dir, "--prompt", "ROMEO:", "--tokens", 30, "--seed", 1)
    assert rc == 0 and out.startswith("ROMEO:") and len(out) > len("ROMEO:") + 5, err


def test_train_progress_is_plain_lines_when_not_a_terminal(files, tmp_path, capsys):
    rc, out, _ = run_cli(capsys, "train", "--config", files["small.toml"], "--corpus", files["corpus.txt"],
                         "--run", tmp_path / "run")
    assert rc == 0 and "\r" not in out
    assert out.count("step 6/12") == 1  # an evaluation step: printed once with its val loss


def test_an_edit_of_a_run_s_training_continues_it_and_a_new_shape_is_refused(files, tmp_path, capsys):
    """The command line's side of "fine-tuning keeps its word" (engine/training/continuation.py)."""
    run_dir = tmp_path / "run"
    assert run_cli(capsys, "train", "--config", files["small.toml"], "--corpus", files["corpus.txt"],
                   "--run", run_dir)[0] == 0
    rc, _, err = run_cli(capsys, "train", "--preset", "tiny", "--run", run_dir)
    line = one_error_line(rc, err)
    assert "cannot continue with this edit: the edit changes the shapes of the weights" in line
    assert "the weights trained for 12 steps" in line and "pass another --run DIR" in line
    rc, out, err = run_cli(capsys, "train", "--run", run_dir, "--set", "train.lr=1e-4", "--set", "train.min_lr=1e-5",
                           "--steps", 14)
    assert rc == 0 and "resuming at step 12" in out and "step 14/14" in out, err
    run = Run(run_dir)
    assert run.config.train.lr == 1e-4 and run.changes()[-1]["step"] == 12
    assert run.changes()[-1]["changed"]["train.lr"][1] == 1e-4
    rc, _, err = run_cli(capsys, "train", "--run", run_dir, "--fork-step", 0, "--steps", 15)  # ignored, it was
    assert "--fork-step applies with --fork PARENT only" in one_error_line(rc, err)
    other = tmp_path / "other.txt"  # other text in the run's characters: --corpus trains any run on from here
    other.write_text("\n".join(reversed(files["corpus.txt"].read_text(encoding="utf-8").splitlines())), encoding="utf-8")
    rc, out, err = run_cli(capsys, "train", "--run", run_dir, "--corpus", other, "--steps", 15)
    assert rc == 0 and "resuming at step 14" in out and "step 15/15" in out, err
    last = Run(run_dir).changes()[-1]
    assert last["step"] == 14 and last["changed"]["data.corpus"] == [str(files["corpus.txt"].resolve()),
                                                                     str(other.resolve())]


def test_a_diverging_run_stops_with_one_line_and_exit_1(files, tmp_path, capsys, monkeypatch):
    from engine.model.gpt import GPT

    real, calls = GPT.loss, []

    def diverging(self, logits, targets):  # finite for a few steps, then the loss breaks
        calls.append(1)
        return real(self, logits, targets) * (float("nan") if len(calls) > 6 else 1.0)
    monkeypatch.setattr(GPT, "loss", diverging)
    config = files["small.toml"]
    rc, _, err = run_cli(capsys, "train", "--config", config, "--corpus", files["corpus.txt"], "--run", tmp_path / "run")
    assert rc == 1 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "not finite (the largest weight is" in err and "training stopped before the weights changed" in err
    rows = Run(tmp_path / "run").metrics()
    assert rows and rows[-1]["step"] < 12 and all(r["train_loss"] is not None for r in rows)


def broken_run(root: Path, damage: str) -> Path:
    """A finished run whose every checkpoint is damaged (truncated or replaced by garbage)."""
    run_dir = root / f"run-{damage}"
    list(Trainer(small_config(steps=10, checkpoint_every=5), run_dir, text=shakespeare_text()[:20_000]).steps())
    for step in ("step-000005", "step-000010"):
        model = run_dir / "checkpoints" / step / "model.safetensors"
        model.write_bytes(model.read_bytes()[:100] if damage == "truncated" else b"garbage" * 100)
    return run_dir


BAD_INPUTS = {
    "heads do not divide": (["--config", "heads.toml"], "3 heads do not divide d_model = 32"),
    "zero layers": (["--config", "layers.toml"], "n_layer: must be in [1, "),
    "missing corpus": (["--config", "small.toml", "--corpus", "nowhere.txt"], "corpus file not found"),
    "empty corpus": (["--config", "small.toml", "--corpus", "empty.txt"], "corpus is empty"),
    "binary corpus": (["--config", "small.toml", "--corpus", "binary.txt"], "looks binary"),
    "non-UTF-8 corpus": (["--config", "small.toml", "--corpus", "latin1.txt"], "not UTF-8"),
    "corpus shorter than context": (["--config", "small.toml", "--corpus", "short.txt"], "too short"),
    "missing config file": (["--config", "nowhere.toml"], "config file not found"),
    "unknown preset": (["--preset", "huge"], "unknown preset 'huge'"),
    "unknown device": (["--config", "small.toml", "--corpus", "corpus.txt", "--device", "tpu"], "'tpu' is not one of"),
    "zero steps": (["--config", "small.toml", "--corpus", "corpus.txt", "--steps", "0"], "train.steps"),
}


def one_error_line(rc: int, err: str) -> str:
    lines = err.strip().splitlines()
    assert rc != 0 and len(lines) == 1 and lines[0].startswith("gpt-explorer: error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("case", BAD_INPUTS, ids=list(BAD_INPUTS))
def test_every_bad_input_is_one_line_on_stderr(case, files, tmp_path, capsys):
    argv, expected = BAD_INPUTS[case]
    argv = [str(files[a]) if a in files else str(tmp_path / a) if a.endswith((".txt", ".toml")) else a
            for a in argv]
    rc, _, err = run_cli(capsys, "train", *argv, "--run", tmp_path / "run")
    assert expected in one_error_line(rc, err)
    assert not (tmp_path / "run" / "config.toml").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_a_gpu_is_one_line(files, tmp_path, capsys):
    rc, _, err = run_cli(capsys, "train", "--config", files["small.toml"], "--corpus", files["corpus.txt"],
                         "--device", "cuda", "--run", tmp_path / "run")
    assert "no CUDA GPU" in one_error_line(rc, err)


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_resuming_from_a_damaged_checkpoint_is_one_line_and_keeps_it(damage, tmp_path, capsys):
    run_dir = broken_run(tmp_path, damage)
    before = sorted(p.name for p in (run_dir / "checkpoints").iterdir())
    rc, _, err = run_cli(capsys, "train", "--run", run_dir, "--steps", 20)
    line = one_error_line(rc, err)
    assert "no intact checkpoint" in line and "step-000010/model.safetensors is corrupt or truncated" in line
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == before


def test_a_directory_that_is_not_a_run_is_one_line(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    rc, _, err = run_cli(capsys, "train", "--preset", "tiny", "--run", tmp_path)
    assert "is not a run directory" in one_error_line(rc, err)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def cli_subprocess(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    """The real entry point (gui.cli:main) in a fresh interpreter; reports whether Qt was loaded."""
    code = ("import sys; sys.argv = ['gpt-explorer', *sys.argv[1:]]\n"
            "from gui.cli import main\n"
            "rc = main()\n"
            "qt = sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6', 'pyqtgraph'))\n"
            "print('qt modules:', qt)\n"
            "sys.exit(rc)\n")
    return fresh_imports.run(code, *argv, cwd=cwd)


def test_train_in_a_real_process_never_loads_qt(files, tmp_path):
    done = cli_subprocess("train", "--config", str(files["small.toml"]), "--corpus", str(files["corpus.txt"]),
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "qt modules: []" in done.stdout
    assert len(list((tmp_path / "runs").glob("small-*/config.toml"))) == 1  # the default run directory
    bad = cli_subprocess("train", "--config", str(files["small.toml"]), "--corpus", "missing.txt", cwd=tmp_path)
    assert bad.returncode == 2 and "corpus file not found" in one_error_line(bad.returncode, bad.stderr)


def test_progress_on_a_terminal_is_one_line_rewritten_in_place():
    import io

    from engine.cli._train_loop import Progress
    from engine.training.trainer import StepReport

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream = Terminal()
    progress = Progress(stream)
    for step in range(1, 5):
        val = 2.5 if step == 4 else None
        progress.update(StepReport(step, 4, 3.0, val, 1e-3, 0.5, 1000.0, step * 0.1, (4 - step) * 0.1,
                                   None, False, False, "done" if step == 4 else None, None))
    progress.finish()
    text = stream.getvalue()
    assert text.startswith("\rstep 1/4") and "\rstep 4/4" in text and "val 2.5000" in text
    assert text.count("\n") == 1 and text.endswith("\n")


def test_training_that_takes_most_of_the_memory_warns_and_one_beyond_it_is_one_line(files, tmp_path, capsys,
                                                                                     monkeypatch):
    from engine.configs import limits
    from engine.configs.config import ExperimentConfig
    from engine.configs.sizes import memory_estimate_bytes

    cfg = ExperimentConfig.load(files["small.toml"])
    need = memory_estimate_bytes(cfg)
    monkeypatch.setattr(limits, "machine_memory", lambda: int(need * 1.6))
    rc, _, err = run_cli(capsys, "train", "--config", files["small.toml"], "--corpus", files["corpus.txt"],
                         "--run", tmp_path / "run", "--steps", 2)
    assert rc == 0 and "warning: training memory ≈" in err and "% of this machine's" in err
    monkeypatch.setattr(limits, "machine_memory", lambda: need - 1)
    rc, _, err = run_cli(capsys, "train", "--config", files["small.toml"], "--corpus", files["corpus.txt"],
                         "--run", tmp_path / "run2")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "more than this machine's" in err
