"""Wall time of `softhard certify` and `softhard verify` against formula size and n_max.

Runs the installed CLI as a subprocess (so the times include start-up and imports, as a user sees
them), for every example in examples/ (formula size = number of attention nodes), in both regimes,
at several n_max, with --find-tau and the default numeric confirmation.  Prints a Markdown table
and the median of --repeat runs (each certify live: ``SOFTHARD_CERTIFY_ARTEFACTS=0``).  Targets
(issue 3): certify on the largest example at n_max = 10^6 ≤ 5 s wall, verify ≤ 2 s, on a 2-core machine.

    python benchmarks/certify_bench.py                 # all examples, n_max = 10^3 … 10^6
    python benchmarks/certify_bench.py --quick         # the largest example at 10^6 only
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


#: every certify live: a repeat would otherwise come from the certify artefact the first run recorded
#: (softhard.solver.certify_memo), whose ``times`` has no ``search_s``/``solve_s``/``numeric_s``
LIVE_ENV = {**os.environ, "SOFTHARD_CERTIFY_ARTEFACTS": "0"}


def timed(argv: list[str]) -> tuple[float, int, str]:
    t0 = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True, env=LIVE_ENV)
    return time.perf_counter() - t0, p.returncode, p.stdout + p.stderr


def nodes_of(path: Path) -> int:
    """Number of attention nodes (regime U, which every example supports except parity: then P)."""
    for r in ("U", "P"):
        p = subprocess.run([sys.executable, "-m", "softhard.solver.cli", "bound", str(path), "--json", "--n-max", "10",
                            "--regime", r], capture_output=True, text=True)
        if p.returncode == 0:
            return len(json.loads(p.stdout)["nodes"])
    return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only the largest example at n_max = 10^6")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--n-max", type=int, nargs="+", default=[10**3, 10**4, 10**5, 10**6])
    args = ap.parse_args()
    cli = [sys.executable, "-m", "softhard.solver.cli"]
    examples = sorted(EXAMPLES.glob("*.ltl"))
    sizes = {p: nodes_of(p) for p in examples}
    largest = max(examples, key=lambda p: sizes[p])
    plan = []
    if args.quick:
        plan = [(largest, r, 10**6) for r in ("T", "U")]
    else:
        for p in examples:
            for r in ("T", "U", "P"):
                for nm in args.n_max:
                    plan.append((p, r, nm))
    rows = []
    with tempfile.TemporaryDirectory() as td:
        for p, r, nm in plan:
            out = Path(td) / f"{p.stem}-{r}-{nm}.json"
            ct, vt = [], []
            for _ in range(args.repeat):
                t, rc, txt = timed([*cli, "certify", str(p), "--regime", r, "--n-max", str(nm), "--eta", "1/4",
                                    "--find-tau", "-o", str(out), "--force"])
                if rc == 2:  # this example does not support this regime (e.g. parity needs regime P)
                    break
                if rc != 0:
                    raise SystemExit(f"certify failed on {p.name} {r} {nm}:\n{txt}")
                ct.append(t)
                t, rc, txt = timed([*cli, "verify", str(out)])
                if rc != 0:
                    raise SystemExit(f"verify failed on {p.name} {r} {nm}:\n{txt}")
                vt.append(t)
            if not ct:
                print(f"{p.stem:14s} {r}: not supported in this regime (exit 2)", flush=True)
                continue
            cert = json.loads(out.read_text())
            rows.append((p.stem, sizes[p], r, nm, statistics.median(ct), statistics.median(vt),
                         cert["times"]["search_s"] + cert["times"]["solve_s"], cert["times"]["numeric_s"]))
            print(f"{p.stem:14s} nodes={sizes[p]:2d} {r} n_max={nm:>8d}  certify {rows[-1][4]:6.2f} s  "
                  f"verify {rows[-1][5]:5.2f} s  (solve {rows[-1][6]:.2f} s, numeric {rows[-1][7]:.2f} s)", flush=True)
    print("\n| example | attention nodes | regime | n_max | certify (s) | verify (s) | solver (s) | numeric (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.0e} | {r[4]:.2f} | {r[5]:.2f} | {r[6]:.2f} | {r[7]:.2f} |")
    big = [r for r in rows if r[0] == largest.stem and r[3] == 10**6]
    for r in big:
        print(f"\nlargest example {r[0]} ({r[1]} nodes), regime {r[2]}, n_max = 10^6: certify {r[4]:.2f} s "
              f"(target ≤ 5 s: {'met' if r[4] <= 5 else f'missed by {r[4] - 5:.2f} s'}), verify {r[5]:.2f} s "
              f"(target ≤ 2 s: {'met' if r[5] <= 2 else f'missed by {r[5] - 2:.2f} s'})")


if __name__ == "__main__":
    main()
