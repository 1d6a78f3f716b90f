"""The adversarial search's words in batches of ``SEARCH_BATCH_POSITIONS`` against one batch of all
candidates (ISSUE 16, stop 35).

For every formula of ``examples/`` in every regime that builds it, at several 1/τ and lengths,
runs :func:`softhard.constructions.simulate.adversarial_words` twice — as it is, and with
``SEARCH_BATCH_POSITIONS`` raised to ``BATCH_POSITIONS`` (2^20: the earlier single batch at these
lengths) — and prints each case where a head's chosen word differs, then the totals as one JSON
line.  Warm 1/τ (below 10^4) run at n ≤ 1000 only: there later heads take the dense O(n²) path.

    python benchmarks/search_batching.py
    python benchmarks/search_batching.py --certificates DIR/*.json    # at certified values instead

With ``--certificates``, each formula certificate's construction (its example file, regime and
certified 1/τ) is searched at n = 10, 100, 1000, 10^4 (up to its n_max) instead of the grid; write
them with ``softhard certify examples/F.ltl --regime R --n-max N --eta 1/4 --find-tau --no-numeric``.

Bounded: 12 formulas × 3 regimes × 6 values of 1/τ × ≤ 3 lengths, two searches each (~10 min CPU
here); with ``--certificates``, 4 lengths per certificate (~5 s each).
"""

from __future__ import annotations

import argparse
import json
from fractions import Fraction
from pathlib import Path

from softhard.constructions import simulate as S
from softhard.constructions.errors import SofthardError
from softhard.solver import api

ROOT = Path(__file__).resolve().parent.parent
INV_TAUS = (3.0, 30.0, 300.0, 1e4, 1e6, 1e8)


def search(model, n: int, inv_tau: float, positions: int) -> dict:
    """``adversarial_words`` with ``SEARCH_BATCH_POSITIONS`` set to ``positions`` for the call."""
    keep = S.SEARCH_BATCH_POSITIONS
    S.SEARCH_BATCH_POSITIONS = positions
    try:
        return S.adversarial_words(model, n, inv_tau)
    finally:
        S.SEARCH_BATCH_POSITIONS = keep


def cases(certificates: list[Path]):
    """``(example file, regime, η, 1/τ, lengths)``: the grid, or one per formula certificate."""
    if not certificates:
        for f in sorted((ROOT / "examples").glob("*.ltl")):
            for regime in ("T", "U", "P"):
                for it in INV_TAUS:
                    yield f, regime, Fraction(1, 4), it, ((100, 1000, 10000) if it >= 1e4 else (100, 1000))
        return
    for p in certificates:
        cert = json.loads(p.read_text(encoding="utf-8"))
        con, n_max = cert["construction"], cert["range"]["n_max"]
        yield (ROOT / cert["source"]["file"], con["regime"], Fraction(con["params"]["eta"]), float(Fraction(con["inv_tau"])),
               sorted({min(n, n_max) for n in (10, 100, 1000, 10000)}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--certificates", nargs="*", type=Path, default=[],
                    help="formula certificates whose construction and certified 1/tau to search at")
    a = ap.parse_args()
    total, differ, built = 0, [], {}
    for f, regime, eta, it, ns in cases(a.certificates):
        if (f, regime, eta) not in built:
            try:
                built[f, regime, eta] = api.build(api.load_formula(f), api.Params(regime=regime, eta=eta))
            except SofthardError:  # e.g. parity outside regime P
                built[f, regime, eta] = None
        c = built[f, regime, eta]
        if c is None:
            continue
        for n in ns:
            new = search(c.model, n, it, S.SEARCH_BATCH_POSITIONS)
            one = search(c.model, n, it, S.BATCH_POSITIONS)
            total += 1
            heads = sorted(h for h in one if one[h] != new.get(h))
            if heads or set(one) != set(new):
                differ.append({"formula": f.name, "regime": regime, "inv_tau": it, "n": n, "heads": heads})
                print(json.dumps(differ[-1]), flush=True)
    print(json.dumps({"searches": total, "differ": len(differ)}))


if __name__ == "__main__":
    main()
