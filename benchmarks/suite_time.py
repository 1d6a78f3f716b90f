"""Time the test suite together with this machine's speed (ISSUE 16, item 4: "≤ 5 min wall on a
quiet 2-core machine").

The machines here are shared with other virtual machines, and their speed drifts through the day:
the same suite on the same code took 157.6 s wall (pytest user + sys ~300 s) at 08:24 UTC on
2026-12-03 and 286.6 s (~550 s) at 07:46, so a suite time alone says little about the suite.  This
script runs a fixed CPU *probe* right before and right after the suite and reports both with it:
a suite time is then read against the probe measured around it.

    python benchmarks/suite_time.py                    # the suite in this checkout, 2 probes
    python benchmarks/suite_time.py --probe-only       # the probe alone (e.g. every few minutes)
    python benchmarks/suite_time.py --json out.json    # also write the numbers (strict JSON)
    python benchmarks/suite_time.py --cold             # every cache empty, as on CI's fresh machine

The probe (:func:`probe`) is a fixed mix of what the suite spends its CPU on — pure-Python loops,
dict and list work, ``json`` encoding and decoding with sorted keys, exact ``Fraction``
arithmetic and small NumPy array operations — in one process; its result is the median CPU
seconds of 3 runs (about 1 s each on a quiet machine).  The suite is the README's test command
(``python -m pytest -q -n auto``) in the checkout given by ``--repo`` (default: this one), run as a
child process: its wall time (``time.perf_counter``) and its CPU (user + sys of the child and every
descendant it waited for: ``os.wait4``'s resource usage).  Nothing here is asserted; the numbers are
recorded in benchmarks/README.md with the time of day.

``--cold`` runs the suite as CI's clean machine does: the caches a run of the suite fills and a
later run reads — softhard's derivation store (bound texts, SMT-LIB2 query texts, substitutions,
LaTeX, replay artefacts and the schema memo: ``$XDG_CACHE_HOME/softhard``), JAX's compilation cache
of the Tracr tests (``JAX_COMPILATION_CACHE_DIR``), numba's compiled kernels (``NUMBA_CACHE_DIR``)
and matplotlib's font cache (under ``XDG_CACHE_HOME``) — all point into one new empty temporary
directory, removed afterwards (``SOFTHARD_CACHE_DIR`` is unset for the child).  Without it the
suite reads whatever the previous runs left there (a "warm" run).
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
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SUITE = [sys.executable, "-m", "pytest", "-q", "-n", "auto"]


def _probe_once() -> float:
    """CPU seconds (``time.process_time``) of one run of the fixed workload."""
    t0 = time.process_time()
    s = 0
    for i in range(2_000_000):  # pure-Python integer loop
        s += i * i % 7
    doc = {f"k{i}": {"v": [j / 7 for j in range(20)], "s": str(i), "n": None} for i in range(400)}
    for _ in range(15):  # canonical JSON round trips (certificates, verify's texts)
        doc = json.loads(json.dumps(doc, sort_keys=True, separators=(",", ":")))
    q = Fraction(0)
    for i in range(1, 20_000):  # exact rationals (bounds, claims)
        q += Fraction(1, i * i + 1)
    rng = np.random.default_rng(0)
    a = rng.random((64, 500))
    for _ in range(400):  # small NumPy operations (the engines' per-call work)
        e = np.exp(a - a.max(axis=1, keepdims=True))
        e /= e.sum(axis=1, keepdims=True)
    if s < 0 or q < 0 or not np.isfinite(e).all():  # keeps the work live; never true
        raise AssertionError("probe arithmetic")
    return time.process_time() - t0


def probe(repeat: int = 3) -> float:
    """Median CPU seconds of ``repeat`` runs of the probe workload (module docstring).  Raises
    ValueError for ``repeat < 1``."""
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    return statistics.median(_probe_once() for _ in range(repeat))


def cold_env(root: Path) -> dict[str, str]:
    """The environment of a ``--cold`` run: this one with every cache the suite reads back pointed
    into ``root`` (an empty directory; module docstring) and ``SOFTHARD_CACHE_DIR`` removed."""
    env = {k: v for k, v in os.environ.items() if k != "SOFTHARD_CACHE_DIR"}
    for var, sub in (("XDG_CACHE_HOME", "xdg"), ("JAX_COMPILATION_CACHE_DIR", "jax"), ("NUMBA_CACHE_DIR", "numba")):
        (root / sub).mkdir()
        env[var] = str(root / sub)
    return env


def run_suite(repo: Path, extra: list[str], env: dict[str, str] | None = None) -> dict:
    """Run the suite in ``repo`` as a child process (``env``: its environment, default this one);
    returns ``{"returncode", "wall_s", "cpu_s"}`` (``cpu_s``: user + sys of the child and the
    descendants it waited for).  Raises OSError when the interpreter cannot be started."""
    t0 = time.perf_counter()
    p = subprocess.Popen([*SUITE, *extra], cwd=repo, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    return {"returncode": p.returncode, "wall_s": round(wall, 2), "cpu_s": round(ru.ru_utime + ru.ru_stime, 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", type=Path, default=REPO, help="checkout to run the suite in (default: this one)")
    ap.add_argument("--probe-only", action="store_true", help="run the probe only (no suite)")
    ap.add_argument("--cold", action="store_true", help="every cache the suite reads back empty, as on a new machine")
    ap.add_argument("--json", type=Path, help="also write the numbers to this file (strict JSON)")
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    a = ap.parse_args(argv)
    out: dict = {"utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                 "load_average": [round(x, 2) for x in os.getloadavg()], "probe_before_s": round(probe(), 3)}
    print(f"probe: {out['probe_before_s']:.3f} s CPU (load average {out['load_average'][0]})", flush=True)
    if not a.probe_only:
        out["caches"] = "cold" if a.cold else "warm"
        if a.cold:
            with tempfile.TemporaryDirectory(prefix="softhard-cold-") as root:
                out["suite"] = run_suite(a.repo, a.pytest_args, cold_env(Path(root)))
        else:
            out["suite"] = run_suite(a.repo, a.pytest_args)
        out["probe_after_s"] = round(probe(), 3)
        s = out["suite"]
        print(f"suite ({out['caches']} caches): {s['wall_s']:.1f} s wall, {s['cpu_s']:.1f} s CPU, exit {s['returncode']}; "
              f"probe after: {out['probe_after_s']:.3f} s CPU")
    if a.json:
        a.json.write_text(json.dumps(out, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    return int(out.get("suite", {}).get("returncode", 0) != 0)


if __name__ == "__main__":
    sys.exit(main())
