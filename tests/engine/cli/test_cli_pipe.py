"""A reader that stops early (`gpt-explorer forms … | head`) ends the command quietly, as with cat."""

import subprocess
import sys

COMMAND = "from engine.cli import main; raise SystemExit(main(['forms', '--chain', '4']))"


def test_a_closed_pipe_ends_without_a_traceback():
    proc = subprocess.Popen([sys.executable, "-c", COMMAND], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()  # like head after its first line
    stderr = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert first.startswith(b"# ")
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr
    assert proc.returncode == 141
