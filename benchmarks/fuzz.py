"""Fuzz the ``softhard`` command line in process on many inputs (issue 15) and record what happened.

The inputs are those of ``tests/solver/test_fuzz_cli.py`` (``tests/fuzz_inputs.py``: formulas,
words, option values, mutated model files and certificates), drawn by hypothesis without
shrinking, with ``big=True``: huge lengths, counts and limits for every command too (each must be
refused by a budget or handled within it).  Every call has a wall-clock deadline (``--deadline``).

Records, in ``--json FILE`` (default ``benchmarks/fuzz.json``): inputs, exit statuses (0/1/2/3),
tracebacks, every failing input (traceback, status outside {0, 1, 2}, multi-line bad-input
message, non-strict ``--json`` output, deadline exceeded), the slowest inputs, per-command counts,
wall and CPU seconds.  Plain progress lines on stderr every ``--every`` inputs.

    python benchmarks/fuzz.py --inputs 100000            # the recorded run (benchmarks/README.md)
    python benchmarks/fuzz.py --inputs 2000 --seed 1     # a quick one

The record is rewritten every ``--every`` inputs (``"partial": true``), so a stopped run keeps
what it measured.  Exit status 0 when no input failed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fuzz_inputs import argvs, run_cli, tmp_path_for  # noqa: E402
from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

from softhard.solver.cli import main  # noqa: E402


def base_certificates() -> tuple[str, ...]:
    """A formula and a Tracr certificate, certified here, for verify to be fed mutations of."""
    out = []
    for name, argv in (("formula", ["certify", "Y a", "--alphabet", "ab", "--tau", "1/100", "--n-max", "6",
                                    "--no-numeric"]),
                       ("tracr", ["certify", "--tracr", str(ROOT / "examples" / "tracr" / "hist"), "--no-numeric"])):
        path = tmp_path_for(f"base-{name}.json")
        with contextlib.redirect_stdout(io.StringIO()):
            code = main([*argv, "-o", str(path), "--force"])
        if code != 0:
            raise SystemExit(f"could not certify the {name} base certificate (exit {code})")
        out.append(path.read_text())
    return tuple(out)


def main_(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inputs", type=int, default=100_000, help="number of command lines (default 10^5)")
    ap.add_argument("--seed", type=int, default=0, help="hypothesis seed (default 0)")
    ap.add_argument("--deadline", type=float, default=120.0, help="per-call wall-clock deadline, s (default 120)")
    ap.add_argument("--report-slow", type=float, default=10.0, help="print each input slower than this, s")
    ap.add_argument("--every", type=int, default=1000, help="a progress line every this many inputs")
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "fuzz.json"), help="where to write the record")
    args = ap.parse_args(argv)

    certs = base_certificates()
    commit = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True,
                            text=True).stdout.strip()
    exits: Counter = Counter()
    commands: Counter = Counter()
    seconds: Counter = Counter()
    failures: list[dict] = []
    slowest: list[tuple[float, list[str], int | None]] = []
    tracebacks = 0
    t0, c0 = time.perf_counter(), time.process_time()

    @settings(max_examples=args.inputs, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(argv=argvs(certs, big=True))
    def fuzz(argv):
        nonlocal tracebacks
        o = run_cli(argv, deadline_s=args.deadline)
        n = sum(exits.values()) + 1
        exits[str(o.code)] += 1
        commands[argv[0] if argv else "<none>"] += 1
        seconds[argv[0] if argv else "<none>"] += o.seconds
        if o.problem:
            # a printed traceback or an exception escaping main; an internal error (exit 3) is one line
            # that only mentions "--debug ... prints the traceback" (counted in exits["3"])
            tracebacks += o.problem.startswith(("a traceback was printed", "escaped main"))
            if len(failures) < 200:
                failures.append({"argv": argv, "exit": o.code, "problem": o.problem[-2000:], "stderr": o.err[-1000:]})
        if o.seconds > args.report_slow:
            print(f"slow: {o.seconds:.1f} s, exit {o.code}: {argv!r}", file=sys.stderr, flush=True)
        slowest.append((o.seconds, argv, o.code))
        slowest.sort(key=lambda t: -t[0])
        del slowest[10:]
        if n % args.every == 0:
            print(f"{n} inputs, {time.perf_counter() - t0:.0f} s: exits {dict(exits)}, failures {len(failures)}, "
                  f"slowest {slowest[0][0]:.1f} s", file=sys.stderr, flush=True)
            write(partial=True)

    def write(partial: bool) -> dict:
        record = {
            "command": "python benchmarks/fuzz.py " + " ".join(sys.argv[1:] if argv is None else argv),
            "commit": commit, "partial": partial,
            "inputs": sum(exits.values()), "exits": dict(sorted(exits.items())), "tracebacks": tracebacks,
            "failures": len(failures), "failing_inputs": failures, "commands": dict(commands),
            "seconds_by_command": {k: round(v, 1) for k, v in seconds.items()},
            "slowest": [{"seconds": round(s, 3), "argv": a, "exit": c} for s, a, c in slowest],
            "wall_s": round(time.perf_counter() - t0, 1), "cpu_s": round(time.process_time() - c0, 1),
            "load_avg": os.getloadavg()[0], "python": sys.version.split()[0],
        }
        Path(args.json).write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
        return record

    seed(args.seed)(fuzz)()
    record = write(partial=False)
    print(f"{record['inputs']} inputs: exits {record['exits']}, tracebacks {tracebacks}, failures {len(failures)}, "
          f"slowest {slowest[0][0]:.2f} s ({slowest[0][1]!r}); {record['wall_s']} s wall, {record['cpu_s']} s CPU; "
          f"written to {args.json}")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main_())
