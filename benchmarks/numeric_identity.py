"""Bit-identity of certificates across a change to the numeric runs (ISSUE 16, "fifth pass: numeric").

Writes the certificates of a fixed list of certify commands (every formula of ``examples/`` in
regimes T and U at the default n_max, and in P those that need it, three at ``--n-max 10^6
--find-tau``, one ``--model``, one ``--tracr``) into a directory, with the ``softhard`` of the Python that runs this script; then
compares two such directories field by field, timing fields aside (``created``, ``tool``,
``times``, ``hashes`` — the hashes cover the timings — and every ``seconds`` / ``*_s`` key).
A command that writes no certificate (e.g. a formula a regime does not support) is compared by
its exit code and its printed output.  Every float is compared exactly (``==`` on the parsed
JSON, so one ulp is a difference).

    python benchmarks/numeric_identity.py --write /tmp/base            # before the change
    python benchmarks/numeric_identity.py --write /tmp/new --against /tmp/base
    python benchmarks/numeric_identity.py --write /tmp/new --against /tmp/base --compare-only

Bounded: one certify per listed command (~2 s CPU each, ~40 commands), each killed after
``--timeout`` seconds (default 300).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORMULAS = sorted(p.name for p in (ROOT / "examples").glob("*.ltl"))
BIG = ["--n-max", "1000000", "--eta", "1/4", "--find-tau"]

#: (name, argv after ``softhard certify``; the certificate goes to ``-o DIR/name.json``)
#: the examples that need regime P (even()/odd()); T and U refuse them (exit 2, compared as such)
NEED_P = ("parity.ltl", "tomita5.ltl")
CASES = ([(f"{f[:-4]}_{r}", [f"examples/{f}", "--regime", r]) for f in FORMULAS for r in ("T", "U")]
         + [(f"{f[:-4]}_P", [f"examples/{f}", "--regime", "P"]) for f in NEED_P]
         + [(f"{f}_T_1e6", [f"examples/{f}.ltl", "--regime", "T", *BIG]) for f in ("tomita4", "dyck1", "dyck1_depth2")]
         + [("model_ab", ["--model", "examples/models/ab_subsequence.json", "--n-max", "12", "--epsilon", "1/4",
                          "--find-tau"]),
            ("tracr_frac_prevs", ["--tracr", "examples/tracr/frac_prevs"])])

DROP_TOP = {"created", "tool", "times", "hashes"}


def strip(x, top=True):
    """The certificate without its timing fields (see the module docstring)."""
    if isinstance(x, dict):
        return {k: strip(v, False) for k, v in x.items()
                if not (top and k in DROP_TOP) and k != "seconds" and not k.endswith("_s")}
    if isinstance(x, list):
        return [strip(v, False) for v in x]
    return x


def first_difference(a, b, path="$"):
    """The JSON path of the first difference between ``a`` and ``b`` (None when equal)."""
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}: only in one"
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: length {len(a)} vs {len(b)}"
        for i, (u, v) in enumerate(zip(a, b)):
            d = first_difference(u, v, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{path}: {a!r} vs {b!r}"


def write(out: Path, timeout: float, cases) -> None:
    out.mkdir(parents=True, exist_ok=True)
    exe = Path(sys.executable).parent / "softhard"
    for name, argv in cases:
        cert = out / f"{name}.json"
        cert.unlink(missing_ok=True)
        p = subprocess.run([str(exe), "certify", *argv, "-o", str(cert)], cwd=ROOT, capture_output=True, text=True,
                           timeout=timeout, env={**os.environ, "COLUMNS": "200"})
        (out / f"{name}.run.json").write_text(json.dumps(
            {"argv": argv, "rc": p.returncode, "wrote": cert.exists(),
             "stderr": p.stderr if not cert.exists() else ""}, indent=1))
        print(f"{name:28s} rc={p.returncode} {'certificate' if cert.exists() else 'no certificate'}", flush=True)


def compare(new: Path, base: Path, cases) -> int:
    bad = 0
    for name, _ in cases:
        rn, rb = (json.loads((d / f"{name}.run.json").read_text()) for d in (new, base))
        if (rn["rc"], rn["wrote"]) != (rb["rc"], rb["wrote"]):
            msg = f"exit {rb['rc']} -> {rn['rc']}, certificate {rb['wrote']} -> {rn['wrote']}"
        elif not rn["wrote"]:
            msg = None if rn["stderr"] == rb["stderr"] else "different error output"
        else:
            cn, cb = (strip(json.loads((d / f"{name}.json").read_text())) for d in (new, base))
            msg = first_difference(cn, cb)
        bad += msg is not None
        what = "identical" if msg is None else f"DIFFERENT: {msg}"
        kind = "certificate" if rn["wrote"] else "no certificate (same exit code and output)"
        print(f"{name:28s} rc={rn['rc']} {what if msg else f'{what} ({kind})'}")
    print(f"{len(cases) - bad} of {len(cases)} identical (timing fields aside)")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", type=Path, help="directory for this checkout's certificates")
    ap.add_argument("--against", type=Path, help="compare the --write directory with this one")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--compare-only", action="store_true", help="compare the --write directory as it is")
    ap.add_argument("--only", help="comma-separated case names (default: all)")
    a = ap.parse_args()
    if a.write is None:
        ap.error("--write DIR is required")
    cases = CASES
    if a.only:
        names = a.only.split(",")
        unknown = sorted(set(names) - {n for n, _ in CASES})
        if unknown:
            ap.error(f"unknown case(s): {', '.join(unknown)}")
        cases = [c for c in CASES if c[0] in names]
    if not a.compare_only:
        write(a.write, a.timeout, cases)
    return compare(a.write, a.against, cases) if a.against else 0


if __name__ == "__main__":
    sys.exit(main())
