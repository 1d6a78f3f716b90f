"""Selection bounds (THEORY §2, §4): valid for every input, attained, closed forms meet η, orders.

The worst case is computed independently here: exact scores from the definitions of the
constructions (not from the engine), leak summed in 60-digit mpmath over every key pattern.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import mpmath
import pytest
import sympy as sp

from softhard.bounds import selection as S
from softhard.bounds.core import asymptotic_order
from softhard.bounds.derive import evaluate, latex, required_inv_tau
from softhard.constructions.errors import ParameterError, RepresentationError



@pytest.fixture(autouse=True)
def _digits():
    """60 digits in this module's tests only (a module-level ``mp.dps`` would set it for every module
    collected after this one)."""
    with mpmath.workdps(60):
        yield
TOL = mpmath.mpf(10) ** -40


def _leak(scores: dict[int, mpmath.mpf], t: mpmath.mpf) -> mpmath.mpf:
    s = max(scores.values())
    A = [j for j in scores if scores[j] == s]
    S_ = sum(mpmath.e ** ((scores[j] - s) / t) for j in scores if j not in A)
    return S_ / (len(A) + S_)


def _spaced(bits, d: int) -> bool:
    """No two 1s closer than d."""
    ones = [j for j, v in enumerate(bits) if v]
    return all(y - x >= d for x, y in zip(ones, ones[1:]))


def worst_T(N: int, t, b, key_const=False, future=False, spacing=1):
    """max over queries i and key patterns (with 1s at least ``spacing`` apart) of the leak of the
    regime-T selection at length N."""
    worst = mpmath.mpf(0)
    patterns = [(1,) * N] if key_const else [p for p in itertools.product([0, 1], repeat=N) if _spaced(p, spacing)]
    for bits in patterns:
        for i in range(1, N + 1):
            js = range(i + 1, N + 1) if future else range(1, i)
            sc = {0: mpmath.mpf(1) / 2}
            for j in js:
                p = mpmath.mpf(N + 1 - j) / N if future else mpmath.mpf(j) / N
                sc[j] = bits[j - 1] + b * p
            worst = max(worst, _leak(sc, t))
    return worst


def worst_U(N: int, t, future=False):
    worst = mpmath.mpf(0)
    for bits in itertools.product([0, 1], repeat=N):
        for i in range(1, N + 1):
            ip = (N + 1 - i) if future else i
            sc = {0: mpmath.mpf(ip)}
            for j in (range(i + 1, N + 1) if future else range(1, i)):
                jp = (N + 1 - j) if future else j
                sc[j] = jp + ip * bits[j - 1]
            worst = max(worst, _leak(sc, t))
    return worst


@pytest.mark.parametrize("N", [2, 3, 5, 8])
@pytest.mark.parametrize("inv_tau", [3, 12, 60])
@pytest.mark.parametrize("future", [False, True])
def test_regime_T_bound_is_valid_and_tight(N, inv_tau, future):
    t, b = mpmath.mpf(1) / inv_tau, mpmath.mpf(1) / 4
    w = worst_T(N, t, b, future=future)
    bd = evaluate(S.leak_T(), n_value=N, inv_tau=inv_tau)
    assert w <= bd * (1 + TOL)
    assert w / bd > mpmath.mpf("0.97")  # attained up to the BOS term (exactly as n or 1/τ grow)
    wc = worst_T(N, t, b, key_const=True, future=future)
    bc = evaluate(S.leak_T(key_const=True), n_value=N, inv_tau=inv_tau)
    assert abs(wc / bc - 1) < TOL  # key ≡ 1 (Y, X): exactly attained by every word


@pytest.mark.parametrize("N", [2, 3, 6, 8, 9])
@pytest.mark.parametrize("inv_tau", [3, 12, 60])
@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("future", [False, True])
def test_regime_T_spaced_key_bound_is_valid_and_attained(N, inv_tau, d, future):
    """A key never 1 at two positions closer than d (e.g. "aba ends here", d = 2): the bound with
    r^d is valid over every such key pattern, attained as 1/τ grows, and below the general one."""
    t, b = mpmath.mpf(1) / inv_tau, mpmath.mpf(1) / 4
    w = worst_T(N, t, b, future=future, spacing=d)
    bd = evaluate(S.leak_T(spacing=d), n_value=N, inv_tau=inv_tau)
    assert w <= bd * (1 + TOL)
    assert bd <= evaluate(S.leak_T(), n_value=N, inv_tau=inv_tau) * (1 + TOL) or N <= d
    if inv_tau >= 12 and N > d + 1 and (N - 2) % d == 0:
        # attained when d divides the n − 2 slots (otherwise the closed form counts one slot
        # group too many, a term r^{n−1} or smaller), up to the b = 0 and BOS terms
        assert w / bd > mpmath.mpf("0.95")


@pytest.mark.parametrize("N", [10, 1000, 10**6])
@pytest.mark.parametrize("d", [2, 3])
def test_spaced_closed_form_meets_eta_and_halves_inv_tau(N, d):
    xT = evaluate(S.inv_tau_star_T(d), n_value=N, inv_tau=1)
    assert evaluate(S.leak_T(spacing=d), n_value=N, inv_tau=xT) <= mpmath.mpf(1) / 4
    tight = required_inv_tau(S.leak_T(spacing=d), n_value=N)
    assert tight <= xT
    general = required_inv_tau(S.leak_T(), n_value=N)
    if N >= 1000:  # the b = 1 sum dominates: 1/τ shrinks by the factor d
        assert abs(general / tight - d) < 1e-3 * d


@pytest.mark.parametrize("N", [1, 2, 4, 7])
@pytest.mark.parametrize("inv_tau", [1, 2, 10])
@pytest.mark.parametrize("future", [False, True])
def test_regime_U_bound_is_exact(N, inv_tau, future):
    t = mpmath.mpf(1) / inv_tau
    w = worst_U(N, t, future=future)
    bd = evaluate(S.leak_U(), n_value=N, inv_tau=inv_tau)
    assert abs(w - bd) <= bd * TOL
    assert bd < mpmath.e ** (-mpmath.mpf(inv_tau))  # δ_U(n) < q for every n


def test_gap_lemma_is_attained_and_looser():
    """One maximal position and m−1 competitors at gap γ attain the generic bound exactly; on a
    selection it is looser than the tight sum (by the factor log n in 1/τ)."""
    for m, g, x in [(5, Fraction(1, 3), 7), (40, Fraction(1, 40), 900)]:
        t = mpmath.mpf(1) / x
        sc = {0: mpmath.mpf(1)} | {j: 1 - mpmath.mpf(g.numerator) / g.denominator for j in range(1, m)}
        exact = _leak(sc, t)
        bd = evaluate(S.gap_lemma(sp.Integer(m), sp.Rational(g.numerator, g.denominator)), n_value=m, inv_tau=x)
        assert abs(exact - bd) <= TOL * bd
    for N in (10, 1000, 10**5):
        tight = required_inv_tau(S.leak_T(), n_value=N)
        generic = required_inv_tau(S.generic_T(), n_value=N)
        assert generic > tight
        # generic ≈ (n/β)·ln((n−1)(1−η)/η), tight ≈ (n/β)·ln(1/η)
        assert abs(generic / tight - mpmath.log(3 * (N - 1)) / mpmath.log(4)) < 0.05 * generic / tight


@pytest.mark.parametrize("N", [2, 3, 10, 1000, 10**6])
@pytest.mark.parametrize("eta_v", [Fraction(1, 4), Fraction(1, 10), Fraction(1, 1000)])
def test_closed_forms_meet_eta(N, eta_v):
    xT = evaluate(S.inv_tau_star_T(), n_value=N, inv_tau=1, eta_value=eta_v)
    assert evaluate(S.leak_T(), n_value=N, inv_tau=xT, eta_value=eta_v) <= mpmath.mpf(eta_v.numerator) / eta_v.denominator
    tight = required_inv_tau(S.leak_T(), n_value=N, eta_value=eta_v)
    assert tight <= xT <= tight * mpmath.mpf("1.02") or N < 10  # near-tight for n ≥ 10
    xU = evaluate(S.inv_tau_star_U(), n_value=N, inv_tau=1, eta_value=eta_v)
    assert abs(xU - mpmath.log(mpmath.mpf(eta_v.denominator) / eta_v.numerator)) < TOL
    # δ_U(n) = η·(1 − Θ(η^n)) < η: strict, but below the 50 working digits once n is large
    e = mpmath.mpf(eta_v.numerator) / eta_v.denominator
    assert evaluate(S.leak_U(), n_value=N, inv_tau=xU, eta_value=eta_v) <= e * (1 + TOL)


def test_asymptotic_orders():
    subs = {S.beta: sp.Rational(1, 4), S.eta: sp.Rational(1, 4)}
    order, const = asymptotic_order(S.inv_tau_star_T().subs(subs))
    assert order == "Θ(n)"
    assert abs(float(const) - 4 * float(sp.log(1 + sp.Rational(3, 1) / (1 - S.THETA)))) < 1e-12
    assert asymptotic_order(S.inv_tau_star_U().subs(subs))[0] == "Θ(1)"
    assert asymptotic_order(S.inv_tau_star_generic(S.n, S.beta / S.n).subs(subs))[0] == "Θ(n log n)"
    assert asymptotic_order(S.inv_tau_star_generic(S.n, sp.Integer(1)).subs(subs))[0] == "Θ(log n)"


def test_exponents_are_nonpositive():
    """The solver encloses each exp in [0, 1]: every exponent must be ≤ 0 on the valid range."""
    for expr, n_min in [(S.leak_T(), 2), (S.leak_T(True), 2), (S.leak_T(spacing=2), 2), (S.leak_U(), 1)]:
        for e in expr.atoms(sp.exp):
            f = sp.lambdify([S.n, S.tau, S.beta], e.args[0], "mpmath")
            for N in (n_min, n_min + 1, 17, 10**6):
                for x in (0.5, 3, 1e6):
                    for b in (0.01, 0.25):
                        assert f(N, 1 / mpmath.mpf(x), b) <= 0


def test_latex_output():
    s = latex(S.leak_T())
    assert "\\tau" in s and "\\beta" in s and "e^{" in s


def test_evaluate_where_the_bound_cancels_at_50_digits():
    """Issue 15 C4: terms such as 1 - exp(-beta/(n tau)) vanished at 50 digits for n = 10^60,
    1/tau = 10^-300 or beta = 10^-300 (ZeroDivisionError in evaluate).  Independent values:
    key ≡ 1 at n = 10^60, 1/tau = 1000: the leak is S/(1 + S) with S ≈ 1/x - 1/2, x = beta/(n tau),
    so 1 - leak = x to relative O(x); the brute-force worst cases (no cancellation in them)."""
    v = evaluate(S.leak_T(key_const=True), n_value=10**60, inv_tau=1000)
    x = mpmath.mpf(1) / (4 * 10**57)
    assert abs((1 - v) / x - 1) < 1e-9
    t = mpmath.mpf(10) ** 300  # tau = 1e300: every weight is 1 to 300 digits
    bd = evaluate(S.leak_U(), n_value=4, inv_tau=Fraction(1, 10**300))
    w = worst_U(4, t)
    assert abs(w - bd) <= bd * TOL and abs(bd - mpmath.mpf(3) / 4) < 1e-45  # 3 of the 4 weights miss
    bd = evaluate(S.leak_T(), n_value=5, inv_tau=3, beta_value=Fraction(1, 10**300))
    with mpmath.workdps(400):  # the brute force must resolve the key spacing beta/n = 2e-301
        w = worst_T(5, mpmath.mpf(1) / 3, mpmath.mpf(10) ** -300)
    assert abs(w / bd - 1) < TOL  # attained (the b ≡ 1 words, n = 5)


def test_required_inv_tau_beyond_float64_is_a_parameter_error():
    """Issue 15 C4: ``bound "G (a & b)" --beta 1e-300 --n-max 10^12`` needs 1/tau ≈ n ln(1/eta)/beta
    = 1.4e312, beyond the float64 that numeric runs hold it in: a RepresentationError (a
    ParameterError) naming n and the limit, not a ValueError; at beta = 10^-200 the value itself
    (r = exp(-beta/(n tau)) = eta for large n)."""
    x = required_inv_tau(S.leak_T(), n_value=10**12, beta_value=Fraction(1, 10**200))
    assert abs(x / (10**212 * mpmath.log(4)) - 1) < 1e-9
    with pytest.raises(RepresentationError, match=r"^at n = 1e\+12 the bound needs 1/tau > 1e300"):
        required_inv_tau(S.leak_T(), n_value=10**12, beta_value=Fraction(1, 10**300))
    assert issubclass(RepresentationError, ParameterError)
