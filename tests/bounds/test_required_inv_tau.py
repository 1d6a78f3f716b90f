"""required_inv_tau: the float64 bisection + one 50-digit polish (ISSUE 16) meets the same
contract as the 50-digit bisection it replaced, checked by separate mpmath evaluations."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest
import sympy as sp

from softhard.bounds import derive as D
from softhard.bounds.core import beta, eta, n, tau
from softhard.constructions.errors import RepresentationError
from softhard.constructions.parse import load_spec
from softhard.solver.pipeline import build

#: the regime-T tight geometric leak of a selection with gap β/n, written here independently
R = sp.exp(-beta / (n * tau))
LEAK_T = n * R / (1 + n * R)
#: a leak that float64 cannot evaluate at n = 1000 (e^1000 overflows: inf·0 = nan): the 50-digit
#: fallback must answer (it equals e^{-1/τ}, so 1/τ = ln 4)
OVERFLOW = sp.Mul(sp.exp(n), sp.exp(-n - 1 / tau), evaluate=False)


def mp_value(expr, nv, x, b=Fraction(1, 4), e=Fraction(1, 4)):
    with mpmath.workdps(80):
        f = sp.lambdify([n, tau, beta, eta], expr, modules="mpmath")
        return f(mpmath.mpf(nv), 1 / mpmath.mpf(x), mpmath.mpf(b.numerator) / b.denominator,
                 mpmath.mpf(e.numerator) / e.denominator)


@pytest.mark.parametrize("expr, nv", [(LEAK_T, 2), (LEAK_T, 1000), (LEAK_T, 10**6), (LEAK_T, 10**15),
                                      (OVERFLOW, 1000), (sp.exp(-1 / tau), 1)])
def test_contract_and_agreement_with_the_50_digit_bisection(expr, nv):
    x = D.required_inv_tau(expr, n_value=nv)
    target = mpmath.mpf(1) / 4
    # the contract, by an 80-digit evaluation separate from the code under test
    assert mp_value(expr, nv, x) <= target
    assert mp_value(expr, nv, x * (1 - mpmath.mpf(1e-12))) > target
    ref = D._mp_inv_tau(lambda y: D.evaluate(expr, n_value=nv, inv_tau=y), target, nv, 1e-12)
    assert abs(x - ref) <= 2e-12 * ref


@pytest.mark.parametrize("expr, nv", [(sp.exp(-1 / tau), 1), (OVERFLOW, 1000)])
def test_closed_form_single_exponential(expr, nv):
    # e^{-1/τ} ≤ 1/4  ⇔  1/τ ≥ ln 4
    x = D.required_inv_tau(expr, n_value=nv)
    assert abs(x - mpmath.log(4)) <= 1e-12 * mpmath.log(4)


def test_float_path_declines_what_float64_cannot_evaluate():
    assert D._float_inv_tau(OVERFLOW, 1000, 0.25, 0.25, 1e-12) is None
    assert D._float_inv_tau(LEAK_T, 1000, 0.25, 0.25, 1e-12) is not None


def test_zero_and_overflow_cases_unchanged():
    assert D.required_inv_tau(sp.Rational(1, 8) * sp.exp(-1 / tau), n_value=1) == 0
    with pytest.raises(RepresentationError):
        D.required_inv_tau(LEAK_T, n_value=10**300)


def test_beyond_float_n_gives_the_representation_error_not_an_overflow():
    """Found by benchmarks/fuzz.py (``bound examples/aba.ltl --n-max 10^400 - 1``): the message of
    the 1/τ > 1e300 error formatted n as a float (``{n:.6g}``) and an integer beyond 1.8e308 raised
    OverflowError (exit 3); it is formatted in mpmath now and the error is the one clear line."""
    c = build(load_spec("Y a", alphabet="ab"), "T")
    leak = next(iter(c.bounds.values())).bound.leak
    n_huge = 10**400 - 1
    with pytest.raises(RepresentationError, match=r"at n = 1\.0e\+400 the bound needs 1/tau > 1e300"):
        D.required_inv_tau(leak, n_value=n_huge, eta_value=c.eta, beta_value=c.beta)


def test_beyond_representable_is_decided_by_one_evaluation(monkeypatch):
    """``bound --n-max 10^400`` took 12–28 s to refuse: the 50-digit path doubled 1/τ from 1 up to
    1e300 (~1000 slow evaluations at that n).  The bound decreases in 1/τ, so one evaluation at
    1e300 decides; the refusal now costs at most a handful of evaluations (counted, not timed)."""
    calls = []
    real = D.evaluate
    monkeypatch.setattr(D, "evaluate", lambda *a, **k: calls.append(1) or real(*a, **k))
    with pytest.raises(RepresentationError):
        D.required_inv_tau(LEAK_T, n_value=10**400)
    assert 1 <= len(calls) <= 3
    # a bound that needs 1/τ = 8e299, between the last doubling 2^996 ≈ 6.7e299 and the limit 1e300
    # (refused before), gets it: 2·10^299·τ ≤ 1/4 exactly when 1/τ ≥ 8·10^299
    x = D.required_inv_tau(2 * sp.Integer(10) ** 299 * tau, n_value=1, eta_value=Fraction(1, 4))
    expected = 8 * mpmath.mpf(10) ** 299
    assert expected <= x <= expected * (1 + mpmath.mpf(10) ** -11) and x <= D.MAX_INV_TAU


def test_a_requirement_below_one_is_found_in_float64_even_when_tiny_inv_tau_is_nan(monkeypatch):
    """A log schedule's requirement S is often below 1; the float64 path checked 1/τ = 10^-30 for the
    0 answer, got NaN there (0·inf) and left every such bound to the 50-digit bisection (~47
    evaluations each: 12 s of ``certify examples/aba.ltl --schedule log --regime U``).  It now halves
    down from 1.  e^{-τ}·e^{τ-1/τ}/2 = e^{-1/τ}/2 ≤ 1/4 exactly when 1/τ ≥ ln 2."""
    expr = sp.exp(-tau) * sp.exp(tau - 1 / tau) / 2
    assert D._float_inv_tau(expr, 1, 0.25, 0.25, 1e-12) is not None
    calls = []
    real = D.evaluate
    monkeypatch.setattr(D, "evaluate", lambda *a, **k: calls.append(1) or real(*a, **k))
    x = D.required_inv_tau(expr, n_value=1)
    assert mpmath.log(2) <= x <= mpmath.log(2) * (1 + mpmath.mpf(10) ** -11)
    assert len(calls) == 2  # the polish only


def test_evaluate_is_memoised_without_changing_a_value():
    """``evaluate`` returns the memoised value of the same call (a confirmation repeats about half of
    its calls), equal to an unmemoised evaluation and to a separate 80-digit one; a float and an
    equal Fraction are separate entries (their magnitudes set the working precision)."""
    for x in (Fraction(1, 2), 0.5, Fraction(5545178), 37):
        for nv in (2, 10, 10**6):
            a = D.evaluate(LEAK_T, n_value=nv, inv_tau=x)
            assert D.evaluate(LEAK_T, n_value=nv, inv_tau=x) is a  # served from the memo
            with mpmath.workdps(90):
                plain = D._evaluate.__wrapped__(LEAK_T, nv, None, x, Fraction(1, 4), Fraction(1, 4))
                assert a == plain
                assert abs(a - mp_value(LEAK_T, nv, float(x))) <= abs(a) * mpmath.mpf(10) ** -45  # (x is a float exactly)
    assert D.evaluate(LEAK_T, n_value=10, inv_tau=0.5) is not D.evaluate(LEAK_T, n_value=10, inv_tau=Fraction(1, 2))


#: e^{-1/τ} written as e^{n(2 - 1/τ)} · e^{-n(2 - 1/τ) - 1/τ}: at n = 1000 float64 gives inf·0 = NaN for
#: 1/τ < 2 - 709/1000, below the crossing 1/τ = ln 4 ≈ 1.386 (a composed bound's e^{2σ/τ} terms do the
#: same at small 1/τ: notebooks/05's depth-3 models, NaN up to 1/τ = 16)
NAN_BELOW = sp.Mul(sp.exp(n * (2 - 1 / tau)), sp.exp(-n * (2 - 1 / tau) - 1 / tau), evaluate=False)


def test_nan_below_the_crossing_is_bisected_in_float64(monkeypatch):
    """A bound that float64 evaluates to NaN on part of the range below its crossing: the float64
    bisection counts NaN as above η and finds the crossing; the 50-digit polish (2 evaluations)
    confirms it, and the answer meets the contract by a separate 80-digit evaluation (before, the
    first NaN sent it to the 50-digit bisection: ~50 evaluations)."""
    import numpy as np

    g = D._lambdified_float(NAN_BELOW)
    with np.errstate(all="ignore"):
        assert np.isnan(g(np.float64(1000), 1.0, 0.25, 0.25)) and g(np.float64(1000), 1 / 1.4, 0.25, 0.25) > 0
    calls = []
    real = D.evaluate
    monkeypatch.setattr(D, "evaluate", lambda *a, **k: calls.append(1) or real(*a, **k))
    x = D.required_inv_tau(NAN_BELOW, n_value=1000)
    assert len(calls) == 2  # the polish only
    assert abs(x - mpmath.log(4)) <= 1e-12 * mpmath.log(4)
    assert mp_value(NAN_BELOW, 1000, x) <= mpmath.mpf(1) / 4 < mp_value(NAN_BELOW, 1000, x * (1 - mpmath.mpf(1e-12)))
