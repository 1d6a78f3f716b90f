"""Z3 in a child process with a hard wall-clock kill, and the verify deadline (SOLVER-NOTES.md).

Without SymPy (ISSUE 16): :mod:`softhard.solver.check` proves claims with :func:`run_z3`, and a
verify that replays a recorded artefact (:mod:`softhard.solver.replay_memo`) re-runs the recorded
query texts through the same :func:`run_z3`, in a process that loads no SymPy.

"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import functools
import os
import re
import select
import signal
import subprocess
import threading
import time
from fractions import Fraction

from ..constructions.errors import SolverError
from ..installed import files as installed_files

DEFAULT_TIMEOUT_S = 20.0

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
    wherever pip put the scripts: its ``RECORD``, read as importlib.metadata reads it,
    :func:`softhard.installed.files`).  Raises :class:`SolverError` when it is missing."""
    for rel, path in installed_files("z3-solver") or ():
        parts = rel.split("/")
        if len(parts) >= 2 and parts[-2] == "bin" and parts[-1] in ("z3", "z3.exe") and os.access(path, os.X_OK):
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
    """At exit: every solver child this process started is stopped and reaped (a Ctrl-C now would
    only print a traceback from inside this clean-up: the process is ending, SIGINT is ignored)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
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


#: wall-clock deadline (``time.perf_counter()``) of the running verify, or None: a verify's total
#: budget, on top of each claim's box and time budget (set by :func:`softhard.solver.replay.verify`)
VERIFY_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("softhard_verify_deadline",
                                                                              default=None)
