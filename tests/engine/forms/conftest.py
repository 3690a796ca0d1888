"""The forms engine's tests run with Python's cyclic collector paused (issue 42, the suite's 3 minutes).

A derivation allocates hundreds of thousands of small objects (words, their keys, memo entries) and makes hardly
any garbage, yet each burst of allocation set off the collector's full passes, each walking the whole test
process - torch, sympy, matplotlib, pytest: measured with gc.callbacks, those passes were ~30% of this
directory's CPU. Nothing here makes Qt objects, so no collection is owed to a particular thread (gui/app.py);
the collector's state is put back after each test, and what a test left collects then.
"""

from __future__ import annotations

import gc

import pytest


@pytest.fixture(autouse=True)
def _collector_paused():
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
