"""The solver child's clean-up at exit (solver/z3proc.py ``_stop_all``): a Ctrl-C while the process
ends printed "Exception ignored in atexit callback" and a KeyboardInterrupt traceback (a trial)."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import os, signal, time
from softhard.solver import z3proc
print(z3proc.run_z3("(declare-const x Int)(assert (> x 1))(check-sat)", 20)[0])
stop = z3proc._stop
def interrupted_stop(proc):
    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C during the clean-up
    time.sleep(0.05)
    stop(proc)
    print("stopped", proc.poll() is not None, flush=True)
z3proc._stop = interrupted_stop
"""


def test_a_ctrl_c_during_the_exit_clean_up_is_quiet_and_the_child_is_still_stopped():
    p = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120)
    assert p.stdout.split() == ["sat", "stopped", "True"], (p.stdout, p.stderr)
    assert p.stderr == "" and p.returncode == 0
