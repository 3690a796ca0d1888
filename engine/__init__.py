"""GPT Explorer's engine: everything that works without Qt (docs/design.md).

OpenMP's waiting policy is set here, before any engine module imports torch, because OpenMP reads it once,
when torch loads it (engine/training/thread_policy.py).
"""

from .training.thread_policy import prepare_openmp

prepare_openmp()
