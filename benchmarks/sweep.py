"""A parameter sweep in one process, against a baseline revision (ISSUE 16: "a bound checker is used
in loops — sweeps over formulas, parameters and lengths").

Each side runs, in one Python process, ``softhard certify FILE --regime R --find-tau --n-max N --eta E
[--no-numeric]`` for every ``N`` in ``--n-max`` and ``E`` in ``--eta`` through the command line's
``main(argv)`` — every job a new one, so no certify artefact can serve it (the new side also runs with
``SOFTHARD_CERTIFY_ARTEFACTS=0`` so that a repeat of the sweep does not hit the previous repeat's
artefacts); the derivation cache (a per-construction-shape cache) is warmed by one unmeasured sweep
per side.  Measured per job: CPU seconds of the process and its children (Z3), from
``resource.getrusage``; the first job includes the imports.  The sides alternate which runs first;
medians over ``--repeat`` sweeps.

    python benchmarks/sweep.py                                    # tomita4, regime T, 4 lengths x 2 etas
    python benchmarks/sweep.py --file examples/dyck1_depth2.ltl --repeat 3 --json out.json
    python benchmarks/sweep.py --no-numeric        # the proof alone (certify --no-numeric on both sides)

The baseline is the venv and checkout ``benchmarks/speed.py`` builds under its ``--cache`` folder
(run ``speed.py`` once first) or any given with ``--base-python``/``--base-dir``.  Bounded:
``(1 + --repeat) × 2`` processes, each killed after ``--timeout`` seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_REV = "e975ad76124e"
BENCH = Path(tempfile.gettempdir()) / "softhard-speed-bench"

WORKER = r"""
import json, os, resource, sys, tempfile
def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime
t0 = cpu()
from softhard.solver.cli import main
jobs = json.loads(sys.argv[1])
out, times, codes = tempfile.mkdtemp(), [], []
import contextlib, io
for i, argv in enumerate(jobs):
    before = t0 if i == 0 else cpu()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        codes.append(main([*argv, "-o", os.path.join(out, f"{i}.json"), "--force"]))
    times.append(cpu() - before)
print(json.dumps({"times": times, "codes": codes}))
"""


def run_side(python: str, cwd: Path, jobs: list[list[str]], cache: Path, timeout: float) -> dict:
    """One sweep in a fresh process of ``python`` (working directory ``cwd``); returns
    ``{"times": [CPU s per job], "codes": [exit status per job]}``.  Raises RuntimeError when the
    process fails."""
    env = {**os.environ, "SOFTHARD_CACHE_DIR": str(cache), "SOFTHARD_CERTIFY_ARTEFACTS": "0"}
    p = subprocess.run([python, "-c", WORKER, json.dumps(jobs)], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=timeout)
    lines = p.stdout.strip().splitlines()
    if p.returncode != 0 or not lines:
        raise RuntimeError(f"{python}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
    return json.loads(lines[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", default="examples/tomita4.ltl", help="a .ltl file (relative to each checkout)")
    ap.add_argument("--regime", default="T")
    ap.add_argument("--n-max", nargs="+", default=["1000", "100000", "1000000", "10000000"])
    ap.add_argument("--eta", nargs="+", default=["1/4", "1/8"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--base-python", default=str(BENCH / f"venv-{DEFAULT_REV}" / "bin" / "python"))
    ap.add_argument("--base-dir", type=Path, default=BENCH / f"checkout-{DEFAULT_REV}")
    ap.add_argument("--json", type=Path, help="write every measurement here")
    ap.add_argument("--no-numeric", action="store_true",
                    help="certify without the numeric confirmation on both sides (the proof alone)")
    a = ap.parse_args()
    if not Path(a.base_python).exists() or not a.base_dir.is_dir():
        ap.error(f"no baseline at {a.base_python} / {a.base_dir}: run benchmarks/speed.py once, or give "
                 "--base-python and --base-dir")
    jobs = [["certify", a.file, "--regime", a.regime, "--find-tau", "--n-max", n, "--eta", e]
            + (["--no-numeric"] if a.no_numeric else []) for e in a.eta for n in a.n_max]
    sides = {"base": (a.base_python, a.base_dir), "new": (sys.executable, ROOT)}
    caches = {s: Path(tempfile.mkdtemp(prefix=f"sweep-{s}-")) for s in sides}
    runs: dict[str, list[dict]] = {"base": [], "new": []}
    for r in range(a.repeat + 1):
        for side in (("base", "new") if r % 2 == 0 else ("new", "base")):
            res = run_side(*sides[side], jobs, caches[side], a.timeout)
            if r:
                runs[side].append(res)
            print(f"sweep {r}{' (warm-up)' if not r else ''} {side}: {sum(res['times']):.2f} s CPU, "
                  f"exit codes {res['codes']}", file=sys.stderr)
    summary = {}
    for side, rs in runs.items():
        first = statistics.median(x["times"][0] for x in rs)
        later = statistics.median(t for x in rs for t in x["times"][1:])
        total = statistics.median(sum(x["times"]) for x in rs)
        summary[side] = {"first_job_with_imports_s": first, "later_job_median_s": later, "sweep_total_s": total}
    print(f"{len(jobs)} jobs ({a.file}, regime {a.regime}, n_max {a.n_max}, eta {a.eta}"
          f"{', --no-numeric' if a.no_numeric else ''}), "
          f"medians of {a.repeat} sweeps, CPU s")
    for key in ("first_job_with_imports_s", "later_job_median_s", "sweep_total_s"):
        b, n = summary["base"][key], summary["new"][key]
        print(f"{key:26s} base {b:7.2f}  new {n:7.2f}  base/new {b / n:5.2f}")
    if a.json:
        a.json.write_text(json.dumps({"jobs": jobs, "runs": runs, "summary": summary,
                                      "load_avg_at_end": os.getloadavg()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
