"""Parameter search: the largest temperature τ that a proof certifies (THEORY §2, §8).

Z3's ``Optimize`` is slow and unreliable on these encodings (SOLVER-NOTES.md), so the search is:

1. the tight numeric requirement ``x* = 1/τ`` at which the bound equals η at the binding length
   (mpmath bisection, :func:`softhard.bounds.derive.required_inv_tau`);
2. a candidate just above it, ``x = ⌈x*·(1 + margin)⌉`` rounded up to ``digits`` significant
   decimal digits (an exact rational), proved with :func:`softhard.solver.check.check_claim`;
3. if the proof is refuted at some n (a bound that is not monotone in n), ``x*`` is raised to the
   requirement at that n; if it is merely unknown, the margin grows tenfold; after ``tries``
   rounds the search reports failure.

The certified ``1/τ`` is therefore within a factor ``1 + margin`` (default 1e-9, plus rounding to
12 digits) of the tight requirement of the bound itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal, localcontext
from fractions import Fraction
from typing import Callable

import mpmath
import sympy as sp

from ..bounds.derive import required_inv_tau
from ..constructions.adversarial import key_pattern_leak
from .check import Claim, ClaimResult, check_claim


def round_up(x: mpmath.mpf, digits: int = 12) -> Fraction:
    """Smallest decimal with ``digits`` significant digits that is ≥ x, as an exact Fraction."""
    with localcontext() as ctx:
        ctx.prec = digits
        ctx.rounding = ROUND_CEILING
        d = +Decimal(mpmath.nstr(x, digits + 10, strip_zeros=False))
    return Fraction(d)


@dataclass
class SearchResult:
    """``inv_tau``: certified exact 1/τ (None if the search failed); ``tight``: the numeric x*;
    ``result``: the proof at ``inv_tau``; ``rounds``: attempts."""

    inv_tau: Fraction | None
    tight: mpmath.mpf
    result: ClaimResult | None
    rounds: int
    message: str = ""


#: most rounds of one τ search (:func:`find_inv_tau`; the schedule search takes fewer)
SEARCH_TRIES = 6


def find_inv_tau(make_claim: Callable[[Fraction], Claim], leak_at: Callable[[int | None], sp.Expr], *,
                 n_bind: int | None, tolerance: Fraction, beta: Fraction, digits: int = 12, margin: float = 1e-9,
                 tries: int = SEARCH_TRIES, timeout_s: float = 20.0,
                 check: Callable[..., ClaimResult] = check_claim) -> SearchResult:
    """Smallest certifiable ``1/τ`` for one claim.

    ``make_claim(inv_tau)`` builds the claim at a given exact ``1/τ``; ``leak_at(n)`` returns the
    bound expression (in n, τ, β, η) to use for the numeric requirement at length ``n`` (``None``:
    the n-independent bound).  ``n_bind``: the length where the requirement is computed first.
    ``check``: the prover (:func:`check_claim`, or a :class:`~softhard.solver.check.ProofCache`'s
    ``check`` so that the certificate records the very proof found here).
    """
    need = required_inv_tau(leak_at(n_bind), n_value=n_bind if n_bind is not None else 1,
                            eta_value=tolerance, beta_value=beta)
    m = margin
    res = None
    for k in range(1, tries + 1):
        x = round_up(need * (1 + mpmath.mpf(m)), digits)
        if x <= 0:
            x = Fraction(1, 10**digits)
        res = check(make_claim(x), timeout_s=timeout_s, minimise=False)
        if res.status == "proved":
            return SearchResult(inv_tau=x, tight=need, result=res, rounds=k)
        if res.status == "refuted" and res.counterexample is not None:
            need2 = required_inv_tau(leak_at(res.counterexample), n_value=res.counterexample, eta_value=tolerance,
                                     beta_value=beta)
            if need2 > need:
                need = need2
                continue
        m *= 10
    return SearchResult(inv_tau=None, tight=need, result=res, rounds=tries,
                        message=f"no proof within {tries} rounds (last: {res.status if res else 'none'}"
                                f"{': ' + res.reason if res and res.reason else ''})")


def empirical_inv_tau(model, node: str, key_label: str, n: int, eta: Fraction, *, start: float,
                      rel_tol: float = 1e-9, max_runs: int = 60,
                      patterns: tuple[str, ...] = ("ones", "zeros"), spacing: int = 1,
                      direction: str = "past", quantity: str = "leak", first: int = 1,
                      value_label: str | None = None, value_spacing: int = 0) -> tuple[float, int]:
    """Smallest ``1/τ`` at which the actual head ``node`` of ``model``, run on its attaining key
    patterns at length ``n`` (:func:`softhard.constructions.adversarial.key_pattern_leak`), leaks
    at most η (numeric, not a proof).

    The leak decreases in ``1/τ`` and its logarithm is close to linear in ``1/τ`` (a geometric
    sum), so a bracketed Illinois (modified regula falsi) iteration on ``log leak − log η``
    converges in a handful of runs; ``rel_tol`` is the final bracket width relative to 1/τ.
    ``start``: initial guess (e.g. the tight numeric requirement); ``patterns``: the key patterns
    the head can see (``("ones",)`` for a key ≡ 1); ``spacing``/``direction``: as in
    :func:`~softhard.constructions.adversarial.key_pattern_leak`; ``quantity``: ``"leak"`` or
    ``"output"`` (the head's output error, for output-error bounds, THEORY §4b); ``value_label``,
    ``value_spacing``: for the ``split`` pattern (THEORY §4c).  Returns ``(1/τ, runs)``.
    """
    le = math.log(float(eta))
    runs = 1
    # the binding pattern at the starting point (b ≡ 1 for case A, b ≡ 0 for case B)
    kw = {"spacing": spacing, "direction": direction, "quantity": quantity, "first": first,
          "value_label": value_label, "value_spacing": value_spacing}
    pattern = (key_pattern_leak(model, node, key_label, n, start, patterns=patterns, **kw).pattern,)

    def g(x):
        nonlocal runs
        runs += 1
        v = key_pattern_leak(model, node, key_label, n, x, patterns=pattern, **kw).leak
        return (math.log(v) if v > 0 else -1e300) - le  # > 0: leaks too much

    lo, hi = start * (1 - 1e-3), start * (1 + 1e-3)
    glo, ghi = g(lo), g(hi)
    while ghi > 0 and runs < max_runs:
        lo, glo = hi, ghi
        hi *= 2
        ghi = g(hi)
    while glo <= 0 and lo > 1e-12 and runs < max_runs:
        hi, ghi = lo, glo
        lo /= 2
        glo = g(lo)
    side = 0
    while hi - lo > rel_tol * hi and runs < max_runs:
        x = (lo * ghi - hi * glo) / (ghi - glo) if ghi != glo else (lo + hi) / 2
        if not (lo < x < hi):
            x = (lo + hi) / 2
        gx = g(x)
        if -1e-12 <= gx <= 0:  # at the root to within float resolution of the leak
            return x, runs
        if gx > 0:
            lo, glo = x, gx
            if side == -1:
                ghi /= 2
            side = -1
        else:
            hi, ghi = x, gx
            if side == 1:
                glo /= 2
            side = 1
    return hi, runs


#: the schedule search's grid: S is a multiple of 1/SCHEDULE_GRID (keeps the log schedule's
#: algebraic degree small: (n+1)^{-S·γ} = R^k with R^Q = n + 1, Q | 2·SCHEDULE_GRID; THEORY §9)
SCHEDULE_GRID = 8
#: lengths at which the schedule search evaluates the numeric requirement S(n) (a log grid to 10^12)
SCHEDULE_NS = tuple(sorted({2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 25, 32} | {int(round(10 ** (k / 4))) for k in range(4, 49)}))


def schedule_requirement(leak_s: sp.Expr, lo: int, *, tolerance: Fraction, beta: Fraction) -> tuple[mpmath.mpf, int, bool]:
    """Numeric supremum over n ≥ ``lo`` (on :data:`SCHEDULE_NS`, up to 10^12) of the smallest S with
    ``leak_s(n, τ = 1/S) ≤ tolerance``; ``leak_s`` is a bound with τ already scaled by the schedule
    (``τ → τ/g(n)``).  Returns ``(S*, n where it is largest, growing)`` — ``growing``: the largest
    value is at the grid's last length and still increasing there (the node does not survive the
    schedule, or needs S beyond the grid).  Numeric, not a proof (THEORY §9)."""
    best, at, prev, growing = mpmath.mpf(0), lo, None, False
    for k in (x for x in SCHEDULE_NS if x >= lo):
        v = required_inv_tau(leak_s, n_value=k, eta_value=tolerance, beta_value=beta)
        if v >= best:
            best, at = v, k
        growing = prev is not None and v > prev * (1 + mpmath.mpf(10) ** -6)
        prev = v
    return best, at, growing and at == SCHEDULE_NS[-1]


def find_schedule_constant(make_claim: Callable[[Fraction], Claim], leak_s: sp.Expr, lo: int, *,
                           tolerance: Fraction, beta: Fraction, timeout_s: float = 20.0, tries: int = 4,
                           check: Callable[..., ClaimResult] = check_claim) -> SearchResult:
    """Smallest S on the grid 1/:data:`SCHEDULE_GRID` above the numeric supremum
    (:func:`schedule_requirement`) whose all-n claim ``make_claim(S)`` Z3 proves; a refutation at n
    raises the requirement to S(n), an unknown moves one grid step up; after ``tries`` rounds, or
    when the requirement grows without bound on the grid, the search fails with the reason."""
    need, at, growing = schedule_requirement(leak_s, lo, tolerance=tolerance, beta=beta)
    if growing:
        return SearchResult(inv_tau=None, tight=need, result=None, rounds=0,
                            message=f"does not survive the schedule: the required S grows with n "
                                    f"(S(n) = {mpmath.nstr(need, 6)} at n = {at} and still increasing)")
    x = Fraction(math.floor(need * SCHEDULE_GRID) + 1, SCHEDULE_GRID)
    res = None
    for k in range(1, tries + 1):
        res = check(make_claim(x), timeout_s=timeout_s, minimise=False)
        if res.status == "proved":
            return SearchResult(inv_tau=x, tight=need, result=res, rounds=k)
        if res.status == "refuted" and res.counterexample is not None:
            need2 = required_inv_tau(leak_s, n_value=res.counterexample, eta_value=tolerance, beta_value=beta)
            if need2 >= mpmath.mpf(x.numerator) / x.denominator:  # mpf does not compare with Fraction
                x = Fraction(math.floor(need2 * SCHEDULE_GRID) + 1, SCHEDULE_GRID)
                continue
        x += Fraction(1, SCHEDULE_GRID)
    return SearchResult(inv_tau=None, tight=need, result=res, rounds=tries,
                        message=f"no proof for all n within {tries} rounds (last: {res.status if res else 'none'}"
                                f"{': ' + res.reason if res and res.reason else ''})")
