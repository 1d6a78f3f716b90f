"""The public Python API (issue 12 item 5): ``import softhard`` lists it, the README's script runs."""

from __future__ import annotations

import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

import softhard
from softhard.constructions.errors import ParameterError

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


def _claims(cert: dict) -> list:
    """The claims without their timings: what each states, its status and its queries' texts."""
    return [(c["condition"], c["status"], [q["smtlib"] for q in c.get("queries", [])]) for c in cert["claims"]]


def test_certify_takes_tau_or_inv_tau_as_text():
    """A new-user trial: ``certify(c, n_max=100, tau="1/100")`` raised TypeError, and a schedule's
    constant S could only be given as tau = 1/S (``Params(schedule="log:17/8")`` was refused with
    no hint).  Now tau may be text (exact), ``inv_tau`` takes 1/tau (under a schedule S): the same
    claims and status as the explicit Fraction; Params names where S goes."""
    spec = softhard.load_formula("P a", alphabet="ab")
    c = softhard.build(spec, softhard.Params(regime="T", eta="1/4"))
    a = softhard.certify(c, n_max=100, tau="1/100", numeric=False)
    b = softhard.certify(c, n_max=100, tau=Fraction(1, 100), numeric=False)
    d = softhard.certify(c, n_max=100, inv_tau=100, numeric=False)
    assert a["status"] == b["status"] == d["status"] and _claims(a) == _claims(b) == _claims(d)
    assert a["construction"] == b["construction"] == d["construction"]
    cs = softhard.build(spec, softhard.Params(regime="T", eta="1/4", schedule="log"))
    got = softhard.certify(cs, n_max=1000, inv_tau="17/8", numeric=False)
    want = softhard.certify(cs, n_max=1000, tau=Fraction(8, 17), numeric=False)
    assert got["status"] == want["status"] == "proved"
    assert _claims(got) == _claims(want) and Fraction(got["construction"]["inv_tau"]) == Fraction(17, 8)
    with pytest.raises(ParameterError, match=r"certify\(\.\.\., inv_tau=S\)"):
        softhard.Params(regime="T", schedule="log:17/8")
    for bad in (dict(tau="a hundredth"), dict(inv_tau="0"), dict(tau="1/100", inv_tau="100")):
        with pytest.raises(ParameterError):
            softhard.certify(c, n_max=100, numeric=False, **bad)
    with pytest.raises(ParameterError, match="give exactly one of tau"):
        softhard.certify(c, n_max=100, numeric=False)


def test_confirm_is_bounded_before_any_run():
    """New-user trial: ``softhard.confirm`` had no budget (the command line's --max-positions).  The
    estimate is the plan's: one adversarial length 10^12 alone is 10^12 + 1 positions per word."""
    c = softhard.build(softhard.load_formula("Y a", alphabet="ab"), softhard.Params(regime="T", eta="1/4"))
    with pytest.raises(ParameterError, match="max-positions"):
        softhard.confirm(c, n_max=10**20, inv_tau=1e6, adversarial_ns=(10**12,))
    with pytest.raises(ParameterError, match="max-positions"):
        softhard.confirm(c, n_max=10**6, inv_tau=1e6, adversarial_ns=(10**5,), max_positions=10**5)
    with pytest.raises(ParameterError, match="confirm: unknown keyword argument bogus; it accepts adversarial_ns"):
        softhard.confirm(c, n_max=10, inv_tau=1e6, bogus=1)
    small = softhard.confirm(c, n_max=8, inv_tau=1e6, random_count=0, adversarial_ns=(8,), max_positions=10**4)
    # exhaustive words of length 1..8 over {a, b}: 2 + 4 + ... + 256 = 510, plus adversarial ones of length 8
    assert small.ok and small.words["exhaustive"] == 510
