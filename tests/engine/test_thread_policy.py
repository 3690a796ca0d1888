"""The thread policy: OpenMP waits passively from the first torch import, and training takes the cores other
processes leave free, revising the count as load changes (engine/thread_policy.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import torch

from engine import thread_policy as tp


def test_openmp_waits_passively_unless_the_environment_already_says_how():
    env = {}
    tp.prepare_openmp(env)
    assert env == tp.OPENMP_ENV
    for mine in ({"OMP_WAIT_POLICY": "ACTIVE"}, {"GOMP_SPINCOUNT": "300000"}):
        env = dict(mine)
        tp.prepare_openmp(env)
        assert env == mine


def test_the_policy_is_in_the_environment_before_torch_loads():
    env = {k: v for k, v in os.environ.items() if k not in (*tp.OPENMP_ENV, "GOMP_SPINCOUNT")}
    code = ("import os, sys, engine.trainer; print(os.environ['OMP_WAIT_POLICY'], os.environ['KMP_BLOCKTIME'], "
            "'torch' in sys.modules)")
    probe = "import sys, engine; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    first = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["PASSIVE", "0", "True"] and first.stdout.strip() == "False"


def test_training_takes_the_cores_others_leave_free_and_at_least_one():
    assert tp.choose_threads(3, cores=2, busy=8.0) == 3  # a count the user set is kept
    assert tp.choose_threads(0, cores=2, busy=0.0) == 2
    assert tp.choose_threads(0, cores=2, busy=0.4) == 2
    assert tp.choose_threads(0, cores=2, busy=1.0) == 1
    assert tp.choose_threads(0, cores=2, busy=4.0) == 1
    assert tp.choose_threads(0, cores=16, busy=5.0) == 11


def test_busy_cores_are_the_runnable_tasks_besides_this_one():
    readings = iter(["0.1 0.2 0.3 3/90 1", "0.1 0.2 0.3 9/90 1", "0.1 0.2 0.3 3/90 1", "0.1 0.2 0.3 4/90 1",
                     "0.1 0.2 0.3 2/90 1"])
    assert tp.busy_elsewhere(lambda: next(readings)) == 2.0  # median 3, less the reader itself
    assert tp.busy_elsewhere(lambda: "0 0 0 1/50 7") == 0.0


def test_the_count_is_revised_as_load_changes_and_only_when_adaptive():
    saved = torch.get_num_threads()
    now, free = [0.0], [2]
    try:
        policy = tp.ThreadPolicy(0, clock=lambda: now[0], decide=lambda requested: free[0])
        assert policy.threads == 2 == torch.get_num_threads()
        free[0] = 1
        now[0] = tp.RECHECK_S / 2
        assert policy.tick() == 2  # not yet time to look again
        now[0] = tp.RECHECK_S
        assert policy.tick() == 1 == torch.get_num_threads()
        fixed = tp.ThreadPolicy(2, clock=lambda: now[0], decide=lambda requested: requested or free[0])
        now[0] = 10 * tp.RECHECK_S
        assert fixed.tick() == 2 == torch.get_num_threads()
    finally:
        torch.set_num_threads(saved)
