"""Identity of Tracr certificates across ``solver/tracr_answers._subs`` through the derivation cache
(ISSUE 16, thirteenth pass, branch ``tracr13``).

``_subs(expr, inv_tau)`` was ``sympify(expr).subs(tau, 1/inv_tau)`` (SymPy re-evaluates a bound's
``Max`` on every call); it is now :func:`softhard.bounds.cache.subs` of the same substitution (the
result remembered in process and on disk, rebuilt without evaluation on a hit).  For every Tracr
model given — the two examples in ``examples/tracr`` and the 13 programs of Tracr's library
(tests/tracr_lib.py, compiled into ``--exports`` when missing) — this script certifies three ways in
one process:

* ``live``: ``_subs`` replaced by the old ``.subs`` (the reference);
* ``cold``: the cached ``_subs`` with an empty disk layer (a new temporary ``SOFTHARD_CACHE_DIR``
  per model) and empty in-process layers — every substitution computed and stored;
* ``warm``: the in-process layers emptied again, so every substitution is decoded from disk.

It checks (1) every ``_subs`` result of ``cold`` and ``warm`` against the live ``.subs`` of the same
arguments (``==`` and ``srepr`` equal), and (2) the three certificates equal field by field, timing
fields aside (``benchmarks/numeric_identity.strip``: ``created``, ``tool``, ``times``, ``hashes``
and every ``seconds``/``*_s`` key).  Exit status 1 on any difference.

    python benchmarks/tracr_answers_identity.py --exports /tmp/tracr_lib

Bounded: 15 models × 3 certifies (~1–4 s CPU each) plus, once, the 13 compiles (~15 s).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]

from numeric_identity import first_difference, strip  # noqa: E402
from tracr_lib import LIB, cli_args  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exports", type=Path, required=True, help="directory of the 13 library exports (written if missing)")
    ap.add_argument("--only", nargs="*", help="model names (default: all)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tracr_answers_identity_") as scratch:  # removed at the end
        return run(args, Path(scratch))


def run(args, scratch: Path) -> int:
    """The comparison of :func:`main`, every derivation cache under ``scratch``."""
    os.environ["SOFTHARD_CACHE_DIR"] = str(scratch / "first")
    os.environ.pop("SOFTHARD_CACHE", None)

    import sympy as sp

    from softhard.bounds import cache, store
    from softhard.bounds.core import tau
    from softhard.constructions.tracr_load import load_tracr
    from softhard.solver import tracr_answers as ta
    from softhard.solver.cli import main as cli
    from softhard.solver.tracr import certify_tracr

    args.exports.mkdir(parents=True, exist_ok=True)
    for name in LIB:
        if not (args.exports / name / f"{name}.json").exists():  # written as DIR/name/name.{json,npz}
            assert cli(["tracr", "compile", *cli_args(name, str(args.exports / name))]) == 0, name
    models = {m: ROOT / "examples" / "tracr" / m for m in ("frac_prevs", "hist")}
    models.update({f"lib_{name}": args.exports / name / name for name in LIB})
    if args.only:
        models = {k: v for k, v in models.items() if k in args.only}

    def live(expr, inv_tau):
        return sp.sympify(expr).subs(tau, sp.Rational(inv_tau.denominator, inv_tau.numerator))

    cached = ta._subs
    calls = {"n": 0, "bad": 0}

    def checked(expr, inv_tau):
        got, want = cached(expr, inv_tau), live(expr, inv_tau)
        calls["n"] += 1
        if not (got == want and sp.srepr(got) == sp.srepr(want)):
            calls["bad"] += 1
            print(f"  _subs differs at inv_tau={inv_tau}: {sp.srepr(got)[:200]} vs {sp.srepr(want)[:200]}")
        return got

    bad = 0
    for name, path in models.items():
        tm = load_tracr(path)
        certs = {}
        for way in ("live", "cold", "warm"):
            if way == "cold":  # a fresh disk layer per model
                os.environ["SOFTHARD_CACHE_DIR"] = str(scratch / f"cold-{name}")
            cache._exprs.clear()  # the in-process layers: warm decodes every substitution from disk
            store._memory.clear()
            ta._subs = live if way == "live" else checked
            certs[way] = strip(certify_tracr(tm, timeout_s=20))
        ta._subs = cached
        diffs = [(w, first_difference(certs["live"], certs[w])) for w in ("cold", "warm")]
        diffs = [(w, d) for w, d in diffs if d is not None]
        bad += bool(diffs)
        print(f"{name}: {'identical' if not diffs else diffs}")
    print(f"{len(models) - bad} of {len(models)} certificates identical (timing fields aside); "
          f"{calls['n'] - calls['bad']} of {calls['n']} _subs results equal to .subs (== and srepr)")
    return 1 if bad or calls["bad"] else 0


if __name__ == "__main__":
    sys.exit(main())
