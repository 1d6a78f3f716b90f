"""Prove, refute or give up on a claim ``∀ integer n ∈ [n_lo, n_hi]: bound(n) ≤ η`` (THEORY §8).

Method (SOLVER-NOTES.md):

1. Encode the negated claim on a box of n with exact rational enclosures of every exponential
   (:mod:`softhard.solver.encode`); run Z3 on the SMT-LIB2 text in a child process that is
   killed after a hard wall-clock limit (Z3's own timeouts are soft).
2. ``unsat`` proves the box.  ``sat`` is only a candidate: the integers around the model's n and
   the box ends are evaluated rigorously (arb); if one really exceeds η the claim is **refuted**
   with that n, and the smallest violating n is then found by bisection over proved sub-ranges.
   Otherwise the box is split (and, at a single integer, the enclosure precision doubled).
   Each box is first asked with coarse (32-bit) enclosures, then, unless that was unsat, with
   128-bit ones (:data:`COARSE_PREC`).
3. A box budget or time limit exhausted, or a Z3 ``unknown``/kill, gives **unknown** — never
   proved.
4. Independently, :func:`softhard.solver.arbcheck.arb_check` re-checks the claim by ball
   arithmetic.  A disagreement is reported in the result and turns a "proved" into "unknown".

n is treated as a real in each box (a stronger claim); counterexamples are integers.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from fractions import Fraction

import sympy as sp

from ..bounds.cache import srepr_of, str_of, text_of
from ..constructions.errors import SolverError
from .arbcheck import ArbResult, arb_check, exceeds, value_at
from .encode import Query, build_query
from .oracle import note_answer
# (the Z3 child and the verify deadline live in z3proc, without SymPy; re-exported here)
from .z3proc import DEFAULT_TIMEOUT_S, VERIFY_DEADLINE, run_z3, z3_executable

__all__ = ["BUDGET_SPENT", "Claim", "ClaimResult", "DEFAULT_TIMEOUT_S", "ProofCache", "QueryRun", "VERIFY_DEADLINE",
           "check_claim", "run_z3", "z3_executable"]

#: enclosure precisions (bits) of a box query: every box is first asked with COARSE_PREC-bit
#: enclosures (small rationals: Z3's nonlinear arithmetic is much faster on them — a log-schedule
#: box at one n took 10 s at 128 bits, 1.1 s at 32); any answer but unsat asks the same box again at
#: BASE_PREC, from where the search goes on as it always did (split, or double the precision at
#: a single integer up to 2048).  A wider enclosure only weakens what the solver may assume, so an
#: unsat at COARSE_PREC proves the box as one at BASE_PREC does.
COARSE_PREC, BASE_PREC = 32, 128


@dataclass
class Claim:
    """``∀ integer n ∈ [n_lo, n_hi]: expr(n) ≤ eta``; ``n_hi=None`` means all ``n ≥ n_lo``.

    ``expr`` contains only the symbol ``n`` (every parameter substituted by an exact rational).
    """

    expr: sp.Expr
    eta: Fraction
    n_lo: int
    n_hi: int | None
    label: str = ""
    #: add the polynomial enclosures of exponentials tied to n (schedules, THEORY §9 lemma E)
    poly_exp: bool = False

    def __post_init__(self):
        if not isinstance(self.eta, Fraction):
            raise SolverError(f"claim {self.label}: eta must be an exact Fraction, got {self.eta!r}")
        if self.n_lo < 1 or (self.n_hi is not None and self.n_hi < self.n_lo):
            raise SolverError(f"claim {self.label}: empty or invalid range [{self.n_lo}, {self.n_hi}]")

    def text(self) -> str:
        rng = f"[{self.n_lo}, {self.n_hi}]" if self.n_hi is not None else f"[{self.n_lo}, ∞)"
        return f"for all integers n in {rng}: {str_of(self.expr)} <= {self.eta}"


@dataclass
class QueryRun:
    """One Z3 run: the box, the exact SMT-LIB2 text, Z3's answer and its time."""

    lo: int
    hi: int | None
    smtlib: str
    answer: str  # unsat | sat | unknown
    seconds: float
    reason: str = ""
    model_n: str | None = None


@dataclass
class ClaimResult:
    """Outcome of :func:`check_claim`.

    ``status``: proved | refuted | unknown.  ``queries``: every Z3 run (with its SMT-LIB2 text);
    ``counterexample``/``value``: the smallest violating integer n and the bound's value there
    (20 digits, rigorous ball) when refuted; ``second_check``: the arb result; ``disagreement``:
    True if the two methods contradict each other.
    """

    claim: Claim
    status: str
    queries: list[QueryRun] = field(default_factory=list)
    seconds: float = 0.0
    reason: str = ""
    counterexample: int | None = None
    value: str | None = None
    second_check: ArbResult | None = None
    disagreement: bool = False


def _query_text(claim: Claim, lo: int, hi: int | None, prec: int) -> str:
    q: Query = build_query(claim.expr, claim.eta, lo, hi, prec=prec, poly_exp=claim.poly_exp)
    return q.smtlib


# ------------------------------------------------------------------------------------------


def _model_value(text: str | None) -> Fraction | None:
    """Z3's value of n in a model (a fraction or a decimal, maybe ending in '?'), or None."""
    if text is None:
        return None
    try:
        return Fraction(text.rstrip("?"))
    except (ValueError, ZeroDivisionError):
        return None


def _violates(expr: sp.Expr, eta: Fraction, nv: int) -> tuple[bool, str]:
    return exceeds(expr, eta, nv, prec=512)


def _z3_ranges(claim: Claim, lo: int, hi: int | None, runs: list[QueryRun], *, timeout_s: float,
               max_boxes: int, deadline: float) -> tuple[str, str, int | None, str | None]:
    """Prove the claim on [lo, hi] by boxes.  Returns (status, reason, counterexample, value)."""
    stack: list[tuple[int, int | None, int]] = [(lo, hi, COARSE_PREC)]
    boxes = 0
    while stack:
        a, b, prec = stack.pop()
        boxes += 1
        if boxes > max_boxes:
            return "unknown", f"box budget of {max_boxes} exhausted", None, None
        if time.perf_counter() > deadline:
            return "unknown", "time limit reached", None, None
        # the box query's SMT-LIB2 text is a function of (claim, box, precision): built once, kept in
        # the derivation cache (bounds/cache.py); Z3 runs on it every time
        smtlib = text_of("smt", claim.expr, [str(claim.eta), a, b, prec] + (["poly_exp"] if claim.poly_exp else []),
                         lambda a=a, b=b, prec=prec: _query_text(claim, a, b, prec))
        ans, reason, mn, secs = run_z3(smtlib, timeout_s)
        note_answer({"z3": smtlib, "timeout_s": timeout_s, "answer": ans, "reason": reason, "n": mn})
        runs.append(QueryRun(lo=a, hi=b, smtlib=smtlib, answer=ans, seconds=secs, reason=reason, model_n=mn))
        if ans == "unsat":
            continue
        if prec < BASE_PREC:  # not decided with the coarse enclosures: the same box as before them
            stack.append((a, b, BASE_PREC))
            boxes -= 1  # one box, two precisions: counted once against the budget
            continue
        if ans != "sat":
            return "unknown", f"z3 answered unknown on n in [{a}, {b}]: {reason}", None, None
        # candidate integers: around the model's n, and the box ends
        cands = {a} | ({b} if b is not None else set())
        x = _model_value(mn)
        if x is not None:  # an unparsable model value leaves the box ends as the candidates
            for c in (int(x), int(x) + 1):
                if a <= c and (b is None or c <= b):
                    cands.add(c)
        for c in sorted(cands):
            bad, val = _violates(claim.expr, claim.eta, c)
            if bad:
                return "refuted", "", c, val
        # spurious: split (or refine precision at a single integer)
        if b is not None and a == b:
            if prec >= 2048:
                try:
                    finite = value_at(claim.expr, a).is_finite()
                except (ZeroDivisionError, ValueError):
                    finite = False
                if not finite:
                    return "unknown", f"the bound is undefined at n = {a} (a denominator vanishes there)", None, None
                return "unknown", f"enclosures at n = {a} too loose even at {prec} bits", None, None
            stack.append((a, b, prec * 2))
            continue
        if b is None:
            m = max(2 * a, a + 1)
            stack.append((m + 1, None, COARSE_PREC))
            stack.append((a, m, COARSE_PREC))
            continue
        m = (a + b) // 2 if b - a < 4 * a else math.isqrt(a * b)
        m = min(max(m, a), b - 1)
        stack.append((m + 1, b, COARSE_PREC))
        stack.append((a, m, COARSE_PREC))
    return "proved", "", None, None


def check_claim(claim: Claim, *, timeout_s: float = DEFAULT_TIMEOUT_S, max_boxes: int = 400,
                total_s: float = 120.0, second_check: bool = True, minimise: bool = True) -> ClaimResult:
    """Prove, refute or give up on ``claim`` (module docstring); both methods are always reported.

    ``timeout_s``: hard limit per Z3 query; ``max_boxes``/``total_s``: budget for subdivision.
    Raises :class:`SolverError` only for a claim that cannot be encoded soundly.
    """
    t0 = time.perf_counter()
    deadline = t0 + total_s
    runs: list[QueryRun] = []
    status, reason, cex, val = _z3_ranges(claim, claim.n_lo, claim.n_hi, runs, timeout_s=timeout_s,
                                          max_boxes=max_boxes, deadline=deadline)
    if status == "refuted" and minimise and cex is not None and cex > claim.n_lo:
        # smallest violating n: bisection on "no violation in [n_lo, m]"
        lo_, hi_ = claim.n_lo, cex  # a violation at hi_; none known below lo_
        stop = ""  # why the bisection stopped early: the claim's time limit, or a sub-range's own reason
        while lo_ < hi_:
            if time.perf_counter() >= deadline:
                stop = "time limit reached"
                break
            m = (lo_ + hi_) // 2
            st, why, c2, v2 = _z3_ranges(claim, claim.n_lo, m, runs, timeout_s=timeout_s, max_boxes=max_boxes,
                                         deadline=deadline)
            if st == "proved":
                lo_ = m + 1
            elif st == "refuted":
                hi_, cex, val = c2, c2, v2
                if c2 is not None and c2 <= m:
                    hi_ = c2
            else:
                stop = why
                break
        if lo_ < hi_:
            # the reason names what stopped it (a time limit, a Z3 timeout, a box budget): a replay that
            # stops elsewhere is then "could not re-check", never an edit (solver/replay.py BUDGET_WORDS)
            reason = f"a violation at n = {cex}; smaller violations not excluded below it ({stop})"
    res = ClaimResult(claim=claim, status=status, queries=runs, reason=reason, counterexample=cex, value=val)
    if second_check:
        ar = arb_check(claim.expr, claim.eta, claim.n_lo, claim.n_hi,
                       deadline_s=max(5.0, deadline - time.perf_counter()))
        res.second_check = ar
        if status == "proved" and ar.status == "refuted":
            res.status = "unknown"
            res.disagreement = True
            res.reason = (f"DISAGREEMENT: z3 proved the encoded claim but arb refutes it at n = {ar.counterexample} "
                          f"(value {ar.value}); the encoding is unsound — please report")
        elif status == "refuted" and ar.status == "proved":
            res.disagreement = True
            res.status = "unknown"
            res.reason = f"DISAGREEMENT: counterexample n = {cex} found but arb proves the claim"
    res.seconds = time.perf_counter() - t0
    return res


#: the ``reason`` of a claim a verify did not re-check because its total budget was spent
BUDGET_SPENT = "verify time budget exhausted before this claim (--budget)"


class ProofCache:
    """The results of :func:`check_claim` within one certify or one replay, keyed by the exact claim
    and the call's options, so the proof a search found is the proof the certificate records
    (never shared between a certify and a verify: each creates its own).  Inside a verify with a
    total budget (:data:`VERIFY_DEADLINE`) each claim gets at most the time left, and none once it
    is spent (status unknown, reason :data:`BUDGET_SPENT`).

    A claim checked with one ``minimise`` and asked again with the other (a τ search proves without
    minimising, the certificate's claims with: ISSUE 16, every query of a model certify ran twice)
    gets the recorded result when it has no counterexample: ``minimise`` acts only after the boxes
    refuted the claim (:func:`check_claim`), so without a refutation both calls make the same
    oracle calls with the same arguments in the same order, and the recorded answers are a possible
    run of the other call (an answer depends on its query and, through a time limit, the wall clock
    only; the argument of :func:`softhard.solver.replay_memo.rerun_transcript`).  A refuted claim is
    checked again."""

    def __init__(self) -> None:
        self._results: dict[tuple, ClaimResult] = {}

    @staticmethod
    def _key(claim: Claim, options: dict) -> tuple:
        return (srepr_of(claim.expr), claim.eta, claim.n_lo, claim.n_hi, claim.poly_exp,
                tuple(sorted(options.items())))

    def check(self, claim: Claim, **options) -> ClaimResult:
        """:func:`check_claim` of ``claim`` with ``options``, computed once (or taken from the same
        claim and options checked with the other ``minimise`` and no counterexample: class docstring)."""
        key = self._key(claim, options)
        if key not in self._results:
            other = self._results.get(self._key(claim, {**options, "minimise": not options.get("minimise", True)}))
            if other is not None and other.counterexample is None:
                self._results[key] = other
                return other
            deadline = VERIFY_DEADLINE.get()
            if deadline is not None:
                left = deadline - time.perf_counter()
                if left <= 0:
                    return ClaimResult(claim=claim, status="unknown", reason=BUDGET_SPENT)
                options = {**options, "total_s": min(options.get("total_s", 120.0), left)}
            self._results[key] = check_claim(claim, **options)
        return self._results[key]
