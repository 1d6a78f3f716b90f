"""The solver child (``z3 -in``, solver/check.py): its answers, model values of n and unknown-reasons
are those of Z3's Python API on the same SMT-LIB2 text, each query in a fresh context (ISSUE 16)."""

from __future__ import annotations

import subprocess
from fractions import Fraction

import mpmath
import z3

from softhard.solver.check import run_z3, z3_executable

#: queries of the shapes the prover sends (n Real, rational bounds, enclosure variables) and edge cases
QUERIES = [
    "(declare-const n Real)(assert (> n 3))(assert (< n (/ 7 2)))(assert (= (* 4 n) 13))",
    "(declare-const n Real)(assert (< n (- 3)))(assert (> n (- (/ 7 2))))(assert (= (* 4 n) (- 13)))",
    "(declare-fun n () Real)(declare-fun E0 () Real)(assert (>= n 2.0))(assert (<= n 1000000.0))"
    "(assert (<= 0.0 E0))(assert (>= (/ 1.0 4.0) E0))(assert (< (/ 1.0 4.0) (/ (* n E0) (+ 1.0 (* n E0)))))"
    "(check-sat)",
    "(declare-fun n () Real)(declare-fun E0 () Real)(assert (>= n 2.0))(assert (<= n 10.0))"
    "(assert (<= 0.0 E0))(assert (>= (/ 1.0 100.0) E0))(assert (< (/ 1.0 4.0) (* n E0)))",
    "(declare-const x Real)(assert (> x 2))",  # sat without an n
]


def _api(smtlib: str) -> tuple[str, str | None]:
    """The Python API's answer and model value of n (a fraction, or 30 decimals if algebraic)."""
    s = z3.Solver(ctx=z3.Context())
    s.from_string(smtlib)
    r = s.check()
    n = None
    if r == z3.sat:
        m = s.model()
        for d in m.decls():
            if d.name() == "n":
                v = m[d]
                n = v.as_decimal(30) if z3.is_algebraic_value(v) else str(v.as_fraction())
    return str(r), n


def test_answers_and_model_values_are_the_apis():
    for q in QUERIES:
        ans, reason, n, _ = run_z3(q)
        assert (ans, n) == _api(q), q
        assert reason == ""


def test_algebraic_n_then_a_fresh_context():
    """An algebraic model value comes as 30 decimals (checked against mpmath's sqrt 2); the next
    query prints its rational n as a fraction again (the decimal printing does not leak)."""
    ans, _, n, _ = run_z3("(declare-const n Real)(assert (= (* n n) 2.0))(assert (> n 0.0))")
    assert ans == "sat" and n.endswith("?")
    with mpmath.workdps(40):
        assert abs(mpmath.mpf(n.rstrip("?")) - mpmath.sqrt(2)) < mpmath.mpf(10) ** -29
    assert run_z3("(declare-const n Real)(assert (= (* 3 n) 1))")[:3] == ("sat", "", "1/3")
    assert Fraction(run_z3("(declare-const n Real)(assert (= (* 3 n) 1))")[2]) == Fraction(1, 3)


def test_errors_are_unknown_never_an_answer():
    ans, reason, n, _ = run_z3("(declare-const n Real)(assert (> x 2))")  # x undeclared
    assert (ans, n) == ("unknown", None) and reason.startswith("z3 error:") and "unknown constant x" in reason
    # an unbalanced query is refused before it reaches the child (it would swallow the next commands)
    assert run_z3("(declare-const n Real)(assert (> n 2)")[:3] == (
        "unknown", "z3 error: unbalanced parentheses in the query", None)
    assert run_z3(QUERIES[0])[:3] == ("sat", "", "13/4")  # and the child still answers


def test_soft_time_limit_gives_z3s_reason():
    """Z3's own time limit (soft) answers unknown with the API's reason_unknown() text."""
    ctx = z3.Context()
    xs = z3.Reals("x0 x1 x2 x3 x4", ctx)
    s = z3.Solver(ctx=ctx)
    for v in xs:
        s.add(v >= 0)
    s.add(z3.Product(xs) == 1, z3.Sum(xs) < 5 - z3.Q(1, 10**6, ctx), z3.Sum([v * v * v for v in xs]) <= 6)
    s.set("timeout", 300)
    assert s.check() == z3.unknown
    api_reason = s.reason_unknown()
    ans, reason, n, _ = run_z3(s.to_smt2(), timeout_s=0.3)
    assert ans == "unknown" and n is None
    # Z3's soft limit answers with its reason; past the limit + 1 s the child is killed instead
    assert reason in (api_reason, "timeout (hard wall-clock kill)")
    assert api_reason == "timeout"


def test_the_executable_is_the_api_build():
    out = subprocess.run([z3_executable(), "-version"], capture_output=True, text=True, timeout=30).stdout
    assert z3.get_version_string() in out
