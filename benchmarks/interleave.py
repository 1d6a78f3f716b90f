"""Interleaved A/B of a benchmark script that prints one JSON line of CPU seconds (e.g.
``certify_stages.py``): the script runs in a base checkout (its own Python) and in this one,
alternating which side goes first, and the median of each key is reported with the ratio base/new.

    python benchmarks/interleave.py --base-python /path/venv-base/bin/python --base-dir /path/base-checkout \\
        --repeat 6 benchmarks/certify_stages.py certify examples/tomita4.ltl

The script path and its arguments are resolved in each checkout (run with that checkout as the
working directory), so each side measures its own code.  Bounded: ``2 × --repeat`` runs, each
killed after ``--timeout`` seconds (default 300).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-python", required=True, help="the Python (venv) in which the base checkout is installed")
    ap.add_argument("--base-dir", required=True, type=Path, help="the base checkout (working directory of its runs)")
    ap.add_argument("--repeat", type=int, default=6)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("script", nargs=argparse.REMAINDER, help="script and arguments (relative to each checkout)")
    a = ap.parse_args()
    if not a.script:
        ap.error("give the script to run")
    sides = {"base": (a.base_python, a.base_dir), "new": (sys.executable, ROOT)}
    res: dict[str, list[dict]] = {"base": [], "new": []}
    for r in range(a.repeat):
        for side in (("base", "new") if r % 2 == 0 else ("new", "base")):
            exe, cwd = sides[side]
            p = subprocess.run([exe, *a.script], cwd=cwd, capture_output=True, text=True, timeout=a.timeout)
            lines = p.stdout.strip().splitlines()
            if p.returncode != 0 or not lines:
                print(f"{side} run {r} failed (exit {p.returncode}): {p.stderr.strip()[-300:]}", file=sys.stderr)
                return 1
            res[side].append(json.loads(lines[-1]))
    print(f"{a.repeat} interleaved runs per side, medians of CPU seconds")
    for k in res["base"][0]:
        b = statistics.median(x[k] for x in res["base"])
        n = statistics.median(x[k] for x in res["new"])
        print(f"{k:22s} base {b:7.3f}  new {n:7.3f}  base/new {b / n if n else float('nan'):5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
