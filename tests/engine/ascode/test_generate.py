"""A coefficient as code (engine/ascode/generate.py, docs/readings.md#as-code): the file written for every weight
of nanogpt-cpu runs as __main__ in a fresh interpreter where only NumPy can be imported and agrees with autograd to
1e-10 in float64; a route class's file agrees with the forms engine and passes its own finite differences; a file
whose data was tampered with says so and fails; the command line writes both files or one clear line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from engine.ascode.generate import write_code
from engine.configs.presets import load_preset
from engine.forms import Snapshot, verify
from engine.model.gpt import GPT

NANO = load_preset("nanogpt-cpu").model
# NumPy alone: torch and this project cannot be imported in the interpreter that runs a generated file
NUMPY_ONLY = ("import sys, runpy; sys.modules['torch'] = None; sys.modules['engine'] = None; "
              "sys.argv = [sys.argv[1]] + sys.argv[2:]; runpy.run_path(sys.argv[0], run_name='__main__')")


def run_numpy_only(path, *args):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONPATH="")
    return subprocess.run([sys.executable, "-c", NUMPY_ONLY, str(path), *map(str, args)], capture_output=True,
                          text=True, env=env, cwd=path.parent, timeout=600)


@pytest.fixture(scope="module")
def nano():
    """nanogpt-cpu's weights (perturbed initial ones), a 2 × 32 probe, and autograd's −∂L/∂W in float64."""
    w = verify.random_gpt_weights(NANO, 0)
    x, y = verify.random_probe(NANO, batch=2, length=32)
    model = GPT(NANO).double().eval()
    model.load_state_dict(w)
    params = dict(model.named_parameters())
    grads = torch.autograd.grad(model(x, y)[1], list(params.values()))
    return w, x.numpy(), y.numpy(), {n: -g.numpy() for n, g in zip(params, grads)}


@pytest.fixture(scope="module")
def snap(nano):
    """The forms engine on those weights and that probe in float64, one for the tests that read its numbers: bound
    once (a Snapshot of nanogpt-cpu binds its network to the weights and the batch), its products shared."""
    w, x, y, _ = nano
    return Snapshot(NANO, w, torch.as_tensor(x), torch.as_tensor(y), torch.float64)


# Each file named on the command line run as __main__ in turn, in one interpreter where only NumPy can be imported,
# with its own argv and its stdout and exit status kept apart: a Python and NumPy started for each of the 53 files
# of the test below was two thirds of its 15 s (quiet machine).
EACH_ONE = """
    with contextlib.redirect_stdout(stdout):
        try:
            runpy.run_path(path, run_name='__main__')
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:
            traceback.print_exc(file=stdout); code = 1
    out[path] = [code, stdout.getvalue()]
print(json.dumps(out))
"""
EACH_NUMPY_ONLY = """
import contextlib, io, json, runpy, sys, traceback
sys.modules['torch'] = None; sys.modules['engine'] = None
out = {}
for path in sys.argv[1:]:
    stdout, code = io.StringIO(), 0
    sys.argv = [path, '--out', path[:-3] + '.npy', '--no-differences']
""" + EACH_ONE
# The same where torch can be imported: each file's own check against torch autograd (its finite differences are
# the NumPy-only runs'); one Python importing torch (~1.9 s CPU) for the three files instead of one each.
EACH_WITH_TORCH = """
import contextlib, io, json, runpy, sys, traceback
out = {}
for path in sys.argv[1:]:
    stdout, code = io.StringIO(), 0
    sys.argv = [path, '--no-differences']
""" + EACH_ONE


def test_every_weights_file_runs_with_numpy_alone_and_agrees_with_autograd(nano, snap, tmp_path):
    w, x, y, ref = nano
    top = max(np.abs(g).max() for g in ref.values())
    engine = snap.total()  # every weight at once
    paths = {name: tmp_path / f"{name.replace('.', '_')}.py" for name in ref}
    for name, path in paths.items():
        write_code(path, NANO, w, x, y, name, None, 7, "nano", engine[name].numpy())
    done = subprocess.run([sys.executable, "-c", EACH_NUMPY_ONLY, *map(str, paths.values())], capture_output=True,
                          text=True, env=dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONPATH=""), cwd=tmp_path,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    each = json.loads(done.stdout)
    for name, path in paths.items():
        code, stdout = each[str(path)]
        assert code == 0 and "torch is not installed, skipped" in stdout, (name, stdout)
        got = np.load(path.with_suffix(".npy"))
        scale = max(np.abs(ref[name]).max(), 1e-6 * top)  # the degenerate rule of docs/verification.md
        assert np.abs(got - ref[name]).max() <= 1e-10 * scale, name


CLASSES = [("blocks.1.W_in", "L2.q"), ("W_E", "unembed"), ("blocks.3.W_K", None)]


@pytest.fixture(scope="module")
def class_files(nano, tmp_path_factory):
    """{(weight, part): (its file, what it printed and its exit status run where torch can be imported)}."""
    w, x, y, _ = nano
    folder = tmp_path_factory.mktemp("classes")
    paths = {}
    for weight, part in CLASSES:
        paths[weight, part] = folder / f"{weight.replace('.', '_')}_{part}.py"
        write_code(paths[weight, part], NANO, w, x, y, weight, part, 7, "nano")
    done = subprocess.run([sys.executable, "-c", EACH_WITH_TORCH, *map(str, paths.values())], capture_output=True,
                          text=True, env=dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONPATH=""), cwd=folder,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    each = json.loads(done.stdout)
    return {key: (path, each[str(path)]) for key, path in paths.items()}


@pytest.mark.parametrize("weight, part", CLASSES)
def test_a_files_own_checks_pass_and_a_class_is_the_forms_engines(nano, snap, class_files, tmp_path, weight, part):
    ref = nano[3]
    path, (torch_code, torch_stdout) = class_files[weight, part]
    done = run_numpy_only(path, "--out", tmp_path / "g.npy")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("(ok,") == (4 if part else 3) and "FAILED" not in done.stdout
    want = ref[weight] if part is None else snap.classes(weight)[weight][part].numpy()
    np.testing.assert_allclose(np.load(tmp_path / "g.npy"), want, rtol=0, atol=1e-10 * np.abs(want).max())
    assert torch_code == 0 and "against torch autograd: relative error" in torch_stdout, torch_stdout
    assert "FAILED" not in torch_stdout and "torch is not installed" not in torch_stdout


def test_a_file_whose_number_is_wrong_fails_its_check(nano, tmp_path):
    w, x, y, _ = nano
    path = tmp_path / "g.py"
    _, npz = write_code(path, NANO, w, x, y, "blocks.0.W_O", "L1.v", 7, "nano")
    data = dict(np.load(npz))
    data["expected"] = data["expected"] * (1 + 1e-6)
    np.savez(npz, **data)
    done = run_numpy_only(path, "--no-differences")
    assert done.returncode == 1 and "forms engine (.npz): relative error 1.00e-06 (FAILED" in done.stdout


def test_a_fresh_models_small_coefficient_passes_its_finite_differences(tmp_path):
    """A fresh model's W_Q has a coefficient a millionth of its loss: a difference of the loss along a random
    direction keeps round-off of 1e-3 of ⟨G, M⟩, and the file's tolerance takes it in (it said FAILED for a G
    that autograd matched to 1e-15); a wrong G still fails."""
    from engine.configs.config import ModelConfig

    cfg = ModelConfig(n_layer=2, n_head=2, d_model=16, d_ff=32, n_ctx=16, vocab_size=400)
    torch.manual_seed(0)
    w = {k: v.double() for k, v in GPT(cfg).state_dict().items()}
    x, y = torch.randint(0, 400, (2, 16)).numpy(), torch.randint(0, 400, (2, 16)).numpy()
    path = tmp_path / "g.py"
    _, npz = write_code(path, cfg, w, x, y, "blocks.0.W_Q", None, 0, "fresh")
    done = run_numpy_only(path)
    random = next(line for line in done.stdout.splitlines() if "random direction" in line)
    assert done.returncode == 0 and done.stdout.count("(ok,") == 3, done.stdout
    assert float(random.split("relative error ")[1].split()[0]) > 1e-6  # over the old fixed tolerance
    # the file computes G itself: its backward made 1 % wrong fails along G, whose tolerance stays 1.4e-5 (along
    # the random direction round-off allows 1.6e-2 here: what a difference of the loss can tell in float64)
    text = path.read_text().replace("    return (sum(parts.values()) if part is None else parts[part]), parts",
                                    "    parts = {c: 1.01 * g for c, g in parts.items()}\n"
                                    "    return (sum(parts.values()) if part is None else parts[part]), parts")
    path.write_text(text)
    done = run_numpy_only(path)
    along = next(line for line in done.stdout.splitlines() if "G along G" in line)
    assert done.returncode == 1 and "(FAILED" in along, done.stdout


def test_the_command_line_writes_the_file_and_its_data_or_one_line(tmp_path, capsys):
    from engine.cli import main
    from tests.engine.coefficients.test_coefficients import tiny_run

    run = tiny_run(tmp_path / "run")
    out = tmp_path / "q.py"
    assert main(["export", "--run", str(run.path), "--what", "code", "--weight", "blocks.0.W_Q", "--class",
                 "L1.k", "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {out} and q.npz beside it"
    assert "WEIGHT, PART = 'blocks.0.W_Q', 'L1.k'" in out.read_text() and (tmp_path / "q.npz").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.npz", "q.py", "run"]  # nothing half-written left
    for argv, message in ((["--class", "L9.q", "--out", str(out)], "has no route class 'L9.q'"),
                          (["--out", str(tmp_path / "q.csv")], "choose a file ending in .py")):
        assert main(["export", "--run", str(run.path), "--what", "code", "--weight", "blocks.0.W_Q", *argv]) != 0
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err
