"""CPU time of a schedule certificate against today's fixed-τ certificate (issue 13, performance).

Runs the installed CLI as subprocesses, interleaved (fixed, schedule, fixed, schedule, …), and
reports per variant the median CPU time (user + system of the CLI and every Z3 child it waited
for, from ``resource.getrusage(RUSAGE_CHILDREN)``) and wall time, and the ratio of the medians.
Target (issue 13): a schedule proof for a 7-node formula within 2× of the fixed-τ certify.

    python benchmarks/schedule_bench.py                          # dyck1_depth2 (7 nodes), 3 rounds
    python benchmarks/schedule_bench.py --rounds 5 --json benchmarks/results/schedule_bench.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(argv: list[str]) -> tuple[float, float, int]:
    """(CPU seconds of the process tree, wall seconds, exit code) of one CLI run."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), wall, p.returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--example", default=str(ROOT / "examples" / "dyck1_depth2.ltl"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--n-max", default="1000")
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args()
    cli = [sys.executable, "-m", "softhard.solver.cli", "certify", args.example, "--regime", "T", "--n-max",
           args.n_max, "--force", "--json"]
    with tempfile.TemporaryDirectory() as d:
        variants = {
            "fixed tau, --find-tau": cli + ["--find-tau", "-o", os.path.join(d, "a.json")],
            "lin schedule, --find-tau (all n)": cli + ["--schedule", "lin", "--find-tau", "-o", os.path.join(d, "b.json")],
            "fixed tau, --find-tau, --no-numeric": cli + ["--find-tau", "--no-numeric", "-o", os.path.join(d, "c.json")],
            "lin schedule, --find-tau, --no-numeric": cli + ["--schedule", "lin", "--find-tau", "--no-numeric",
                                                             "-o", os.path.join(d, "d.json")],
        }
        times: dict[str, list[tuple[float, float, int]]] = {k: [] for k in variants}
        for _ in range(args.rounds):
            for k, argv in variants.items():
                times[k].append(run(argv))
    load = os.getloadavg()[0]
    out = {"example": Path(args.example).name, "n_max": args.n_max, "rounds": args.rounds, "load_avg_at_end": load,
           "variants": {}}
    print("| variant | exit codes | median CPU s | median wall s |\n|---|---|---|---|")
    for k, rows in times.items():
        cpu = statistics.median(r[0] for r in rows)
        wall = statistics.median(r[1] for r in rows)
        out["variants"][k] = {"cpu_s": [r[0] for r in rows], "wall_s": [r[1] for r in rows],
                              "exit": [r[2] for r in rows], "median_cpu_s": cpu, "median_wall_s": wall}
        print(f"| {k} | {sorted(set(r[2] for r in rows))} | {cpu:.2f} | {wall:.2f} |")
    v = out["variants"]
    out["ratio_cpu_schedule_to_fixed"] = v["lin schedule, --find-tau (all n)"]["median_cpu_s"] / v["fixed tau, --find-tau"]["median_cpu_s"]
    out["ratio_cpu_schedule_to_fixed_no_numeric"] = (v["lin schedule, --find-tau, --no-numeric"]["median_cpu_s"]
                                                     / v["fixed tau, --find-tau, --no-numeric"]["median_cpu_s"])
    print(f"CPU ratio schedule/fixed: {out['ratio_cpu_schedule_to_fixed']:.2f} (with numeric runs), "
          f"{out['ratio_cpu_schedule_to_fixed_no_numeric']:.2f} (proofs only); load average {load:.2f}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
