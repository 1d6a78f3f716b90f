"""User and system CPU, minor page faults and peak memory of a formula certify's numeric stage
(ISSUE 16, "numeric, third pass"): in a fresh process, build and search as ``certify`` does
(regime T, ``--n-max 10^6 --eta 1/4 --find-tau``), then ``resource.getrusage`` around the first
:func:`softhard.solver.formula_numeric.numeric_section` call — the system time is the page faults
of its arrays.  Run from a checkout's root with that checkout's Python, alternating checkouts:

    python /path/to/benchmarks/numeric_faults.py dyck1_depth2

Prints one line.  Bounded: one search and one numeric confirmation."""

import resource
import sys

import mpmath

from softhard.bounds.params import Params
from softhard.constructions.parse import load_spec
from softhard.solver import certificate as C
from softhard.solver.check import ProofCache, _stop_all
from softhard.solver.pipeline import build_formula


def main() -> None:
    ex = sys.argv[1] if len(sys.argv) > 1 else "dyck1_depth2"
    with mpmath.workdps(30):
        c = build_formula(load_spec(f"examples/{ex}.ltl"), Params(regime="T", eta="1/4"))
        found = C.search_values(c, 1, 10**6, False, 20.0, ("tau",), ProofCache())
        inv, _ = C.searched_params(c, found, 1, 10**6, False, ("tau",))
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        C.numeric_section(c, 10**6, inv, {})
        r1 = resource.getrusage(resource.RUSAGE_SELF)
    _stop_all()
    print(f"{ex} user {r1.ru_utime - r0.ru_utime:.3f} sys {r1.ru_stime - r0.ru_stime:.3f} "
          f"minflt {r1.ru_minflt - r0.ru_minflt} maxrss_MB {r1.ru_maxrss // 1024}")


if __name__ == "__main__":
    main()
