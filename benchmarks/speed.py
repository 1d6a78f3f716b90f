"""ISSUE 16's speed table, side by side against a git revision, in one process tree.

Every row of the issue's table is run for both checkouts — the one this script lives in (with the
Python that runs the script, i.e. its venv) and a baseline revision (default ``e975ad7``),
checked out with ``git worktree add --detach`` into a cache directory and installed into its own
venv there (``pip install -e``; done once, then reused).  The rows are interleaved (repeat r:
row 1 base, row 1 new, row 2 base, … with the base/new order alternating between repeats) so
that load from other processes hits both sides alike, and the **CPU time** of each child
(``resource.getrusage(RUSAGE_CHILDREN)`` user + system, which includes the Z3 children each
certify forks) is recorded.  Both checkouts are byte-compiled first (``compileall``) and run with
``PYTHONDONTWRITEBYTECODE`` removed from the environment, as a user's installation runs.  Reported: per row the median CPU seconds of each side, the ratio
base/new, and whether it meets the issue's goal ratio ("done when": certify ≥ 6×, verify ≥ 7×,
``--help`` ≥ 3.5×, confirmation ≥ 4×).

The confirmation row is a worker (this script with ``--kernel-worker``, run by each side's
Python): the ``!a S b`` selection head of the 10-subformula construction of ``confirm_1e6.py``
(regime T, its required 1/τ at n) on the structured path for one random word of length n
(default 10^6), median process CPU time of ``--kernel-reps`` calls, divided by n: nanoseconds
per position per selection head.

    python benchmarks/speed.py                          # 5 repeats against e975ad7
    python benchmarks/speed.py --rev e975ad7 --repeat 3 --json benchmarks/speed.json
    python benchmarks/speed.py --rows help verify       # a subset of the rows
    python benchmarks/speed.py --cold                   # the new side without the derivation cache
    python benchmarks/speed.py --live-certify           # the new side's certify rows live (no certify artefact)

The certify rows of the new side are certify artefacts (docs/certificates.md) from the second run of
a job on: the table says per row how many of its runs were; ``--live-certify`` measures a new job's
certify instead.

Two rows beyond the issue's table, ``verify_tracr`` and ``verify_model``, verify the certificates
their certify rows wrote (against verify's goal ratio, 7×).

Bounded: each child is killed after ``--timeout`` seconds (default 120; a killed run is
reported as such, never as a time).  The test-suite row of the issue is not run here (~9 min
per side); see benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_REV = "e975ad7"

#: (key, argv after ``softhard``, goal ratio base/new from the issue's "done when")
ROWS = [
    ("help", ["--help"], 3.5),
    ("certify_tomita4", ["certify", "examples/tomita4.ltl", "--regime", "T", "--n-max", "1000000", "--eta", "1/4",
                         "--find-tau", "-o", "{out}/tomita4.json", "--force"], 6.0),
    ("verify", ["verify", "{out}/tomita4.json"], 7.0),
    ("certify_dyck1_depth2", ["certify", "examples/dyck1_depth2.ltl", "--regime", "T", "--n-max", "1000000", "--eta",
                              "1/4", "--find-tau", "-o", "{out}/dyck.json", "--force"], 6.0),
    ("certify_tracr", ["certify", "--tracr", "examples/tracr/frac_prevs", "-o", "{out}/frac.json", "--force"], 6.0),
    ("verify_tracr", ["verify", "{out}/frac.json"], 7.0),  # not in the table: verify's goal (run after its certify)
    ("certify_model", ["certify", "--model", "examples/models/ab_subsequence.json", "--n-max", "12", "--epsilon", "1/4",
                       "--find-tau", "-o", "{out}/ab.json", "--force"], 6.0),
    ("verify_model", ["verify", "{out}/ab.json"], 7.0),  # likewise
    ("confirmation_ns", None, 4.0),
]
ROW_KEYS = [r[0] for r in ROWS]


# ------------------------------------------------------------------------------------------
# the kernel worker (runs inside either checkout's venv; imports whichever layout it has)


def kernel_worker(n: int, reps: int) -> None:
    import time

    import numpy as np

    from softhard.bounds.derive import derive, required_inv_tau
    from softhard.constructions.compile import compile_formula
    from softhard.constructions.parse import parse_formula
    from softhard.constructions.weights import build_transformer
    try:
        from softhard.constructions.engine import forward, run_head
    except ImportError:  # the layout before the engine had its own module
        from softhard.constructions.model import forward, run_head

    g = compile_formula(parse_formula("(a U b) | ((!a S b) & H (a | Y b))"), ["a", "b"])
    m = build_transformer(g, "T")
    inv_tau = float(max(required_inv_tau(nb.leak, n_value=n) for nb in derive(g, "T").values()))
    tok = np.random.default_rng(0).integers(1, 3, size=(1, n))
    for li, blk in enumerate(m.blocks):
        for h in blk.heads:
            if h.name == "!a S b":
                x = forward(m, tok, mode="hard", keep_residuals=True).residuals[li]
                break
        else:
            continue
        break
    run_head(h, x, soft=True, inv_tau=inv_tau, path="structured")  # warm-up (and any compilation)
    ts = []
    for _ in range(reps):
        t0 = time.process_time()
        run_head(h, x, soft=True, inv_tau=inv_tau, path="structured")
        ts.append(time.process_time() - t0)
    print(json.dumps({"ns_per_position": statistics.median(ts) / n * 1e9, "n": n, "inv_tau": inv_tau}))


# ------------------------------------------------------------------------------------------
# the baseline checkout


def baseline(rev: str, cache: Path) -> tuple[Path, Path]:
    """(checkout, venv bin dir) of ``rev``, created on first use under ``cache``."""
    full = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", rev + "^{commit}"], capture_output=True,
                          text=True, check=True).stdout.strip()
    tree, venv = cache / f"checkout-{full[:12]}", cache / f"venv-{full[:12]}"
    for stale in (tree, venv):  # a link left by an earlier machine state whose target is gone
        if stale.is_symlink() and not stale.exists():
            stale.unlink()
    subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], check=True, capture_output=True)
    if not tree.exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), full], check=True,
                       capture_output=True)
    marker = venv / ".installed"
    stamp = f"{full} {tree.resolve()}\n"  # the editable install points at this very checkout
    if not marker.exists() or marker.read_text() != stamp:
        if venv.is_symlink():
            venv.unlink()
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "-e", str(tree)], check=True)
        marker.write_text(stamp)
    return tree, venv / "bin"


# ------------------------------------------------------------------------------------------
# measuring


def from_artefact(path: Path) -> bool:
    """Whether the certificate at ``path`` came from a certify artefact (its ``times`` has
    ``artefact_s``: docs/certificates.md, "Certify artefacts"); False for a missing or unreadable file."""
    try:
        return "artefact_s" in json.loads(path.read_text())["times"]
    except (OSError, ValueError, KeyError, TypeError):
        return False


def cpu_of(argv: list[str], cwd: Path, timeout: float, env: dict | None = None) -> tuple[float | None, int, str]:
    """CPU seconds (user + system, children included) of one child run, its exit status and the
    tail of its output; ``None`` seconds when it was killed at ``timeout``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, -9, "timeout"
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, p.returncode, (p.stdout + p.stderr)[-300:]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", default=DEFAULT_REV, help=f"baseline git revision (default {DEFAULT_REV})")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rows", nargs="+", choices=ROW_KEYS, default=ROW_KEYS)
    ap.add_argument("--kernel-n", type=int, default=1_000_000)
    ap.add_argument("--kernel-reps", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "softhard-speed-bench")
    ap.add_argument("--json", type=Path, help="write every measurement here")
    ap.add_argument("--cold", action="store_true",
                    help="run the new side with SOFTHARD_CACHE=0 (no on-disk derivation cache: every derivation live)")
    ap.add_argument("--live-certify", action="store_true",
                    help="run the new side with SOFTHARD_CERTIFY_ARTEFACTS=0: every certify live (a new job), the "
                         "derivation cache and verify's replay artefacts still on")
    ap.add_argument("--kernel-worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.kernel_worker:
        return kernel_worker(args.kernel_n, args.kernel_reps)
    if args.repeat < 1 or args.repeat > 50 or args.kernel_n < 1000 or args.kernel_n > 2_000_000:
        raise SystemExit("--repeat must be in [1, 50] and --kernel-n in [1000, 2000000]")

    args.cache.mkdir(parents=True, exist_ok=True)
    base_tree, base_bin = baseline(args.rev, args.cache)
    sides = {"base": (base_tree, base_bin), "new": (ROOT, Path(sys.executable).parent)}
    out = Path(tempfile.mkdtemp(prefix="speed-out-"))
    # bytecode as a user has it: PYTHONDONTWRITEBYTECODE (set in some sandboxes) would make every run
    # compile every module of ours from source, ~0.3 s CPU per run on either side
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for tree, bindir in sides.values():
        subprocess.run([str(bindir / "python"), "-m", "compileall", "-q", str(tree / "bounds"), str(tree / "constructions"),
                        str(tree / "solver"), str(tree / "softhard")], env=env, capture_output=True, check=True)
    new_env = dict(env, SOFTHARD_CACHE="0") if args.cold else dict(env)
    if args.live_certify:
        new_env["SOFTHARD_CERTIFY_ARTEFACTS"] = "0"
    envs = {"base": env, "new": new_env}
    rows = [r for r in ROWS if r[0] in args.rows]
    for v, c in (("verify", "certify_tomita4"), ("verify_tracr", "certify_tracr"), ("verify_model", "certify_model")):
        if v in args.rows and c not in args.rows:  # a verify row needs its certificate
            rows.insert(rows.index(next(r for r in rows if r[0] == v)), next(r for r in ROWS if r[0] == c))
    res: dict = {k: {"base": [], "new": [], "exit": {"base": [], "new": []}, "from_artefact": []} for k, _, _ in rows}
    for rep in range(args.repeat):
        order = ("base", "new") if rep % 2 == 0 else ("new", "base")
        for key, argv, _ in rows:
            for side in order:
                tree, bindir = sides[side]
                odir = out / side
                odir.mkdir(exist_ok=True)
                if argv is None:
                    cmd = [str(bindir / "python"), str(Path(__file__).resolve()), "--kernel-worker", "--kernel-n",
                           str(args.kernel_n), "--kernel-reps", str(args.kernel_reps)]
                    _, rc, text = cpu_of(cmd, tree, args.timeout, envs[side])
                    val = json.loads(text.strip().splitlines()[-1])["ns_per_position"] if rc == 0 else None
                else:
                    cmd = [str(bindir / "softhard")] + [a.format(out=odir) for a in argv]
                    val, rc, text = cpu_of(cmd, tree, args.timeout, envs[side])
                    if side == "new" and "-o" in argv:  # a certify: did it come from a certify artefact?
                        res[key]["from_artefact"].append(from_artefact(Path(argv[argv.index("-o") + 1].format(out=odir))))
                if rc not in (0, 1):
                    print(f"{key} [{side}] exit {rc}: {text}", file=sys.stderr)
                res[key][side].append(val)
                res[key]["exit"][side].append(rc)
            print(f"repeat {rep + 1}/{args.repeat}: {key} base {res[key]['base'][-1]} new {res[key]['new'][-1]}",
                  file=sys.stderr, flush=True)

    def med(xs):
        xs = [x for x in xs if x is not None]
        return statistics.median(xs) if xs else None

    print(f"\nbaseline {args.rev} vs {ROOT.name} (HEAD{', derivation cache off' if args.cold else ''}"
          f"{', certify artefacts off' if args.live_certify else ''}), "
          f"{args.repeat} interleaved repeats, CPU medians; "
          f"load average at end {os.getloadavg()[0]:.2f}\n")
    print("| row | base | new | base/new | goal | met |")
    print("|---|---:|---:|---:|---:|---|")
    summary = {}
    for key, argv, goal in rows:
        b, n = med(res[key]["base"]), med(res[key]["new"])
        ratio = b / n if b and n else None
        unit = "ns" if argv is None else "s"
        fmt = (lambda v: "killed" if v is None else (f"{v:.1f} {unit}" if unit == "ns" else f"{v:.2f} {unit}"))
        met = ratio is not None and ratio >= goal
        summary[key] = {"base": b, "new": n, "ratio": ratio, "goal": goal, "met": met}
        hits = res[key]["from_artefact"]
        note = f" ({sum(hits)} of {len(hits)} from a certify artefact)" if hits else ""
        summary[key]["from_artefact"] = hits
        print(f"| {key}{note} | {fmt(b)} | {fmt(n)} | {'—' if ratio is None else f'{ratio:.2f}×'} | ≥ {goal}× | "
              f"{'**met**' if met else 'missed'} |")
    if args.json:
        args.json.write_text(json.dumps({"rev": args.rev, "repeat": args.repeat, "cold": args.cold,
                                         "live_certify": args.live_certify, "kernel_n": args.kernel_n,
                                         "machine": {"nproc": os.cpu_count(), "python": platform.python_version()},
                                         "load_avg_at_end": os.getloadavg()[0], "summary": summary, "raw": res},
                                        indent=1) + "\n")


if __name__ == "__main__":
    main()
