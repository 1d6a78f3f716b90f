"""The public Python API (issue 12 item 5): ``import softhard`` lists it, the README's script runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import softhard

ROOT = Path(__file__).resolve().parents[2]


def test_all_lists_every_stage():
    assert softhard.__version__ and softhard.__version__ != "0+unknown"
    for name in ("load_formula", "load_model", "load_tracr", "build", "build_model", "derive", "certify",
                 "certify_model", "certify_tracr", "verify", "run", "confirm", "Params"):
        assert name in softhard.__all__
        assert callable(getattr(softhard, name)), name
        assert getattr(softhard, name).__doc__, name


def test_readme_shows_the_example_script_and_it_runs():
    script = (ROOT / "examples" / "api_example.py").read_text()
    body = script.split('"""', 2)[2].strip()
    assert body in (ROOT / "README.md").read_text()  # the README shows exactly this script
    r = subprocess.run([sys.executable, "examples/api_example.py"], cwd=ROOT, capture_output=True, text=True,
                       timeout=600, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    assert any(x.startswith("proved at 1/tau = ") for x in lines)
    assert "hard accepts: True soft accepts: True" in lines  # 1101001 has no 000: in Tomita 4
    assert lines[-1].startswith("proved established (exhaustive over ") and lines[-1].endswith(" True")


def test_params_is_validated_once_and_substitutes():
    import pytest
    import sympy as sp

    from softhard.bounds.core import beta, eta, tau
    p = softhard.Params(regime="U", beta="1/8", eta="0.25")
    assert p.beta == sp.Rational(1, 8) and p.eta == sp.Rational(1, 4)
    assert p.substitute(beta + eta / tau, inv_tau=4) == sp.Rational(1, 8) + 1
    with pytest.raises(softhard.SofthardError, match="eta"):
        softhard.Params(eta="1/2")
    with pytest.raises(softhard.SofthardError, match="regime"):
        softhard.Params(regime="X")
    assert p.with_(tau="1/3").inv_tau == 3
