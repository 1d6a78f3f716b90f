"""solver/cli/handlers/certify.py: the first import of a kind's certify module freezes what exists
then (gc.freeze), once per module and process, so a batch's later jobs are collected as before.
In a fresh interpreter (what is frozen is a property of a process)."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import gc, json
from softhard.solver.cli.handlers.certify import kind_certify
before = gc.get_freeze_count()
tracked = len(gc.get_objects())  # what the interpreter tracks before the kind's stages are imported
kind_certify("model")
first = gc.get_freeze_count()
garbage = [[i] for i in range(10000)]  # objects made after the freeze
kind_certify("model")
again = gc.get_freeze_count()
kind_certify("tracr")
other = gc.get_freeze_count()
print(json.dumps({"before": before, "tracked": tracked, "first": first, "again": again, "other": other}))
"""


def test_a_kinds_first_import_freezes_once():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["before"] == 0
    assert got["first"] > got["tracked"] + 10_000  # all that was there, and the model kind's stages (SymPy, NumPy)
    assert got["again"] == got["first"]  # the second job of a batch freezes nothing (its 10^4 lists stay collectable)
    assert got["other"] > got["again"] + 10_000  # another kind's first import freezes again, the lists with it
