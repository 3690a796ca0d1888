"""An import in a child process (engine/importers/process.py): it tells its stages and its outcome, a refusal
is one line, and cancelling it at any stage leaves the target whole or absent, never half-made."""

from __future__ import annotations

import time

import pytest

from engine.importers.hugging_face import STAGES
from engine.importers.process import ImportProcess
from engine.rundir.runs import Run

from .test_hugging_face import hf_model, pretrained, tokenizer  # noqa: F401  (fixtures)

pytest.importorskip("transformers")


def events_until(job: ImportProcess, last: set[str]) -> list[tuple]:
    out = []
    while not out or out[-1][0] not in last:
        got = job.poll()
        out += got
        if not got:
            time.sleep(0.05)
    return out


def test_the_child_tells_each_stage_then_what_it_wrote(pretrained, tmp_path):  # noqa: F811
    job = ImportProcess("hf", pretrained, tmp_path / "run")
    events = events_until(job, {"done", "failed"})
    assert [e[1:] for e in events[:-1]] == [(k, len(STAGES), s) for k, s in enumerate(STAGES)]
    assert events[-1][0] == "done" and events[-1][1].run_dir == tmp_path / "run" and job.finished
    assert Run(tmp_path / "run").checkpoint_steps() == [0]
    refused = ImportProcess("hf", tmp_path / "nothing", tmp_path / "other")
    assert events_until(refused, {"done", "failed"})[-1] == ("failed", f"{tmp_path / 'nothing'} is not a folder")


def test_a_wrong_folder_is_refused_before_torch_loads(tmp_path):
    """A folder refused before its weights are read (the wrong one picked: not a folder, no config.json) is told
    by the import's process before it imports torch, ~1.5 s of CPU sooner (engine/importers/hugging_face.py)."""
    from tests.fresh_imports import loaded_by

    (tmp_path / "empty").mkdir()
    code = ("from engine.importers.hugging_face import HFImportError, import_hf\n"
            f"for folder in ({str(tmp_path / 'empty')!r}, {str(tmp_path / 'nothing')!r}):\n"
            "    try:\n"
            f"        import_hf(folder, {str(tmp_path / 'run')!r})\n"
            "    except HFImportError as e:\n"
            "        print(e)\n"
            "    else:\n"
            "        raise SystemExit('imported')\n")
    assert loaded_by(code, ("torch",), tmp_path) == []


@pytest.mark.parametrize("stage", [0, len(STAGES) - 1])
def test_cancelling_at_a_stage_leaves_the_run_whole_or_absent(pretrained, tmp_path, stage):  # noqa: F811
    job = ImportProcess("hf", pretrained, tmp_path / "run")
    seen = []
    while not any(e[0] == "stage" and e[1] >= stage for e in seen) and not job.finished:
        seen += job.poll()
        time.sleep(0.01)
    job.cancel()
    assert job.finished
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left in ([], ["run"])  # never a .tmp- folder
    if left:
        assert Run(tmp_path / "run").checkpoint_steps() == [0]
