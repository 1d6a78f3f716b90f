"""solver/check.py ProofCache: a claim proved by a τ search (``minimise=False``) is not proved again
for the certificate's claims (``minimise=True``), and its result is the one a fresh check gives; a
refuted claim is checked again, and minimised to the smallest violating n (found here by exact
brute force)."""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from softhard.solver.check import Claim, ProofCache, check_claim
from softhard.solver.oracle import ORACLE_LOG

n = sp.Symbol("n", positive=True)


def _z3_rows(fn):
    """``fn()`` and the Z3 queries it asked (the oracle log's rows)."""
    log: list = []
    token = ORACLE_LOG.set(log)
    try:
        out = fn()
    finally:
        ORACLE_LOG.reset(token)
    return out, [r for r in log if "z3" in r]


def _summary(res):
    return (res.status, res.counterexample, [(q.smtlib, q.answer, q.model_n) for q in res.queries],
            res.second_check.status)


def test_a_searched_proof_is_the_certificates_proof():
    claim = Claim(expr=n * sp.exp(-n), eta=Fraction(1, 2), n_lo=1, n_hi=20)
    cache = ProofCache()
    searched, asked = _z3_rows(lambda: cache.check(claim, timeout_s=20.0, minimise=False))
    assert searched.status == "proved" and asked
    again, asked_again = _z3_rows(lambda: cache.check(claim, timeout_s=20.0))  # minimise=True: the default
    assert asked_again == []
    fresh = check_claim(claim, timeout_s=20.0, minimise=True)
    assert _summary(again) == _summary(fresh)


def test_a_refuted_claim_is_checked_again_and_minimised():
    expr = n / (n + 10)
    eta = Fraction(1, 2)
    claim = Claim(expr=expr, eta=eta, n_lo=1, n_hi=40)
    smallest = next(k for k in range(1, 41) if Fraction(k, k + 10) > eta)  # exact: 11
    cache = ProofCache()
    first = cache.check(claim, timeout_s=20.0, minimise=False)
    assert first.status == "refuted"
    minimised, asked = _z3_rows(lambda: cache.check(claim, timeout_s=20.0, minimise=True))
    assert asked  # not taken from the unminimised result
    assert minimised.status == "refuted" and minimised.counterexample == smallest
