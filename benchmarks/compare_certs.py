"""Certificates before and after a change: every formula of examples/ in regimes T and U (ISSUE 16,
fifth pass).  Bounded: 24 certifies at n_max = 10^4 (--find-tau, the command line's default).

    python benchmarks/compare_certs.py --out after.json            # this checkout (the installed softhard)
    python benchmarks/compare_certs.py --compare before.json after.json

Per (formula, regime) the SHA-256 of the certificate's canonical JSON with the fields that vary
from run to run removed (``created``, ``tool``, ``times``, ``hashes`` and every ``seconds``), or the
one-line error of a certify that refuses the input (e.g. parity outside regime P).  To run it on
another revision, check that revision out and run it with that checkout's ``softhard`` importable
(``PYTHONPATH`` pointing at a directory whose ``softhard`` package maps to the checkout, or its own
venv).  The derivation cache is used as configured (``SOFTHARD_CACHE=0``: off; run once cold and
once warm to compare those too).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

VARYING = {"created", "tool", "times", "hashes", "seconds"}
N_MAX = 10_000


def _strip(x):
    if isinstance(x, dict):
        return {k: _strip(v) for k, v in x.items() if k not in VARYING}
    if isinstance(x, list):
        return [_strip(v) for v in x]
    return x


def run(examples: Path) -> dict:
    """``{"formula.ltl/T": sha256 or "error: ..."}`` for every example and regime T, U."""
    from softhard.bounds.params import Params
    from softhard.constructions.errors import SofthardError
    from softhard.constructions.parse import load_spec
    from softhard.solver.certificate import certify
    from softhard.solver.pipeline import build_formula

    out = {}
    for f in sorted(examples.glob("*.ltl")):
        for regime in ("T", "U"):
            key = f"{f.name}/{regime}"
            try:
                c = build_formula(load_spec(str(f)), Params(regime=regime, beta="1/4", eta="1/4"))
                cert = certify(c, n_max=N_MAX, find_tau=True)
                text = json.dumps(_strip(cert), sort_keys=True, separators=(",", ":"), allow_nan=False)
                out[key] = hashlib.sha256(text.encode()).hexdigest()
            except SofthardError as e:
                out[key] = f"error: {e.__class__.__name__}: {e}"
            print(key, out[key][:70], file=sys.stderr, flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write this checkout's hashes here")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    ap.add_argument("--examples", default=str(Path(__file__).resolve().parent.parent / "examples"))
    a = ap.parse_args()
    if a.compare:
        before, after = (json.loads(Path(p).read_text()) for p in a.compare)
        diff = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        for k in sorted(set(before) | set(after)):
            print(f"{k:28s} {'same' if k not in diff else 'DIFFERENT'}  {str(after.get(k))[:16]}")
        print(f"{len(before)} before, {len(after)} after, {len(diff)} different")
        return 1 if diff else 0
    res = run(Path(a.examples))
    if a.out:
        Path(a.out).write_text(json.dumps(res, indent=1, sort_keys=True))
    else:
        print(json.dumps(res, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
