"""The solver child: z3-solver's ``z3 -in`` (solver/check.py) against the Python child it replaced
(an interpreter importing z3, one JSON query per line: the previous design, kept here as the
baseline) — answers, model values of n and unknown-reasons compared query by query, and the CPU
of each child (ISSUE 16, fourth pass; benchmarks/README.md).

    python benchmarks/solver_child.py                       # the example certificates' queries
    python benchmarks/solver_child.py --record q.jsonl      # also keep the recorded queries
    python benchmarks/solver_child.py --queries q.jsonl     # replay recorded queries instead

Recording: the formula certificates below are made in this process (``--no-numeric``, the
proofs are the same) with :func:`softhard.solver.check.run_z3` wrapped to record every query.
Then every query runs through both children, each started once; CPU = ``RUSAGE_CHILDREN`` user +
system of the child after it exits.  Also the start-up cost alone of each child (start, one
``(exit)`` / end of input, median of 7).  Bounded: the fixed inputs below (~150 queries).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import resource
import select
import statistics
import subprocess
import sys

from softhard.solver import check as chk
from softhard.solver.cli import main as cli_main

#: (argv of ``softhard certify``) whose queries are recorded
INPUTS = [
    ["examples/tomita4.ltl", "--regime", "T", "--n-max", "1000000", "--eta", "1/4", "--find-tau"],
    ["examples/dyck1_depth2.ltl", "--regime", "T", "--n-max", "1000000", "--eta", "1/4", "--find-tau"],
    ["examples/majority.ltl", "--comparator", "head", "--regime", "T", "--n-max", "100000", "--eta", "1/4", "--find-tau"],
    ["examples/aba.ltl", "--regime", "U", "--find-tau"],
    ["examples/tomita7.ltl", "--schedule", "lin", "--find-tau"],
    ["examples/a_then_b.ltl", "--schedule", "log", "--find-tau"],
]

#: the previous solver child (solver/check.py before the switch): Z3's Python API, one JSON line each way
PY_CHILD = r"""
import json, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
import z3

def solve(smtlib, timeout_ms):
    try:
        s = z3.Solver(ctx=z3.Context())
        s.set("timeout", timeout_ms)
        s.from_string(smtlib)
        r = s.check()
        out = {"answer": str(r), "reason": ""}
        if r == z3.sat:
            m = s.model()
            for d in m.decls():
                if d.name() == "n":
                    v = m[d]
                    out["n"] = v.as_decimal(30) if z3.is_algebraic_value(v) else str(v.as_fraction())
        elif r == z3.unknown:
            out["reason"] = s.reason_unknown()
        return out
    except Exception as e:
        return {"answer": "unknown", "reason": f"z3 error: {e}"}

for line in sys.stdin.buffer:
    smtlib, timeout_ms = json.loads(line)
    sys.stdout.buffer.write(json.dumps(solve(smtlib, timeout_ms)).encode() + b"\n")
    sys.stdout.buffer.flush()
"""


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def record() -> list[dict]:
    """Certify :data:`INPUTS` in this process, recording every query of the current child."""
    got: list[dict] = []
    run = chk.run_z3

    def recording(smtlib, timeout_s=chk.DEFAULT_TIMEOUT_S):
        r = run(smtlib, timeout_s)
        got.append({"q": smtlib, "t": timeout_s, "answer": r[0], "reason": r[1], "n": r[2]})
        return r

    chk.run_z3 = recording
    try:
        for argv in INPUTS:
            with contextlib.redirect_stdout(io.StringIO()):
                rc = cli_main(["certify", *argv, "--no-numeric", "--json"])
            if rc not in (0, 1):
                raise SystemExit(f"certify {argv} failed")
    finally:
        chk.run_z3 = run
        chk._stop_server()
    return got


def python_child(queries: list[dict]) -> tuple[list[dict], float]:
    """Every query through one Python child (the previous design); its answers and CPU."""
    c0 = _cpu()
    p = subprocess.Popen([sys.executable, "-I", "-c", PY_CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    out = []
    for q in queries:
        p.stdin.write(json.dumps([q["q"], max(1, int(q["t"] * 1000))]).encode() + b"\n")
        p.stdin.flush()
        ready, _, _ = select.select([p.stdout], [], [], q["t"] + 1.0)
        g = json.loads(p.stdout.readline()) if ready else {"answer": "unknown", "reason": "timeout (hard wall-clock kill)"}
        out.append({"answer": g["answer"], "reason": g.get("reason", ""), "n": g.get("n")})
    p.stdin.close()
    p.wait()
    return out, _cpu() - c0


def z3_in(queries: list[dict]) -> tuple[list[dict], float]:
    """Every query through :func:`softhard.solver.check.run_z3` (one ``z3 -in``); answers and CPU."""
    chk._stop_server()
    c0 = _cpu()
    out = []
    for q in queries:
        a, reason, n, _ = chk.run_z3(q["q"], q["t"])
        out.append({"answer": a, "reason": reason, "n": n})
    chk._stop_server()
    return out, _cpu() - c0


def startup() -> dict[str, float]:
    """CPU of starting and stopping each child with no query (median of 7)."""
    cmds = {"python child (import z3)": ([sys.executable, "-I", "-c", "import z3"], b""),
            "z3 -in": ([chk.z3_executable(), "-in"], b"(exit)\n")}
    out = {}
    for name, (cmd, stdin) in cmds.items():
        ts = []
        for _ in range(7):
            c0 = _cpu()
            subprocess.run(cmd, input=stdin, stdout=subprocess.DEVNULL, check=True)
            ts.append(_cpu() - c0)
        out[name] = statistics.median(ts)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", help="replay these recorded queries (JSON lines) instead of recording")
    ap.add_argument("--record", help="write the recorded queries here (JSON lines)")
    args = ap.parse_args()
    if args.queries:
        with open(args.queries) as f:
            queries = [json.loads(line) for line in f]
    else:
        queries = record()
    if args.record:
        with open(args.record, "w") as f:
            f.writelines(json.dumps(q) + "\n" for q in queries)
    py, py_cpu = python_child(queries)
    zi, zi_cpu = z3_in(queries)
    diffs = [(i, a, b) for i, (a, b) in enumerate(zip(py, zi)) if a != b]
    for i, a, b in diffs[:10]:
        print(f"query {i}: python child {a}, z3 -in {b}")
    print(f"{len(queries)} queries: {len(diffs)} differ (answer, reason or n)")
    print(f"child CPU over all queries: python child {py_cpu:.3f} s, z3 -in {zi_cpu:.3f} s")
    for name, s in startup().items():
        print(f"start-up alone, {name}: {s * 1000:.1f} ms CPU")


if __name__ == "__main__":
    main()
