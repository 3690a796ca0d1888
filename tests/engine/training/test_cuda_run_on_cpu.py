"""A run trained on CUDA opens, resumes, samples and exports on a machine without CUDA.

What is simulated, and how: there is no GPU here, so the run is trained on the CPU and its checkpoint's
training state (state.pt: AdamW moments, step counts, RNG states) is then rewritten by `torch.save` with
every storage's location recorded as "cuda:0", which is what a CUDA machine writes; the state also gets
the `cuda_rng` entry a CUDA trainer adds, and config.toml says device = "cuda". The first test proves the
simulation bites: loading that file without mapping it fails as it would on a real CUDA checkpoint.
safetensors files (weights, snapshots) record no device at all, so they are the same bytes whichever
device wrote them and need no simulation.
"""

from __future__ import annotations

import itertools
import shutil

import numpy as np
import pytest
import torch

from engine.cli import main
from engine.configs.config import DataConfig, ExperimentConfig, ModelConfig, TrainConfig
from engine.text.corpus import shakespeare_text
from engine.rundir.integrity import write_checksums
from engine.rundir.runs import MODEL_FILE, STATE_FILE, Run
from engine.training.trainer import Trainer

TEXT = shakespeare_text()[:20_000]


def cpu_run(path, corpus):
    """4 steps of a 2-layer model on the CPU: snapshots at 0, 2, 4, a checkpoint at 4."""
    corpus.write_text(TEXT, encoding="utf-8")
    cfg = ExperimentConfig(
        name="cuda-sim", model=ModelConfig(n_layer=2, n_head=2, d_model=16, d_ff=32, n_ctx=16),
        train=TrainConfig(steps=4, batch_size=4, warmup_steps=1, eval_every=2, eval_batches=1,
                          checkpoint_every=4, snapshot_every=2, sample_tokens=8, torch_threads=1),
        data=DataConfig(corpus=str(corpus)))
    list(Trainer(cfg, path).steps())
    return Run(path)


def tag_as_cuda(run: Run, monkeypatch) -> None:
    """Rewrite the latest checkpoint's state as a CUDA trainer saves it (see the module docstring)."""
    state_path = run.path / "checkpoints" / "step-000004" / STATE_FILE
    state = torch.load(state_path, weights_only=True)
    state["cuda_rng"] = torch.zeros(16, dtype=torch.uint8)  # a CUDA generator's state: seed and offset
    with monkeypatch.context() as m:
        m.setattr(torch.serialization, "location_tag", lambda storage: "cuda:0")
        torch.save(state, state_path)
    write_checksums(state_path.parent, [MODEL_FILE, STATE_FILE])  # as the CUDA machine would have
    config = run.path / "config.toml"
    config.write_text(config.read_text().replace('device = "auto"', 'device = "cuda"'))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(the CUDA-tagged run, an untouched copy of the same run)."""
    root = tmp_path_factory.mktemp("cuda")
    plain = cpu_run(root / "plain", root / "corpus.txt")
    shutil.copytree(plain.path, root / "cuda")
    with pytest.MonkeyPatch.context() as mp:
        tag_as_cuda(Run(root / "cuda"), mp)
    return Run(root / "cuda"), plain


def test_the_simulated_checkpoint_really_claims_cuda(runs):
    cuda_run, _ = runs
    state_path = cuda_run.path / "checkpoints" / "step-000004" / STATE_FILE
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the unmapped load would succeed")
    with pytest.raises(RuntimeError, match="CUDA"):
        torch.load(state_path, weights_only=True)
    weights, state = cuda_run.load_checkpoint()
    moments = [s["exp_avg"] for s in state["optimizer"]["state"].values()]
    assert moments and all(t.device.type == "cpu" for t in [*moments, *weights.values(), state["cuda_rng"]])


def test_a_cuda_run_resumes_on_the_cpu_exactly(runs, tmp_path):
    cuda_run, plain = runs
    shutil.copytree(cuda_run.path, tmp_path / "cuda")
    shutil.copytree(plain.path, tmp_path / "plain")
    resumed = Trainer.resume(tmp_path / "cuda", steps=6, device="auto")
    reference = Trainer.resume(tmp_path / "plain", steps=6)
    assert resumed.device.type == "cpu" and resumed.cfg.train.device == "auto"
    got = [r.train_loss for r in itertools.islice(resumed.steps(), 2)]
    assert got == [r.train_loss for r in itertools.islice(reference.steps(), 2)]


def test_resuming_on_the_device_it_names_is_one_line_when_that_device_is_absent(runs, tmp_path, capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    shutil.copytree(runs[0].path, tmp_path / "cuda")
    rc = main(["train", "--run", str(tmp_path / "cuda"), "--steps", "6"])
    err = capsys.readouterr().err
    assert rc == 2 and "no CUDA GPU is available (try --device auto)" in err and len(err.strip().splitlines()) == 1


def test_a_cuda_run_samples_and_exports_on_the_cpu(runs, tmp_path, capsys):
    cuda_run, plain = runs
    for run in (cuda_run, plain):
        assert main(["sample", "--run", str(run.path), "--prompt", "KING:", "--tokens", "20", "--seed", "3"]) == 0
    cuda_text, plain_text = capsys.readouterr().out.split("KING:")[1:]
    assert cuda_text == plain_text and len(cuda_text.strip()) > 5
    for what, extra in (("attention", ["--prompt", "To be, or"]), ("coefficient", ["--weight", "W_E"])):
        outs = [tmp_path / f"{what}-{run.path.name}.npy" for run in (cuda_run, plain)]
        for run, out in zip((cuda_run, plain), outs):
            assert main(["export", "--run", str(run.path), "--what", what, "--step", "4", *extra,
                         "--out", str(out)]) == 0, capsys.readouterr().err
        np.testing.assert_array_equal(np.load(outs[0]), np.load(outs[1]))
