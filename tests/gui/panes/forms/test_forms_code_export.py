"""The Forms pane's export of the chosen weight's coefficient as code (issue 39, docs/readings.md#as-code): with
the model's form and a run open, the file computes the weight's G from the run's weights at the browsed step and
passes its own checks; on the note's chain, which has no run's weights, it says what it needs instead."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
from PySide6.QtCore import Qt

from engine.coefficients.cache import CoefficientStore
from tests.child_work import sendable

from .test_forms_pane import make, model_session


def test_the_chosen_weight_of_the_models_form_exports_as_code_that_checks_itself(qtbot, tmp_path):
    session, run = model_session(tmp_path)
    _, pane = make(qtbot, session)
    posted = []
    session.post_message = lambda text, kind="info": posted.append(text)
    pane.export_dialog("code")  # the chain: no run's weights to compute from
    assert posted and "run open" in posted[-1]
    pane.source.kind.setCurrentIndex(1)
    qtbot.waitUntil(lambda: pane.derived is not None and "blocks.0.W_V" in pane.counts, timeout=20000)
    session.set_run(run)
    item = pane.terms.weights.findItems("blocks.0.W_V", Qt.MatchFlag.MatchExactly, 0)[0]
    pane.terms.weights.setCurrentItem(item)
    session.set_browse_step(run.saved_steps()[1])
    write = pane.export_writer("code")
    assert sendable(write)
    path = write(tmp_path / "v.py")
    assert path == tmp_path / "v.py" and (tmp_path / "v.npz").is_file()
    done = subprocess.run([sys.executable, str(path), "--no-differences", "--out", str(tmp_path / "v.npy")],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    assert done.returncode == 0 and "FAILED" not in done.stdout, done.stdout + done.stderr
    want = CoefficientStore(run, dtype="float64", disk=False).record("blocks.0.W_V", run.saved_steps()[1]).G
    np.testing.assert_allclose(np.load(tmp_path / "v.npy"), want, rtol=1e-9, atol=1e-12)
