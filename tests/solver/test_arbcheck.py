"""The ball-arithmetic second check (solver/arbcheck.py, on trees: solver/balls.py): compiled evaluation
gives the same balls as a walk of the SymPy expression, and every ball contains the bound's 250-digit
value; the tree evaluation needs no SymPy."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

import flint
import mpmath
import pytest
import sympy as sp

from softhard.bounds import selection as S
from softhard.bounds.core import beta, eta, tau
from softhard.bounds.cache import encode_expr
from softhard.solver import arbcheck as A
from softhard.solver import balls as B
from softhard.solver.encode import n


def _walk(expr, v):
    """The definition: one ball operation per node, children left to right (the pre-compilation code)."""
    if expr == n:
        return v
    if expr.is_Rational:
        return flint.arb(flint.fmpq(int(expr.p), int(expr.q)))
    if expr.is_Add or expr.is_Mul:
        acc = flint.arb(0 if expr.is_Add else 1)
        for a in expr.args:
            acc = acc + _walk(a, v) if expr.is_Add else acc * _walk(a, v)
        return acc
    if expr.is_Pow and expr.exp.is_Integer:
        b, k = _walk(expr.base, v), int(expr.exp)
        return b**k if k >= 0 else 1 / (b ** (-k))
    if expr.is_Pow and expr.exp.is_Rational and expr.exp.q == 2:
        r, k = _walk(expr.base, v).sqrt(), int(expr.exp * 2)
        return r**k if k >= 0 else 1 / (r ** (-k))
    if expr.is_Pow and expr.exp.is_Rational:
        return B.arb_exp(flint.arb(flint.fmpq(int(expr.exp.p), int(expr.exp.q))) * _walk(expr.base, v).log())
    if isinstance(expr, sp.log):
        return _walk(expr.args[0], v).log()
    if isinstance(expr, sp.exp):
        return B.arb_exp(_walk(expr.args[0], v))
    vals = [_walk(a, v) for a in expr.args]
    acc = vals[0]
    for x in vals[1:]:
        acc = acc.max(x) if isinstance(expr, sp.Max) else acc.min(x)
    return acc


def _bits(x):
    """A ball exactly: its midpoint's and radius's (mantissa, exponent), or "nan"."""
    return "nan" if x.mid().is_nan() else (x.mid().man_exp(), x.rad().man_exp())


def _claims():
    subs = {beta: sp.Rational(1, 4), eta: sp.Rational(1, 4), tau: sp.Rational(1, 37)}
    out = [S.selection_bound(r, key_const=kc, spacing=d).leak.subs(subs) for r in ("T", "U") for kc in (False, True)
           for d in (1, 3)]
    out += [S.average_bound("T").leak.subs(subs), S.unique_output_bound_U(2).leak.subs(subs),
            sp.sqrt(n + 3) ** -3 + sp.Max(1 / n, sp.log(n) / n) + (n + 1) ** sp.Rational(-5, 8) + sp.Min(n, 2)]
    return out


@pytest.mark.parametrize("prec", [64, 128, 512])
def test_compiled_balls_equal_the_tree_walk_and_contain_the_value(prec):
    old = flint.ctx.prec
    flint.ctx.prec = prec
    try:
        for e in _claims():
            f = sp.lambdify(n, e, "mpmath")
            for lo, hi in ((2, 2), (7, 7), (10, 20), (1000, 10**6), (3, 3 * 10**9)):
                v = flint.arb(lo) if lo == hi else B.box(lo, hi)
                got, ref = A.arb_eval(e, v), _walk(e, v)
                assert _bits(got) == _bits(ref), (e, lo, hi)
                if got.mid().is_nan():  # (a NaN ball never proves anything)
                    continue
                with mpmath.workdps(250):  # far below any radius at 512 bits (~1e-154 relative)
                    for k in {lo, hi, (lo + hi) // 2}:
                        assert got.contains(flint.arb(mpmath.nstr(f(mpmath.mpf(k)), 230))), (e, k)
    finally:
        flint.ctx.prec = old


def test_float_constants_and_unknown_functions_are_refused():
    with pytest.raises(A.SolverError, match="floating-point"):
        A.arb_eval(sp.Float(0.5) * n, flint.arb(3))
    with pytest.raises(A.SolverError, match="cannot evaluate"):
        A.arb_eval(sp.sin(n), flint.arb(3))


def test_trees_from_json_give_the_same_balls_without_sympy():
    """A claim's tree as the cache stores it (JSON text) is checked in a fresh interpreter that
    never imports SymPy, with the same verdicts and balls as the SymPy expression here."""
    assert encode_expr(n) == B.N_TREE
    claims = _claims()
    want = [[A.exceeds(e, Fraction(1, 4), k, prec=256)
             for k in (2, 7, 1000)] for e in claims]
    arb = [A.arb_check(e, Fraction(1, 4), 2, 10**6) for e in claims]
    trees = json.dumps([encode_expr(e) for e in claims])
    probe = (
        "import json, sys\n"
        "from fractions import Fraction\n"
        "from softhard.solver import balls\n"
        "trees = json.loads(sys.stdin.read())\n"
        "ex = [[list(balls.tree_exceeds(t, Fraction(1, 4), k, prec=256)) for k in (2, 7, 1000)] for t in trees]\n"
        "ch = [[r.status, r.boxes, r.counterexample, r.value] for r in\n"
        "      (balls.tree_arb_check(t, Fraction(1, 4), 2, 10**6) for t in trees)]\n"
        "print(json.dumps({'exceeds': ex, 'check': ch, 'sympy': 'sympy' in sys.modules}))\n")
    out = subprocess.run([sys.executable, "-c", probe], input=trees, capture_output=True, text=True, timeout=120,
                         check=True)
    got = json.loads(out.stdout)
    assert got["sympy"] is False
    assert got["exceeds"] == [[list(x) for x in row] for row in want]
    assert got["check"] == [[r.status, r.boxes, r.counterexample, r.value] for r in arb]
    # the verdicts are real: some claim exceeds 1/4 at n = 2 (a warm 1/tau = 37) and some does not
    flat = [x[0] for row in want for x in row]
    assert True in flat and False in flat
