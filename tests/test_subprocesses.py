"""The tests' helper for processes that run together (two jax.distributed processes)."""

import subprocess
import sys

from conftest import communicate_all

# The first process waits (at most 20 s) for a file that the second makes only after writing
# 256 KiB to its output: four times what a pipe holds unread. A stand-in for two processes
# of one run, one waiting for the other at a collective while the other logs.
_WAITER = """
import os, sys, time
deadline = time.monotonic() + 20
while not os.path.exists(sys.argv[1]):
    if time.monotonic() > deadline:
        sys.exit("the other process never got past its output")
    time.sleep(0.05)
print("waited")
"""
_WRITER = """
import sys
sys.stdout.write("x" * (256 * 1024))
sys.stdout.flush()
open(sys.argv[1], "w").close()
"""


def test_communicate_all_reads_every_process_while_another_waits(tmp_path):
    flag = str(tmp_path / "written")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, flag],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for code in (_WAITER, _WRITER)
    ]
    (waited, _), (written, _) = communicate_all(procs, timeout=60)
    assert [p.returncode for p in procs] == [0, 0], waited
    assert waited.strip() == "waited"
    assert written == "x" * (256 * 1024)
