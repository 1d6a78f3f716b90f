"""The summary's bound values at n_max (solver/cli/handlers/summary_values.bounds_at_n_max) parse the
claims without SymPy's evaluation (ISSUE 16); the values equal those of the evaluated expressions."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import mpmath
import sympy as sp

import softhard
from softhard.bounds.derive import evaluate
from softhard.solver.certificate import certify
from softhard.solver.cli.handlers.summary_values import bounds_at_n_max

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tomita4.ltl"


def test_bound_values_equal_live_evaluation():
    c = softhard.build(softhard.load_formula(EXAMPLE), softhard.Params(regime="T", eta="1/4"))
    cert = certify(c, n_max=1000, tau=Fraction(1, 6000), numeric=False)
    got = bounds_at_n_max(cert)
    assert set(got) == {cl["id"] for cl in cert["claims"]} and got
    for cl in cert["claims"]:
        k = 1000 if cl["n_hi"] is None else min(1000, cl["n_hi"])
        want = mpmath.nstr(evaluate(sp.sympify(cl["expr_srepr"]), n_value=max(k, cl["n_lo"]), inv_tau=1), 8)
        # 8 digits, or 3 when that is longer than a table cell's 14 characters (7.95e-1204121)
        assert got[cl["id"]] == (want if len(want) <= 14 else mpmath.nstr(mpmath.mpf(want), 3))
        assert len(got[cl["id"]]) <= 14
        assert 0 < mpmath.mpf(got[cl["id"]]) <= 0.25  # proved at this τ: below η (average-hard: ~1e-1303)
