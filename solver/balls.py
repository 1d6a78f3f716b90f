"""Ball arithmetic (python-flint ``arb``) on a bound's expression tree, without SymPy (ISSUE 16).

The trees are the derivation cache's (:func:`softhard.bounds.cache.encode_expr`): ``[head, *args]``
in SymPy's own argument order, ``["Symbol", name, assumptions]``, ``["Integer", "p"]``,
``["Rational", "p", "q"]``, ``["Float", srepr]``, ``["const", name]``.  :func:`compile_tree`
turns one into a function of the ball of ``n`` that performs one ball operation per node, children
left to right — the definition of the second check's enclosure (THEORY §8; SOLVER-NOTES.md,
"Interval arithmetic").  :mod:`softhard.solver.arbcheck` is this module applied to a SymPy
expression (its tree), so a claim whose tree comes from the cache is checked without SymPy, and
with the same balls.

Comparisons are three-valued (SOLVER-NOTES.md): only a True ``upper < η`` proves, only a True
``lower > η`` refutes.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache

import flint

from ..constructions.errors import SolverError
from .records import Record

#: the tree of the claims' length symbol ``n`` (``sympy.Symbol("n", positive=True)``, solver/encode.py)
N_TREE = ["Symbol", "n", {"positive": True}]

Ball = Callable[[flint.arb], flint.arb]


def _arb_rational(p: int, q: int) -> flint.arb:
    return flint.arb(flint.fmpq(p, q))


def _rational(t) -> tuple[int, int] | None:
    """``(p, q)`` of an ``Integer``/``Rational`` leaf, else None."""
    if t[0] == "Integer":
        return int(t[1]), 1
    if t[0] == "Rational":
        return int(t[1]), int(t[2])
    return None


def compile_tree(tree: list) -> Ball:
    """The ball enclosure of the tree's value as a function of the ball of ``n`` (rigorous, at the
    flint precision current when it is called; constants are built then).  One ball operation per
    node, children left to right: ``Add``/``Mul`` fold from 0/1; ``Pow`` with an integer exponent
    is a power (a negative one its reciprocal), with a half-integer one a power of ``sqrt``, with
    another rational ``p/q`` ``exp((p/q)·ln base)``; ``log``, ``exp`` (:func:`arb_exp`),
    ``Max``/``Min`` folded left to right.  Raises :class:`SolverError` for a float constant, a
    symbol other than ``n`` or a head it cannot evaluate."""
    return _compiled(json.dumps(tree))


@lru_cache(maxsize=1024)
def _compiled(text: str) -> Ball:
    return _compile(json.loads(text))


def _compile(t: list) -> Ball:
    head = t[0]
    if head == "Symbol":
        if t == N_TREE:
            return lambda v: v
        raise SolverError(f"arb check cannot evaluate Symbol term {t[1]}")
    pq = _rational(t)
    if pq is not None:
        p, q = pq
        return lambda v: _arb_rational(p, q)
    if head == "Float":
        raise SolverError(f"floating-point constant {t[1]} in a claim")
    if head in ("Add", "Mul"):
        fs = [_compile(a) for a in t[1:]]
        if head == "Add":
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
    if head == "Pow" and _rational(t[2]) is not None:
        fb, (p, q) = _compile(t[1]), _rational(t[2])
        if q == 1:
            if p >= 0:
                return lambda v: fb(v) ** p
            return lambda v: 1 / (fb(v) ** (-p))
        if q == 2:  # powers of a square root (sqrt of a ball that may be < 0 is a NaN ball: never < eta)
            if p >= 0:
                return lambda v: fb(v).sqrt() ** p
            return lambda v: 1 / (fb(v).sqrt() ** (-p))
        # h^{p/q} (log-length schedule, THEORY §9): exp((p/q)·ln h); ln of a ball reaching 0 or below is NaN
        return lambda v: arb_exp(_arb_rational(p, q) * fb(v).log())
    if head == "log" and len(t) == 2:
        fa = _compile(t[1])
        return lambda v: fa(v).log()
    if head == "exp" and len(t) == 2:
        fa = _compile(t[1])
        return lambda v: arb_exp(fa(v))
    if head in ("Max", "Min"):
        fs, is_max = [_compile(a) for a in t[1:]], head == "Max"

        def lattice(v):
            vals = [f(v) for f in fs]
            acc = vals[0]
            for x in vals[1:]:
                acc = acc.max(x) if is_max else acc.min(x)
            return acc
        return lattice
    raise SolverError(f"arb check cannot evaluate {head if head != 'const' else t[1]} term {json.dumps(t)[:200]}")


def has_n(tree: list) -> bool:
    """Whether the tree contains the symbol ``n``."""
    if tree == N_TREE:
        return True
    return tree[0] not in ("Symbol", "Integer", "Rational", "Float", "const") and any(has_n(a) for a in tree[1:])


_CUT = 4096


def arb_exp(x: flint.arb) -> flint.arb:
    """``exp`` of a ball, cutting arguments below ``−4096`` (their exponential is below e^{-4096},
    enclosed by ``[0, e^{-4096}]``) so a huge negative argument costs nothing."""
    lo, hi = x.lower(), x.upper()
    cut = flint.arb(-_CUT)
    if hi < cut:
        return flint.arb(0).union(cut.exp())
    if lo < cut:
        return flint.arb(0).union(hi.exp())
    return x.exp()


def box(lo: int, hi: int) -> flint.arb:
    """The ball ``[lo, hi]`` of n (midpoint and radius exact)."""
    return flint.arb(flint.fmpq(lo + hi, 2), flint.fmpq(hi - lo, 2))


def tree_exceeds(tree: list, tol: Fraction, nv: int, prec: int = 256) -> tuple[bool, str]:
    """Rigorously ``tree(nv) > tol``?  Both balls are built at ``prec`` bits (a tolerance ball at
    the default 53 bits could hide a violation of relative size 1e-16).  Returns the verdict and
    the value's ball as text (20 digits).  Raises :class:`SolverError` as :func:`compile_tree`."""
    old = flint.ctx.prec
    flint.ctx.prec = prec
    try:
        v = compile_tree(tree)(flint.arb(nv))
        return bool(v > _arb_rational(tol.numerator, tol.denominator)), v.str(20)
    finally:
        flint.ctx.prec = old


def tree_value_at(tree: list, nv: int, prec: int = 256) -> flint.arb:
    """Rigorous ball for ``tree(nv)`` at an integer ``nv`` (``prec`` bits)."""
    old = flint.ctx.prec
    flint.ctx.prec = prec
    try:
        return compile_tree(tree)(flint.arb(nv))
    finally:
        flint.ctx.prec = old


class ArbResult(Record):
    """``status``: proved | refuted | unknown; ``counterexample``: an integer n when refuted.  (A
    plain record, :mod:`.records`: no dataclasses on a verify's path.)"""

    FIELDS = ("status", "boxes", "seconds", "counterexample", "value", "reason")
    status: str
    boxes: int
    seconds: float
    counterexample: int | None
    value: str | None
    reason: str

    def __init__(self, status: str, boxes: int, seconds: float, counterexample: int | None = None,
                 value: str | None = None, reason: str = ""):
        self.status, self.boxes, self.seconds = status, boxes, seconds
        self.counterexample, self.value, self.reason = counterexample, value, reason


def tree_arb_check(tree: list, eta: Fraction, lo: int, hi: int | None, *, prec: int = 128,
                   max_boxes: int = 20000, deadline_s: float = 20.0) -> ArbResult:
    """Check ``∀ integer n ∈ [lo, hi]: tree(n) ≤ eta`` by subdivision (``hi=None``: all n ≥ lo; arb
    has no ball for ``n ≥ 2^40``, so an unbounded claim is checked on ``[lo, 2^40]`` and the
    remainder reported as unknown unless the tree does not depend on n).  ``max_boxes`` and
    ``deadline_s`` (seconds) bound the work (status unknown when spent).  Raises
    :class:`SolverError` as :func:`compile_tree`."""
    t0 = time.perf_counter()
    old = flint.ctx.prec
    flint.ctx.prec = prec
    try:
        f = compile_tree(tree)
        eta_b = _arb_rational(eta.numerator, eta.denominator)  # at the working precision, not 53 bits
        if not has_n(tree):
            v = f(flint.arb(lo))
            return _decide_point(v, eta_b, lo, 1, t0)
        top = hi if hi is not None else 2**40
        stack = [(lo, top)]
        boxes = 0
        while stack:
            a, b = stack.pop()
            boxes += 1
            if boxes > max_boxes or time.perf_counter() - t0 > deadline_s:
                return ArbResult("unknown", boxes, time.perf_counter() - t0, reason="arb subdivision budget exhausted")
            v = f(box(a, b) if a != b else flint.arb(a))
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


# ------------------------------------------------------------------------------------------
# oracle rows (softhard.solver.oracle): an arb check as recorded by a live replay, and its re-run


#: the time limit (seconds) of an arb check re-run from a recorded row (a recorded row never hit
#: its own: a replay whose checks hit a budget is not recorded; ISSUE 16)
RERUN_DEADLINE_S = 20.0


def arb_row(tree: list, eta: Fraction, lo: int, hi: int | None, prec: int, max_boxes: int, res: ArbResult) -> dict:
    """The oracle row of one :func:`tree_arb_check` call and its result (``seconds`` left out: a
    measurement).  JSON-able."""
    return {"arb": tree, "eta": str(eta), "lo": lo, "hi": hi, "prec": prec, "max_boxes": max_boxes,
            "result": [res.status, res.boxes, res.counterexample, res.value, res.reason]}


def exceeds_row(tree: list, tol: Fraction, nv: int, prec: int, out: tuple[bool, str]) -> dict:
    """The oracle row of one :func:`tree_exceeds` call and its verdict.  JSON-able."""
    return {"exceeds": tree, "tol": str(tol), "n": nv, "prec": prec, "result": [bool(out[0]), out[1]]}


def rerun_row(row: dict) -> bool:
    """Re-run the arb check an oracle row (:func:`arb_row`, :func:`exceeds_row`) records, live, and
    whether it gives the recorded result exactly (False for a row of another shape, a tree that no
    longer compiles or a check that now hits its time limit).  Source: SOLVER-NOTES.md (ball
    arithmetic as the second check)."""
    try:
        if "arb" in row:
            r = tree_arb_check(row["arb"], Fraction(row["eta"]), row["lo"], row["hi"], prec=row["prec"],
                               max_boxes=row["max_boxes"], deadline_s=RERUN_DEADLINE_S)
            return [r.status, r.boxes, r.counterexample, r.value, r.reason] == row["result"]
        if "exceeds" in row:
            over, text = tree_exceeds(row["exceeds"], Fraction(row["tol"]), row["n"], prec=row["prec"])
            return [bool(over), text] == row["result"]
    except (SolverError, KeyError, TypeError, ValueError, ZeroDivisionError, ArithmeticError):
        return False
    return False
