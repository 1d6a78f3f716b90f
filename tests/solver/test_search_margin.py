"""The search's float64 margin (solver/certificate.py ``float64_margin``): a raise of 1/τ that keeps
a float64 run at the certified τ within η, never an overshoot by orders of magnitude (a new-user
trial: tomita4 at n_max = 10^15 certified 1/τ = 9.3·10^20, 168 000× the tight 5.5·10^15)."""

from __future__ import annotations

import json
import math
from fractions import Fraction

from softhard.solver.certificate import SMALL_MARGIN, _covering_raise
from softhard.solver.cli import main


def test_covering_raise_solves_the_float64_condition():
    """leak(v) = e^{-v}, allowance(v) = e^{v/100} − 1, x = ln 4 (the exact requirement at η = 1/4):
    the smallest raise t with e^{-x(1+t)}·(1 + 10·(e^{x(1+t)/100} − 1)) ≤ 1/4 is found by bisection
    of the same condition here in closed form; an allowance that outgrows the leak has no raise."""
    x, eta = math.log(4), 0.25
    t = _covering_raise(lambda v: math.exp(-v), lambda v: math.expm1(v / 100), x, eta)

    def g(s):  # log of the covered quantity minus log eta
        v = x * (1 + s)
        return -v + math.log1p(10 * math.expm1(v / 100)) - math.log(eta)

    lo, hi = 0.0, 10.0  # g(0) > 0 > g(10): independent bisection
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if g(mid) > 0 else (lo, mid)
    assert t is not None and abs(t - hi) <= 1e-9 and g(t) <= 0
    # an allowance growing as e^{2v} outruns the leak e^{-v}: no raise covers
    assert _covering_raise(lambda v: math.exp(-v), lambda v: math.expm1(2 * v) if v < 350 else math.inf, x, eta) is None


def _search_row(capsys, n_max: str) -> tuple[float, float, str]:
    assert main(["certify", "examples/tomita4.ltl", "--regime", "T", "--n-max", n_max, "--find-tau",
                 "--no-numeric", "--json"]) == 0
    cert = json.loads(capsys.readouterr().out)
    row = cert["search"]["per_bound"][0]
    return (float(Fraction(row["inv_tau_certified"])), row["inv_tau_tight_numeric"],
            cert["precision"]["float64_premise"]["status"])


def test_find_tau_at_huge_lengths_stays_near_the_tight_requirement(capsys, monkeypatch):
    """Regime T at n = 10^15: the scores' float64 rounding (≈ 2·1.75·4u per unit of 1/τ) exceeds the
    gap β/n = 2.5·10^-16, so no τ makes a float64 run reliable: the certified 1/τ is the exact
    requirement (within the 1e-9 margin and 12 digits) and the premise fails.  At 10^6 the margin is
    10× the allowance (< SMALL_MARGIN), the README's 5545177.984; at 10^13 a raise that covers."""
    monkeypatch.chdir(__import__("pathlib").Path(__file__).resolve().parents[2])
    cert15, tight15, premise15 = _search_row(capsys, "1e15")
    assert 1 <= cert15 / tight15 <= 1 + 2e-9 and premise15 == "fails"
    cert6, tight6, premise6 = _search_row(capsys, "1e6")
    assert cert6 == 5545177.984 and 1 < cert6 / tight6 < 1 + SMALL_MARGIN and premise6 == "holds"
    cert13, tight13, premise13 = _search_row(capsys, "1e13")
    assert 1 + SMALL_MARGIN < cert13 / tight13 < 2 and premise13 == "holds"
