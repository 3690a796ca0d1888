"""Runs as in a fresh interpreter (tests/fresh_imports.py): forked from the zygote, a run sees its own arguments,
working folder and environment, says what it printed and how it exited, and `loaded_by` tells what its code
loaded; a module the zygote holds is asked of a really fresh interpreter."""

from __future__ import annotations

import os

from tests import fresh_imports


def test_a_run_has_its_arguments_folder_and_environment_and_says_its_output_and_exit(tmp_path):
    code = ("import os, sys\nprint(sys.argv[1:], os.getcwd(), os.environ['FRESH_PROBE'])\n"
            "print('to stderr', file=sys.stderr)\nsys.exit(3)")
    done = fresh_imports.run(code, "a", 2, cwd=tmp_path, env={**os.environ, "FRESH_PROBE": "here"})
    assert (done.returncode, done.stdout, done.stderr) == (3, f"['a', '2'] {tmp_path} here\n", "to stderr\n")
    failed = fresh_imports.run("raise ValueError('shown')")
    assert failed.returncode == 1 and failed.stderr.strip().endswith("ValueError: shown")


def test_loaded_by_sees_what_the_code_loads_even_what_the_zygote_holds(tmp_path):
    assert fresh_imports.loaded_by("import colorsys", ("colorsys", "wave"), tmp_path) == ["colorsys"]
    assert fresh_imports.loaded_by("pass", ("torch",), tmp_path) == []  # the zygote holds torch: a fresh interpreter
