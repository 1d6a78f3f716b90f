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

import atexit
import contextlib
import contextvars
import functools
import importlib.metadata
import math
import os
import re
import select
import subprocess
import threading
import time
from dataclasses import dataclass, field
from fractions import Fraction

import sympy as sp

from ..bounds.cache import srepr_of, str_of, text_of
from ..constructions.errors import SolverError
from .arbcheck import ArbResult, arb_check, exceeds, value_at
from .encode import Query, build_query

DEFAULT_TIMEOUT_S = 20.0
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
# Z3 in a child process with a hard kill
#
# One solver child per process (per thread), started on the first query and reused by the next
# ones: the ``z3`` executable of the z3-solver distribution — the same Z3 build as its Python API —
# reading SMT-LIB2 commands on stdin (``z3 -in``), every query after a ``(reset)``, i.e. in a fresh
# context (no declaration, assertion or option of an earlier query survives).  Starting it costs
# ~4 ms of CPU; the earlier child, an interpreter importing the z3 module, cost ~0.1 s per command,
# and a fork per query 25-55 ms per query (page tables of a process with NumPy and SymPy loaded).
# Z3 itself takes ~1 ms on most box queries (ISSUE 16).  The hard kill is unchanged: a query
# without an answer after its time limit + 1 s kills the child (the next query starts a new one);
# so does Ctrl-C in the parent.  Measured before the switch, on 2,520 recorded queries (the
# example certificates and tests/solver): the same answer, model value of n and unknown-reason as
# the Python child for every query (benchmarks/README.md, ISSUE 16 fourth pass).

#: marks the end of one request's output (printed by ``(echo ...)`` after the request's commands)
_END = "softhard-end-of-answer"
_CHECK_SAT = re.compile(r"\(\s*check-sat\s*\)")


@functools.lru_cache(maxsize=1)
def z3_executable() -> str:
    """Path of the ``z3`` executable installed by the z3-solver distribution (its ``bin/z3``,
    wherever pip put the scripts).  Raises :class:`SolverError` when it is missing."""
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        dist = importlib.metadata.distribution("z3-solver")
        for f in dist.files or ():
            if f.parent.name == "bin" and f.name in ("z3", "z3.exe"):
                path = str(dist.locate_file(f))
                if os.access(path, os.X_OK):
                    return path
    raise SolverError("the z3 executable of the z3-solver distribution is missing (pip install z3-solver)")


def _balanced(text: str) -> bool:
    """Whether the parentheses of an SMT-LIB2 text balance (comments, strings and |quoted|
    symbols skipped): an unbalanced query would swallow the commands sent after it."""
    depth, i, k = 0, 0, len(text)
    while i < k:
        ch = text[i]
        if ch == ";":
            j = text.find("\n", i)
            i = k if j < 0 else j
        elif ch in "\"|":
            j = text.find(ch, i + 1)
            if j < 0:
                return False
            i = j
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return False
        i += 1
    return depth == 0


def _request(smtlib: str, timeout_ms: int) -> bytes:
    """One query for ``z3 -in``: a fresh context, the (soft) time limit, the query's declarations
    and assertions (its own ``check-sat`` commands removed), then ``check-sat``, the reason of an
    unknown and the model, and the end mark."""
    return (f"(reset)\n(set-option :timeout {timeout_ms})\n{_CHECK_SAT.sub(' ', smtlib)}\n(check-sat)\n"
            f"(get-info :reason-unknown)\n(get-model)\n(echo \"{_END}\")\n").encode()


def _sexprs(text: str) -> list:
    """The S-expressions of Z3's output (atoms as strings, lists as lists; strings kept quoted)."""
    stack: list[list] = [[]]
    for tok in re.findall(r'"(?:[^"]|"")*"|[()]|[^\s()"]+', text):
        if tok == "(":
            stack.append([])
        elif tok == ")":
            if len(stack) > 1:
                done = stack.pop()
                stack[-1].append(done)
        else:
            stack[-1].append(tok)
    return stack[0]


def _number(e) -> Fraction:
    """An exact rational from Z3's printed value: ``2.0``, ``(/ 47.0 4.0)``, ``(- x)``."""
    if isinstance(e, str):
        return Fraction(e)
    if e[0] == "-" and len(e) == 2:
        return -_number(e[1])
    if e[0] == "/" and len(e) == 3:
        return _number(e[1]) / _number(e[2])
    raise ValueError(f"not a rational value: {e}")


def _answer(out: str) -> dict:
    """Parse one request's output into ``{"answer", "reason"[, "n"]}`` (as the Python API's
    ``check()``, ``reason_unknown()`` and the model's value of ``n``: a fraction, or for an
    algebraic value the decimal to 30 digits, which :func:`_algebraic_n` asks for)."""
    lines = out.splitlines()
    k = next((i for i, ln in enumerate(lines) if ln.strip() in ("sat", "unsat", "unknown")), None)
    errors = [ln.strip() for ln in lines[:len(lines) if k is None else k] if ln.lstrip().startswith("(error")]
    if k is None or errors:
        msg = errors[0] if errors else out.strip()[:300]
        return {"answer": "unknown", "reason": f"z3 error: {msg}"}
    answer = lines[k].strip()
    got = {"answer": answer, "reason": ""}
    rest = _sexprs("\n".join(lines[k + 1:]))
    if answer == "unknown":
        info = next((e for e in rest if isinstance(e, list) and e[:1] == [":reason-unknown"]), None)
        got["reason"] = info[1][1:-1].replace('""', '"') if info and len(info) > 1 else ""
    elif answer == "sat":
        model = next((e for e in rest if isinstance(e, list) and e and isinstance(e[0], list)), [])
        for d in model:
            if d[:2] == ["define-fun", "n"] and len(d) == 5 and d[2] == []:
                v = d[4]
                if isinstance(v, list) and v and v[0] == "root-obj":
                    got["n"] = None  # algebraic: :func:`_algebraic_n`
                else:
                    got["n"] = str(_number(v))
    return got


#: after a sat with an algebraic n: its value printed as 30 decimals, then decimals off again
_ALGEBRAIC_N = (f"(set-option :pp.decimal true)\n(set-option :pp.decimal_precision 30)\n(get-value (n))\n"
                f"(set-option :pp.decimal false)\n(echo \"{_END}\")\n").encode()


def _decimal_n(out: str) -> str | None:
    """``1.414…?`` from the output of :data:`_ALGEBRAIC_N` (``((n 1.414…?))``)."""
    e = _sexprs(out)
    try:
        v = e[0][0][1]
        return v if isinstance(v, str) else None
    except (IndexError, TypeError):
        return None


class _Server(threading.local):
    """The solver child of this thread (a Dask worker runs jobs in threads: one pipe each):
    ``pid`` of the process that started it, ``proc`` (a :class:`subprocess.Popen`); empty before
    the first query."""

    def __init__(self):
        self.d: dict = {}


_local = _Server()
_started: list = []  # (owner pid, Popen) of every child started here: stopped at exit


def _stop(proc) -> None:
    """Kill a solver child, best effort: its pipes may already be broken and a killed child is
    reaped within 1 s or left to the OS (the next query starts a new one)."""
    for f in (proc.stdin, proc.stdout):
        with contextlib.suppress(OSError):
            f.close()
    proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(1)


def _stop_server() -> None:
    """Kill this thread's solver child (after a time limit, an interrupt or a broken pipe)."""
    proc = _local.d.pop("proc", None)
    _local.d.clear()
    if proc is not None:
        _stop(proc)


@atexit.register
def _stop_all() -> None:
    """At exit: every solver child this process started is stopped and reaped."""
    for pid, proc in _started:
        if pid == os.getpid() and proc.poll() is None:
            _stop(proc)


def _child():
    """This thread's solver child, started first if there is none (a child inherited through a fork
    belongs to the parent: this process starts its own)."""
    server = _local.d
    if server.get("pid") != os.getpid():
        server.clear()  # inherited: the parent's child, not ours to kill or to talk to
        proc = subprocess.Popen([z3_executable(), "-in"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        _started.append((os.getpid(), proc))
        server.update(pid=os.getpid(), proc=proc, buf=b"")
    return server["proc"]


def _read_until_end(proc, deadline: float) -> str | None:
    """The child's output up to the next end mark, or None when the wall-clock ``deadline``
    (``time.monotonic``) passes first or the child's output ends."""
    end = f"\n{_END}\n".encode()
    fd = proc.stdout.fileno()
    while True:
        data = b"\n" + _local.d["buf"]
        i = data.find(end)
        if i >= 0:
            _local.d["buf"] = data[i + len(end):]
            return data[1:i + 1].decode()
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return None
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return None
        _local.d["buf"] += chunk


def run_z3(smtlib: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> tuple[str, str, str | None, float]:
    """Run one SMT-LIB2 query in this thread's solver child (``z3 -in``, started on first use, each
    query in a fresh context after ``(reset)``); kill the child after ``timeout_s`` + 1 s without
    an answer.  Z3's own (soft) time limit is ``timeout_s``; an unbalanced query is refused
    (``unknown``, ``z3 error``) without reaching the child.

    Returns ``(answer, reason, model_n, seconds)``: ``model_n`` the model's n as a fraction
    (``"13/4"``) or, algebraic, 30 decimals ending in ``?``; a kill (or a child that died) is
    ``("unknown", "timeout (hard wall-clock kill)", None, seconds)``.  Source: SOLVER-NOTES.md
    (Z3 timeouts are soft: a hard wall-clock kill)."""
    t0 = time.perf_counter()
    if not _balanced(smtlib):
        return "unknown", "z3 error: unbalanced parentheses in the query", None, time.perf_counter() - t0
    deadline = time.monotonic() + timeout_s + 1.0
    got = None
    try:
        proc = _child()
        proc.stdin.write(_request(smtlib, max(1, int(timeout_s * 1000))))
        proc.stdin.flush()
        out = _read_until_end(proc, deadline)
        if out is not None:
            got = _answer(out)
            if got.get("n", "") is None:  # an algebraic n: its decimals, from the same model
                proc.stdin.write(_ALGEBRAIC_N)
                proc.stdin.flush()
                more = _read_until_end(proc, deadline)
                got = None if more is None else {**got, "n": _decimal_n(more)}
    except (OSError, ValueError):  # the child died (broken pipe, no or a garbled answer)
        got = None
    except BaseException:  # KeyboardInterrupt while waiting: no orphaned solver
        _stop_server()
        raise
    if got is None:
        _stop_server()
        return "unknown", "timeout (hard wall-clock kill)", None, time.perf_counter() - t0
    return got["answer"], got.get("reason", ""), got.get("n"), time.perf_counter() - t0


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
        while lo_ < hi_ and time.perf_counter() < deadline:
            m = (lo_ + hi_) // 2
            st, _, c2, v2 = _z3_ranges(claim, claim.n_lo, m, runs, timeout_s=timeout_s, max_boxes=max_boxes,
                                       deadline=deadline)
            if st == "proved":
                lo_ = m + 1
            elif st == "refuted":
                hi_, cex, val = c2, c2, v2
                if c2 is not None and c2 <= m:
                    hi_ = c2
            else:
                break
        if lo_ < hi_:
            reason = f"a violation at n = {cex}; smaller violations not excluded below it"
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


#: wall-clock deadline (``time.perf_counter()``) of the running verify, or None: a verify's total
#: budget, on top of each claim's box and time budget (set by :func:`softhard.solver.replay.verify`)
VERIFY_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("softhard_verify_deadline",
                                                                              default=None)
#: the ``reason`` of a claim a verify did not re-check because its total budget was spent
BUDGET_SPENT = "verify time budget exhausted before this claim (--budget)"


class ProofCache:
    """The results of :func:`check_claim` within one certify or one replay, keyed by the exact claim
    and the call's options, so the proof a search found is the proof the certificate records
    (never shared between a certify and a verify: each creates its own).  Inside a verify with a
    total budget (:data:`VERIFY_DEADLINE`) each claim gets at most the time left, and none once it
    is spent (status unknown, reason :data:`BUDGET_SPENT`)."""

    def __init__(self) -> None:
        self._results: dict[tuple, ClaimResult] = {}

    def check(self, claim: Claim, **options) -> ClaimResult:
        """:func:`check_claim` of ``claim`` with ``options``, computed once."""
        key = (srepr_of(claim.expr), claim.eta, claim.n_lo, claim.n_hi, claim.poly_exp,
               tuple(sorted(options.items())))
        if key not in self._results:
            deadline = VERIFY_DEADLINE.get()
            if deadline is not None:
                left = deadline - time.perf_counter()
                if left <= 0:
                    return ClaimResult(claim=claim, status="unknown", reason=BUDGET_SPENT)
                options = {**options, "total_s": min(options.get("total_s", 120.0), left)}
            self._results[key] = check_claim(claim, **options)
        return self._results[key]
