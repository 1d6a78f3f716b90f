"""Second, independent check of a claim with ball arithmetic (python-flint ``arb``).

The claim ``∀ integer n ∈ [lo, hi]: f(n) ≤ η`` is checked by evaluating ``f`` on boxes of ``n``
directly (no solver, no enclosure variables), subdividing until every box's upper bound is below
η (proved) or a single integer's lower bound is above η (refuted).  Comparisons are three-valued
(SOLVER-NOTES.md): only a True ``upper < η`` proves, only a True ``lower > η`` refutes.

This guards against an encoding error in :mod:`softhard.solver.encode`: the two methods share no
code beyond SymPy's expression tree.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Callable

import flint
import sympy as sp

from ..constructions.errors import SolverError
from .encode import n


def _arb_rational(p: int, q: int) -> flint.arb:
    return flint.arb(flint.fmpq(p, q))


def arb_eval(expr: sp.Expr, nval: flint.arb) -> flint.arb:
    """Ball enclosure of ``expr`` with ``n`` in the ball ``nval`` (rigorous, current flint precision).

    The expression tree is translated once into nested closures (:func:`_compiled`) that perform
    the same ball operations in the same order as a walk of the tree would, so the enclosures are
    the same balls; only SymPy's per-node type tests are no longer repeated for every box (ISSUE 16).
    Constants are built at evaluation time, at the precision then current.  Raises
    :class:`SolverError` for a float constant or a function it cannot evaluate."""
    return _compiled(expr)(nval)


@lru_cache(maxsize=512)
def _compiled(expr: sp.Expr) -> Callable[[flint.arb], flint.arb]:
    """``arb_eval`` of ``expr`` as a function of the ball of n (see :func:`arb_eval`)."""
    if expr == n:
        return lambda v: v
    if expr.is_Rational:
        p, q = int(expr.p), int(expr.q)
        return lambda v: _arb_rational(p, q)
    if isinstance(expr, sp.Float):
        raise SolverError(f"floating-point constant {expr} in a claim")
    if expr.is_Add or expr.is_Mul:
        fs = [_compiled(a) for a in expr.args]
        if expr.is_Add:
            def add(v):
                acc = flint.arb(0)
                for f in fs:
                    acc = acc + f(v)
                return acc
            return add

        def mul(v):
            acc = flint.arb(1)
            for f in fs:
                acc = acc * f(v)
            return acc
        return mul
    if expr.is_Pow and expr.exp.is_Integer:
        fb, k = _compiled(expr.base), int(expr.exp)
        if k >= 0:
            return lambda v: fb(v) ** k
        return lambda v: 1 / (fb(v) ** (-k))
    if expr.is_Pow and expr.exp.is_Rational and expr.exp.q == 2:  # powers of a square root
        fb, k = _compiled(expr.base), int(expr.exp * 2)
        if k >= 0:  # (sqrt of a ball that may be < 0 is a NaN ball: never < eta)
            return lambda v: fb(v).sqrt() ** k
        return lambda v: 1 / (fb(v).sqrt() ** (-k))
    if expr.is_Pow and expr.exp.is_Rational:  # h^{p/q} (log-length schedule, THEORY §9): exp((p/q)·ln h)
        fb, p, q = _compiled(expr.base), int(expr.exp.p), int(expr.exp.q)
        # ln of a ball that may reach 0 or below is NaN: never < eta
        return lambda v: _arb_exp(_arb_rational(p, q) * fb(v).log())
    if isinstance(expr, sp.log):
        fa = _compiled(expr.args[0])
        return lambda v: fa(v).log()
    if isinstance(expr, sp.exp):
        fa = _compiled(expr.args[0])
        return lambda v: _arb_exp(fa(v))
    if isinstance(expr, (sp.Max, sp.Min)):
        fs, is_max = [_compiled(a) for a in expr.args], isinstance(expr, sp.Max)

        def lattice(v):
            vals = [f(v) for f in fs]
            acc = vals[0]
            for x in vals[1:]:
                acc = acc.max(x) if is_max else acc.min(x)
            return acc
        return lattice
    raise SolverError(f"arb check cannot evaluate {type(expr).__name__} term {expr}")


_CUT = 4096


def _arb_exp(x: flint.arb) -> flint.arb:
    """``exp`` of a ball, cutting arguments below ``−_CUT`` (their exponential is below e^{-4096},
    enclosed by ``[0, e^{-_CUT}]``) so a huge negative argument costs nothing."""
    lo, hi = x.lower(), x.upper()
    cut = flint.arb(-_CUT)
    if hi < cut:
        return flint.arb(0).union(cut.exp())
    if lo < cut:
        return flint.arb(0).union(hi.exp())
    return x.exp()


def _box(lo: int, hi: int) -> flint.arb:
    return flint.arb(flint.fmpq(lo + hi, 2), flint.fmpq(hi - lo, 2))


def exceeds(expr: sp.Expr, tol: Fraction, nv: int, prec: int = 256) -> tuple[bool, str]:
    """Rigorously ``expr(nv) > tol``?  Both balls are built at ``prec`` bits (a tolerance ball at
    the default 53 bits could hide a violation of relative size 1e-16).  Returns the verdict and
    the value's ball as text (20 digits)."""
    old = flint.ctx.prec
    flint.ctx.prec = prec
    try:
        v = arb_eval(expr, flint.arb(nv))
        return bool(v > _arb_rational(tol.numerator, tol.denominator)), v.str(20)
    finally:
        flint.ctx.prec = old


def value_at(expr: sp.Expr, nv: int, prec: int = 256) -> flint.arb:
    """Rigorous ball for ``expr(nv)`` at an integer ``nv``."""
    old = flint.ctx.prec
    flint.ctx.prec = prec
    try:
        return arb_eval(expr, flint.arb(nv))
    finally:
        flint.ctx.prec = old


@dataclass
class ArbResult:
    """``status``: proved | refuted | unknown; ``counterexample``: an integer n when refuted."""

    status: str
    boxes: int
    seconds: float
    counterexample: int | None = None
    value: str | None = None
    reason: str = ""


def arb_check(expr: sp.Expr, eta: Fraction, lo: int, hi: int | None, *, prec: int = 128,
              max_boxes: int = 20000, deadline_s: float = 20.0) -> ArbResult:
    """Check ``∀ integer n ∈ [lo, hi]: expr(n) ≤ eta`` by subdivision (``hi=None``: all n ≥ lo, via a
    final box ``[2^40, ∞)`` evaluated as a ball over ``n ≥ 2^40`` is not available in arb, so an
    unbounded claim is checked on ``[lo, 2^40]`` and the remainder reported as unknown unless the
    expression does not depend on n)."""
    t0 = time.perf_counter()
    old = flint.ctx.prec
    flint.ctx.prec = prec
    try:
        eta_b = _arb_rational(eta.numerator, eta.denominator)  # at the working precision, not 53 bits
        if not expr.has(n):
            v = arb_eval(expr, flint.arb(lo))
            return _decide_point(v, eta_b, lo, 1, t0)
        top = hi if hi is not None else 2**40
        stack = [(lo, top)]
        boxes = 0
        while stack:
            a, b = stack.pop()
            boxes += 1
            if boxes > max_boxes or time.perf_counter() - t0 > deadline_s:
                return ArbResult("unknown", boxes, time.perf_counter() - t0, reason="arb subdivision budget exhausted")
            v = arb_eval(expr, _box(a, b) if a != b else flint.arb(a))
            if v < eta_b:
                continue
            if a == b:
                if v > eta_b:
                    return ArbResult("refuted", boxes, time.perf_counter() - t0, counterexample=a, value=v.str(20))
                flint.ctx.prec *= 2
                eta_b = _arb_rational(eta.numerator, eta.denominator)
                if flint.ctx.prec > 4096:
                    return ArbResult("unknown", boxes, time.perf_counter() - t0,
                                     reason=f"value at n={a} indistinguishable from eta at 4096 bits")
                stack.append((a, b))
                continue
            m = (a + b) // 2 if b - a < 4 * a else math.isqrt(a * b)
            m = min(max(m, a), b - 1)
            stack.append((m + 1, b))
            stack.append((a, m))  # left first: finds the leftmost violation of a monotone bound first
        res = ArbResult("proved", boxes, time.perf_counter() - t0)
        if hi is None:
            res = ArbResult("unknown", boxes, res.seconds, reason="arb checks unbounded ranges only up to n = 2^40")
        return res
    finally:
        flint.ctx.prec = old


def _decide_point(v, eta_b, nv, boxes, t0) -> ArbResult:
    if v < eta_b:
        return ArbResult("proved", boxes, time.perf_counter() - t0)
    if v > eta_b:
        return ArbResult("refuted", boxes, time.perf_counter() - t0, counterexample=nv, value=v.str(20))
    return ArbResult("unknown", boxes, time.perf_counter() - t0, reason="value indistinguishable from eta")
