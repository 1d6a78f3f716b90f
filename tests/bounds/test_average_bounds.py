"""Average-hard selections (THEORY §4b): the output-error bound is the exact worst case (checked
against an independent exact softmax over every key pattern), it is below the unique-hard leak
bound everywhere, and its closed forms are sufficient / exact."""

from __future__ import annotations

import itertools

import mpmath
import pytest

from softhard.bounds import selection as S
from softhard.bounds.derive import evaluate



@pytest.fixture(autouse=True)
def _digits():
    """40 digits in this module's tests only (a module-level ``mp.dps`` would set it for every module
    collected after this one)."""
    with mpmath.workdps(40):
        yield


def worst_output_error(n: int, inv_tau) -> mpmath.mpf:
    """Max over every key pattern b ∈ {0,1}^n and every query i of |soft − AHA| of the head with
    score b(j) (j < i), BOS 1/2 and value b (0 at BOS): exact softmax in mpmath, written out here."""
    t = mpmath.mpf(inv_tau)
    worst = mpmath.mpf(0)
    for b in itertools.product((0, 1), repeat=n):
        for i in range(1, n + 1):
            keys = b[: i - 1]  # strict past: positions 1..i-1
            w_bos = mpmath.exp(t / 2)
            ws = [mpmath.exp(t * k) for k in keys]
            soft = sum(w * k for w, k in zip(ws, keys)) / (w_bos + sum(ws))
            hard = 1 if any(keys) else 0  # AHA: mean of the values over the argmax set
            worst = max(worst, abs(soft - hard))
    return worst


@pytest.mark.parametrize("n", [2, 3, 5, 8])
@pytest.mark.parametrize("inv_tau", [mpmath.mpf(1) / 3, 2, 7])
def test_output_bound_is_the_exact_worst_case(n, inv_tau):
    got = evaluate(S.output_T_average(), n_value=n, inv_tau=inv_tau)
    assert mpmath.almosteq(got, worst_output_error(n, inv_tau), rel_eps=mpmath.mpf(10) ** -30)


@pytest.mark.parametrize("n", [2, 3, 17, 1000, 10**6, 10**12])
@pytest.mark.parametrize("inv_tau", [1, 10, 1000, 10**6])
@pytest.mark.parametrize("beta", ["1/4", "1/16"])
def test_average_bound_never_exceeds_the_unique_leak_bound(n, inv_tau, beta):
    from fractions import Fraction
    avg = evaluate(S.output_T_average(), n_value=n, inv_tau=inv_tau)
    for d in (1, 2):
        uni = evaluate(S.leak_T(spacing=d), n_value=n, inv_tau=inv_tau, beta_value=Fraction(beta))
        assert avg <= uni


@pytest.mark.parametrize("n", [2, 3, 100, 10**6])
@pytest.mark.parametrize("eta", ["1/4", "1/100"])
def test_closed_forms(n, eta):
    from fractions import Fraction
    e = Fraction(eta)
    x_exact = evaluate(S.inv_tau_exact_T_average(), n_value=n, inv_tau=1, eta_value=e)
    at_exact = evaluate(S.output_T_average(), n_value=n, inv_tau=x_exact, eta_value=e)
    assert mpmath.almosteq(at_exact, mpmath.mpf(e.numerator) / e.denominator, rel_eps=mpmath.mpf(10) ** -25)
    x_suff = evaluate(S.inv_tau_star_T_average(), n_value=n, inv_tau=1, eta_value=e)
    assert x_suff >= x_exact
    assert evaluate(S.output_T_average(), n_value=n, inv_tau=x_suff, eta_value=e) <= mpmath.mpf(e.numerator) / e.denominator


def test_theta_log_n():
    # 1/tau needed at n = 10^6, eta = 1/4: -2 ln x*, x* = 2k/(1 + sqrt(1 + 4(n-2)k)), k = 1/3
    k = mpmath.mpf(1) / 3
    x = 2 * k / (1 + mpmath.sqrt(1 + 4 * (10**6 - 2) * k))
    got = evaluate(S.inv_tau_exact_T_average(), n_value=10**6, inv_tau=1)
    assert mpmath.almosteq(got, -2 * mpmath.log(x), rel_eps=mpmath.mpf(10) ** -30)
    assert 14.9 < got < 15.0
    assert S.asymptotic_order(S.inv_tau_star_T_average())[0] == "Θ(log n)"


def worst_output_error_U(n: int, inv_tau, first: int) -> mpmath.mpf:
    """Max over key patterns with b = 0 before position ``first`` and every query i of |soft − UHA|
    of the regime-U head: score j + i·b(j), BOS i, value b (0 at BOS); exact softmax written out."""
    t = mpmath.mpf(inv_tau)
    worst = mpmath.mpf(0)
    for b in itertools.product((0, 1), repeat=n):
        if any(b[: first - 1]):
            continue
        for i in range(1, n + 1):
            keys = b[: i - 1]
            scores = [i] + [j + i * k for j, k in enumerate(keys, start=1)]
            vals = [0] + list(keys)
            m = max(scores)
            ws = [mpmath.exp(t * (s - m)) for s in scores]
            soft = sum(w * v for w, v in zip(ws, vals)) / sum(ws)
            hard = 1 if any(keys) else 0  # the rightmost b = 1 has value 1
            worst = max(worst, abs(soft - hard))
    return worst


@pytest.mark.parametrize("n", [2, 4, 7])
@pytest.mark.parametrize("first", [1, 2, 3])
def test_unique_output_bound_in_regime_u_is_the_exact_worst_case(n, first):
    for inv_tau in (mpmath.mpf(1) / 2, 2):
        got = evaluate(S.output_U_unique(first), n_value=n, inv_tau=inv_tau)
        want = worst_output_error_U(n, inv_tau, first)
        if n < first + 1:  # no query sees a b = 1: the worst case is output 0 (the bound: valid from n = first)
            assert want == 0
            assert n < first or got >= 0
            continue
        assert mpmath.almosteq(got, want, rel_eps=mpmath.mpf(10) ** -30)
        sup = evaluate(S.output_U_unique_all_n(first), n_value=n, inv_tau=inv_tau)
        assert got <= sup


def test_key_first():
    from softhard.constructions.parse import parse_formula
    from softhard.constructions.spacing import key_first
    cases = {("a & Y(b & Y a)", "past"): 3, ("a & Y(b & Y a)", "future"): 1, ("Y Y a", "past"): 3,
             ("a & X b", "future"): 2, ("P a", "past"): 2, ("a", "past"): 1}  # P is strict: "P a" first at 2 of "aa"
    for (f, d), want in cases.items():
        assert key_first(parse_formula(f), "ab", d) == want
