"""The thread policy: OpenMP spins briefly, then sleeps, from the first torch import
(engine/training/thread_policy.py)."""

from __future__ import annotations

import os
import subprocess
import sys

from engine.training import thread_policy as tp


def test_openmp_spins_briefly_unless_the_environment_already_says_how():
    env = {}
    tp.prepare_openmp(env)
    assert env == tp.OPENMP_ENV
    for mine in ({"OMP_WAIT_POLICY": "ACTIVE"}, {"GOMP_SPINCOUNT": "300000"}):
        env = dict(mine)
        tp.prepare_openmp(env)
        assert env == mine


def test_the_policy_is_in_the_environment_before_torch_loads():
    """`import engine` sets it and loads no torch; every module of ours that imports torch is inside `engine`, whose
    __init__ Python runs first, so torch loads with it in place (no process of its own imports torch to show it:
    that was ~1.5 s of CPU)."""
    env = {k: v for k, v in os.environ.items() if k not in (*tp.OPENMP_ENV, "OMP_WAIT_POLICY")}
    code = "import os, sys, engine; print(os.environ['GOMP_SPINCOUNT'], os.environ['KMP_BLOCKTIME'], 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1000", "0", "False"]
