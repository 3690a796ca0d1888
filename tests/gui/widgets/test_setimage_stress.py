"""Thousands of pyqtgraph `ImageItem.setImage` calls must not crash the interpreter.

PySide6 6.12.0 on Python 3.11 corrupts a reference count somewhere in this path and aborts after a few
thousand updates ("Fatal Python error: none_dealloc", or bool_dealloc: checked here, this very script
exits 134 under 6.12.0 and 0 under 6.11.3); pyproject.toml excludes that release. The loop runs in a
subprocess so that an abort fails this test instead of killing pytest.
"""

from __future__ import annotations

import os
import subprocess
import sys

UPDATES = 4000

SCRIPT = f"""
import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QApplication

app = QApplication([])
view = pg.GraphicsLayoutWidget()
plot = view.addPlot()
item = pg.ImageItem(axisOrder="row-major")
plot.addItem(item)
view.resize(300, 300)
view.show()
frames = np.random.default_rng(0).random((8, 64, 64), dtype=np.float32)
for i in range({UPDATES}):
    item.setImage(frames[i % 8], autoLevels=i % 2 == 0, levels=None if i % 2 == 0 else (0.0, 1.0))
    if i % 20 == 0:
        app.processEvents()
print("updates", {UPDATES})
"""


def test_thousands_of_setimage_calls_do_not_abort():
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    assert done.stdout.strip() == f"updates {UPDATES}"
