"""Shared test setup: Qt runs offscreen, set before anything can load it."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
