"""A reader that stops early (`gpt-explorer forms … | head`) ends the command quietly, as with cat."""

import fcntl
import os
import subprocess
import sys

COMMAND = "from engine.cli import main; raise SystemExit(main(['forms', '--chain', '4']))"


def test_a_closed_pipe_ends_without_a_traceback():
    # The form prints ~53 KB. Into a default 64 KB pipe the command could write all of it and exit before the
    # reader closes, and then no pipe breaks. A one-page pipe leaves most of the output unwritten at the close.
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)
    proc = subprocess.Popen([sys.executable, "-c", COMMAND], stdout=write_end, stderr=subprocess.PIPE)
    os.close(write_end)
    with os.fdopen(read_end, "rb", buffering=0) as reader:
        first = reader.read(2)  # like head after the start of its first line
    stderr = proc.stderr.read().decode()
    proc.wait(timeout=600)
    assert first == b"# "
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr
    assert proc.returncode == 141
