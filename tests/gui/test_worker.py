"""TrainingWorker on a stand-in trainer: when it copies weights, what closing does, how failures read."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from engine.errors import UserError
from engine.model.sampling import SampleRequest
from gui.worker import TrainingWorker

WAIT = 10_000


@dataclass(frozen=True)
class Report:
    step: int
    total_steps: int
    event: str | None = None
    message: str | None = None


class StandInTrainer:
    """What the worker uses of engine.training.trainer.Trainer, counting instead of training."""

    def __init__(self, total: int = 200):
        self.total, self.step, self.closed_at = total, 0, None
        self.cfg = self.tokenizer = self.writer = None
        self.device = SimpleNamespace(type="cpu")
        self.autocast_dtype, self.compiled, self.compile_message = None, False, None

    def steps(self):
        try:
            while self.step < self.total:
                self.step += 1
                yield Report(self.step, self.total, "done" if self.step == self.total else None)
        except GeneratorExit:
            self.closed_at = self.step  # the real trainer writes its checkpoint here
            raise

    def weights_copy(self) -> dict:
        return {"W": self.step}

    def sample(self, prompt, n_tokens, temperature, top_k, seed):
        if not prompt:
            raise UserError("the prompt is empty")
        return prompt.upper()


def start(qtbot, trainer, **kw) -> tuple[TrainingWorker, dict]:
    seen = {"reports": [], "weights": [], "states": [], "failed": [], "samples": []}
    worker = TrainingWorker(lambda: trainer, **kw)
    worker.sig_step_reported.connect(lambda r: seen["reports"].append(r.step))
    worker.sig_weights_ready.connect(lambda step, w: seen["weights"].append(step))
    worker.sig_state_changed.connect(seen["states"].append)
    worker.sig_failed.connect(seen["failed"].append)
    worker.sig_sample_ready.connect(lambda req, text: seen["samples"].append(text))
    worker.start()
    return worker, seen


def finish(qtbot, worker) -> None:
    worker.stop()
    qtbot.waitUntil(worker.isFinished, timeout=WAIT)
    worker.wait()


@pytest.mark.parametrize("every, expected", [(50, [0, 50, 100, 150, 200]), (0, [])])
def test_weights_are_copied_every_n_steps_only_when_asked(qtbot, every, expected):
    worker, seen = start(qtbot, StandInTrainer(200), weights_every=every)
    qtbot.waitUntil(lambda: "finished" in seen["states"], timeout=WAIT)
    finish(qtbot, worker)
    assert seen["reports"] == list(range(1, 201))
    assert seen["weights"] == expected


def test_a_single_step_reports_once_and_shows_its_weights(qtbot):
    trainer = StandInTrainer()
    worker, seen = start(qtbot, trainer, paused=True, weights_every=1000)
    qtbot.waitUntil(lambda: seen["states"] == ["paused"], timeout=WAIT)
    worker.step_once()
    qtbot.waitUntil(lambda: seen["reports"] == [1] and seen["weights"] == [0, 1], timeout=WAIT)
    qtbot.wait(100)
    assert seen["reports"] == [1]
    finish(qtbot, worker)
    assert trainer.closed_at == 1 and seen["states"][-1] == "stopped"


def test_stopping_closes_the_generator_so_the_run_can_resume(qtbot):
    trainer = StandInTrainer(10**9)
    worker, seen = start(qtbot, trainer)
    qtbot.waitUntil(lambda: len(seen["reports"]) > 10, timeout=WAIT)
    finish(qtbot, worker)
    assert trainer.closed_at == trainer.step and seen["states"][-1] == "stopped"


def test_samples_run_between_steps_and_a_bad_one_does_not_end_training(qtbot):
    worker, seen = start(qtbot, StandInTrainer(10**9), paused=True)
    worker.request_sample(SampleRequest("", 5))
    worker.request_sample(SampleRequest("to be", 5))
    qtbot.waitUntil(lambda: seen["samples"] == ["TO BE"], timeout=WAIT)
    assert seen["failed"] == ["the prompt is empty"]
    worker.resume()
    qtbot.waitUntil(lambda: len(seen["reports"]) > 5, timeout=WAIT)
    finish(qtbot, worker)


def test_out_of_memory_reads_as_what_to_do(qtbot):
    def make():
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")

    worker = TrainingWorker(make)
    failed, states = [], []
    worker.sig_failed.connect(failed.append)
    worker.sig_state_changed.connect(states.append)
    worker.start()
    qtbot.waitUntil(lambda: states == ["error"], timeout=WAIT)
    worker.wait()
    assert failed[0].startswith("Out of memory") and "batch size" in failed[0]


def test_the_device_names_the_precision_and_a_compile_fallback_is_a_notice(qtbot):
    trainer = StandInTrainer(total=3)
    trainer.compile_message = "torch.compile could not compile this model (no compiler); training runs eagerly"
    worker = TrainingWorker(lambda: trainer)
    infos = []
    worker.sig_started.connect(infos.append)
    with qtbot.waitSignal(worker.sig_started, timeout=WAIT):
        worker.start()
    worker.stop()
    qtbot.waitUntil(lambda: worker.isFinished(), timeout=WAIT)
    assert infos[0].device_name == "CPU · float32" and infos[0].notice == trainer.compile_message


def test_the_tokenizers_library_loads_with_torch(monkeypatch):
    """The first BPE built in the app imported `tokenizers` where it was built (the training thread pressing Train
    on an imported GPT-2, the GUI thread opening a small BPE run), its initialisation holding the interpreter lock
    ~90 ms of CPU: it loads with torch, which the window imports while it shows "loading"."""
    import sys

    import engine.text.bpe
    from gui import torch_import

    monkeypatch.setattr(torch_import, "_ready", False)
    monkeypatch.setattr(engine.text, "bpe", engine.text.bpe, raising=False)  # put back as it was afterwards
    monkeypatch.delitem(sys.modules, "engine.text.bpe", raising=False)
    torch_import.ensure_torch()
    assert "engine.text.bpe" in sys.modules
