"""solver/arbload.py: the ball checks load python-flint's ball types alone, with the very types and
context of the whole package, and python-flint is complete for whoever uses it afterwards.  Each
side runs in a fresh interpreter (what is loaded is a property of a process)."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version

import mpmath

LIGHT = """
import json, sys
from softhard.solver import balls
light = sorted(m for m in sys.modules if m.startswith("flint"))
tree = ["Add", ["Integer", "2"], ["Mul", ["Rational", "1", "3"], ["exp", balls.N_TREE]]]
ball = balls.tree_value_at(tree, 7, prec=256)
mid, rad = ball.mid().str(80, radius=False), ball.rad().str(5, radius=False)
import flint
out = {"light": light, "mid": mid, "rad": rad, "poly": str(flint.fmpz_poly([1, 2, 3])),
       "version": flint.__version__, "same": flint.arb is balls.arb and flint.ctx is balls.ctx,
       "after": sorted(m for m in sys.modules if m.startswith("flint"))}
print(json.dumps(out))
"""

WHOLE = """
import json, sys
import flint
print(json.dumps(sorted(m for m in sys.modules if m.startswith("flint"))))
"""


def _run(code: str):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_ball_types_alone_then_the_whole_package():
    got = _run(LIGHT)
    whole = _run(WHOLE)
    # the ball check loaded a handful of python-flint's modules, not the polynomial/matrix ones
    assert "flint.types.arb" in got["light"] and "flint.types.fmpz_poly" not in got["light"]
    assert len(got["light"]) < len(whole) / 2
    # its ball encloses 2 + e^7/3 (mpmath at 90 digits) and is tight at 256 bits
    with mpmath.workdps(90):
        exact = 2 + mpmath.exp(7) / 3
        assert abs(mpmath.mpf(got["mid"]) - exact) <= mpmath.mpf(got["rad"]) < mpmath.mpf(10) ** -70
    # afterwards `import flint` is the complete package: the same types, every module a plain import loads
    assert got["same"] is True
    assert got["poly"] == "3*x^2 + 2*x + 1"
    assert got["version"] == version("python-flint")
    assert got["after"] == whole
