"""The run directory: snapshots within budget, checkpoints that never overwrite good ones, damaged files."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
import torch

from engine.model.probes import induction_probe
from engine.rundir.runs import Run, RunError, RunWriter, read_checkpoint
from engine.training.trainer import Trainer
from tests.engine.training.test_trainer import small_config, tree_digest


@pytest.fixture(scope="module")
def text() -> str:
    from engine.text.corpus import shakespeare_text

    return shakespeare_text()[:40_000]


@pytest.fixture
def trained(text, tmp_path) -> Path:
    """A finished 20-step run with checkpoints at 10 and 20 and snapshots every 10."""
    trainer = Trainer(small_config(steps=20, checkpoint_every=10, eval_every=10), tmp_path / "run", text=text)
    list(trainer.steps())
    return tmp_path / "run"


def test_a_finished_run_reads_back_whole(trained):
    run = Run(trained)
    assert run.warnings == []
    assert run.config.model.vocab_size == run.tokenizer.vocab_size
    assert [r["step"] for r in run.metrics()] == list(range(1, 21))
    assert set(run.metrics()[0]) >= {"step", "train_loss", "val_loss", "lr", "tokens_per_s", "wall_s"}
    assert [s["step"] for s in run.samples()] == [10, 20] and run.samples()[0]["text"]
    probe = run.probe()
    assert probe.x.shape == probe.y.shape == (4, 16) and probe.x.dtype.name == "int64" and probe.prompt
    assert (probe.x[:, 1:] == probe.y[:, :-1]).all()
    assert run.snapshot_steps() == [0, 10, 20] and run.checkpoint_steps() == [10, 20]
    assert run.saved_steps() == [0, 10, 20]
    assert run.latest_step() == 20 and run.best_step() in (10, 20)
    model = run.build_model()
    assert not model.training and next(model.parameters()).device.type == "cpu"
    assert torch.equal(run.load_weights(0)["W_E"], Run(trained).build_model(0).W_E.detach())
    assert run.build_model(10, dtype=torch.float64).W_E.dtype == torch.float64


def test_weights_at_a_step_that_was_not_saved_are_a_clear_error(trained):
    with pytest.raises(RunError, match="no weights saved at step 7"):
        Run(trained).load_weights(7)


def test_a_directory_that_is_not_a_run_is_refused(tmp_path):
    with pytest.raises(RunError, match="is not a run directory"):
        Run(tmp_path)
    with pytest.raises(RunError, match="not found"):
        Run(tmp_path / "missing")


def test_snapshots_stay_within_budget_thinning_evenly_and_recording_what_went(text, tmp_path):
    schedule = dict(steps=60, snapshot_every=5, checkpoint_every=100, eval_every=100, sample_tokens=0)
    size = 4 * sum(p.numel() for p in Trainer(small_config(**schedule), text=text).model.parameters())
    cfg = small_config(**schedule, snapshot_budget_mb=5.5 * size / 1e6)  # room for five snapshots
    list(Trainer(cfg, tmp_path / "run", text=text).steps())
    run = Run(tmp_path / "run")
    kept, thinned = run.snapshot_steps(), run.thinned_steps()
    folder = tmp_path / "run" / "snapshots"
    assert sum(p.stat().st_size for p in folder.glob("*.safetensors")) <= cfg.train.snapshot_budget_mb * 1e6
    assert sorted(kept + thinned) == list(range(0, 61, 5))  # every snapshot is kept or recorded as thinned
    assert kept[0] == 0 and kept[-1] == 60 and len(kept) == 5
    gaps = [b - a for a, b in zip(kept, kept[1:])]
    assert max(gaps) <= 2 * min(gaps)  # evenly spread, not a dense tail after a hole


def test_keep_last_n_checkpoints_plus_best(text, tmp_path):
    cfg = small_config(steps=30, checkpoint_every=5, eval_every=100, keep_checkpoints=2)
    list(Trainer(cfg, tmp_path / "run", text=text).steps())
    assert Run(tmp_path / "run").checkpoint_steps() == [20, 25, 30]  # latest + 2 (best is 30: the only eval)


def test_a_truncated_or_garbage_checkpoint_is_named_and_the_older_one_used(trained, text):
    latest = trained / "checkpoints" / "step-000020"
    data = (latest / "model.safetensors").read_bytes()
    (latest / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(RunError, match="step-000020/model.safetensors is corrupt or truncated"):
        Run(trained).load_checkpoint(20)
    run = Run(trained)
    assert torch.equal(run.load_weights()["W_E"], Run(trained).load_weights(10)["W_E"])
    assert any("skipped checkpoints/step-000020" in w and "using step 10" in w for w in run.warnings)
    assert Trainer.resume(trained, text=text).step == 10
    (latest / "model.safetensors").write_bytes(data)
    (latest / "state.pt").write_bytes(b"not a checkpoint at all")
    with pytest.raises(RunError, match="step-000020/state.pt is corrupt or truncated"):
        Run(trained).load_checkpoint(20)
    assert Run(trained).load_weights(10)  # the earlier checkpoint still loads


class _Exploit:
    def __reduce__(self):
        return (Path.touch, (Path(_Exploit.marker),))


def test_loading_a_checkpoint_never_runs_its_code(trained, tmp_path):
    _Exploit.marker = str(tmp_path / "pwned")
    with open(trained / "checkpoints" / "step-000020" / "state.pt", "wb") as f:
        pickle.dump({"step": 20, "x": _Exploit()}, f, protocol=2)
    with pytest.raises(RunError):
        read_checkpoint(trained / "checkpoints" / "step-000020")
    assert not (tmp_path / "pwned").exists()


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="the process's mappings are read from /proc")
def test_a_checkpoints_optimizer_state_is_mapped_not_read(trained):
    """torch's reader holds the interpreter lock for each whole tensor it reads (GPT-2 small's 1 GB of moments,
    0.1-0.3 s at a time beside the GUI thread); mapped, a moment is read when training first touches it."""
    path = trained / "checkpoints" / "step-000020" / "state.pt"
    _, state = read_checkpoint(path.parent)
    moments = [v for s in state["optimizer"]["state"].values() for v in s.values() if torch.is_tensor(v) and v.dim()]
    spans = [tuple(int(a, 16) for a in line.split()[0].split("-"))
             for line in Path("/proc/self/maps").read_text().splitlines() if line.endswith(str(path.resolve()))]
    assert moments and all(any(lo <= v.data_ptr() < hi for lo, hi in spans) for v in moments)


def test_a_checkpoint_that_fails_to_write_never_replaces_the_good_one(trained, monkeypatch):
    folder = trained / "checkpoints"
    before = tree_digest(folder)
    run = Run(trained)
    weights, state = run.load_checkpoint(20)
    writer = RunWriter(trained, run.config)

    def broken_save(obj, path, *a, **k):  # a disk that garbles what it is given
        Path(path).write_bytes(b"\x00garbled")

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(RunError, match="step 20 could not be written.*previous one is kept"):
        writer.save_checkpoint(20, weights, state)
    assert tree_digest(folder) == before  # same files, same bytes, no temporary leftovers


def test_a_corrupt_metrics_line_or_probe_file_does_not_stop_the_run_loading(trained):
    with open(trained / "metrics.jsonl", "a") as f:
        f.write('{"step": 21, "train_loss": 1.0}\n{"step": 22, "train_lo')  # a crash cut the last line
    lines = (trained / "samples.jsonl").read_text().splitlines()
    (trained / "samples.jsonl").write_text("garbage\n" + "\n".join(lines) + "\n")
    (trained / "probe.json").write_text('{"x": [[1, 2')
    run = Run(trained)
    assert [r["step"] for r in run.metrics()][-2:] == [20, 21]
    assert len(run.samples()) == 2
    assert len(run.warnings) == 3 and any("metrics.jsonl" in w and "line 22" in w for w in run.warnings)
    with pytest.raises(RunError, match="probe.json"):
        run.probe()
    assert run.build_model() is not None


def test_resuming_after_a_crash_drops_rows_past_the_checkpoint_and_the_cut_line(trained, text):
    with open(trained / "metrics.jsonl", "a") as f:
        f.write(json.dumps({"step": 21, "train_loss": 9.0}) + '\n{"step": 22, "tra')
    trainer = Trainer.resume(trained, text=text, steps=23)
    list(trainer.steps())
    run = Run(trained)
    assert run.warnings == []
    assert [r["step"] for r in run.metrics()] == list(range(1, 24))
    assert run.metrics()[20]["train_loss"] != 9.0


def test_the_induction_probe_is_stored_and_an_older_run_derives_the_one_it_would_have_stored(trained, text):
    run = Run(trained)
    probe = run.probe()
    half = probe.induction.shape[1] // 2
    assert probe.induction.shape == (4, 16) and not probe.induction_derived
    assert (probe.induction[:, :half] == probe.induction[:, half:]).all()
    assert all(len(set(row[:half])) == half for row in probe.induction)  # 65 characters: no repeat in a half
    seen = set(run.tokenizer.encode(text[: int(len(text) * 0.9)]))
    assert set(probe.induction.ravel()) <= seen  # drawn from the corpus's own tokens
    m, t = run.config.model, run.config.train
    d = json.loads((trained / "probe.json").read_text())
    del d["induction"]  # a run from before induction probes were stored
    (trained / "probe.json").write_text(json.dumps(d))
    old = Run(trained)
    assert old.warnings == [] and old.probe().induction_derived
    # runs from before stored probes drew uniformly: the same draw is derived for them
    assert (old.probe().induction == induction_probe(m.vocab_size, m.n_ctx, t.seed, t.probe_batch)).all()
