"""Output-level tightness of the certified temperatures (issue 13 item 1): per node kind on the
shipped examples, certified 1/τ divided by the empirical minimum 1/τ found on the node's *output*.

For every example in examples/*.ltl, every regime it runs in (T and U; P for parity), and every
attention node whose bound depends on τ:

* **certified** — the node's own certified 1/τ (`softhard certify --find-tau`, search section,
  the value Z3 proved for that node's bound on n ∈ [1, n_max]);
* **empirical** — the smallest 1/τ at which the node's output error |soft − hard| (the value its
  clean-up or comparator reads) stays ≤ η on every test word: exhaustive words up to
  `--exhaustive-len`, `--random` random words up to n_max, and the adversarial words at
  n ∈ {10, 100, n_max} (periodic words and, for average-hard nodes, edge words: one key position;
  `constructions.simulate.adversarial_words`, chosen at each node's certified 1/τ) and edge words
  (`constructions.simulate.edge_words`: a key that holds at one position only).  Only the probed node runs at the probe
  temperature: every head's W_Q is scaled to its own certified 1/τ (the probed one to the probe),
  so the probed node's inputs are clean (THEORY §3) and only its own error is measured (and no head
  runs far colder than it needs, where the engine's O(n) paths give way to the dense one).
  Geometric bisection to a relative `--rel` (1e-3): the true minimum over the words tried lies in
  (inv_tau_failing, inv_tau_empirical], so the ratio is resolved to `--rel`.

Bounded: the words are counted before any run (positions = Σ lengths); above `--max-positions`
(default 3·10^5) the script refuses with one line (exit 2).  Rows are printed, and with `--jsonl`
appended to a file, as each node finishes, so an interrupted run keeps what it measured.

A numeric run never proves (THEORY §7): the empirical value is a lower estimate of the true
minimum (the words tried may miss the worst one), so ratio = certified/empirical ≥ 1 when the
bound is sound; ratio ≈ 1 means the bound is attained on outputs.

    python benchmarks/output_tightness.py                       # n_max = 1000, all examples
    python benchmarks/output_tightness.py --examples aba tomita4 --jsonl rows.jsonl --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from fractions import Fraction
from pathlib import Path


from softhard.bounds.core import tau as tau_sym
from softhard.bounds.params import Params
from softhard.constructions.ast import operators
from softhard.constructions.parse import load_spec
from softhard.constructions.simulate import (adversarial_words, all_words, edge_words, observe, random_words,
                                             two_edge_words)
from softhard.solver.certificate import certify
from softhard.solver.pipeline import build_formula

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def regimes(spec) -> tuple[str, ...]:
    return ("P",) if "%" in operators(spec.formula) else ("T", "U")


def words_for(c, n_max: int, exhaustive_len: int, random_count: int, inv_taus) -> list:
    """Exhaustive, random, edge words (a short prefix/suffix and a periodic rest) and the
    adversarial words chosen per head at each node's own certified 1/τ (at a colder one an
    average-hard head's error underflows to 0 and no word stands out)."""
    alph = c.model.alphabet
    ws = []
    for k in range(1, exhaustive_len + 1):
        if len(alph) ** k > 20_000:
            break
        ws.extend(all_words(alph, k))
    ws.extend(random_words(alph, random_count, n_max, seed=13))
    for k in sorted({10, 100, n_max}):
        if k <= n_max:
            ws.extend(edge_words(alph, k, max_edge=3 if len(alph) <= 2 else 2))
            ws.extend(two_edge_words(alph, k, max_edge=2 if len(alph) <= 2 else 1))
            for x in sorted(set(inv_taus)):
                ws.extend(adversarial_words(c.model, k, x).values())
    return list(dict.fromkeys(tuple(w) for w in ws))


def head_of(model, node):
    return next(h for b in model.blocks for h in b.heads if h.name == node)


def worst_output_error(c, words, node: str, own: dict, base: float, probe: float) -> float:
    """Largest |soft − hard| of ``node``'s head on ``words`` with that head at 1/τ = probe and every
    other head at its own certified 1/τ (``own``: head → 1/τ; ``base`` for a head without one)."""
    saved = {}
    try:
        for b in c.model.blocks:
            for h in b.heads:
                x = probe if h.name == node else own.get(h.name, base)
                saved[h.name] = (h, h.W_Q)
                h.W_Q = h.W_Q * (x / base)
        s = observe(c.model, words, base)
    finally:
        for h, wq in saved.values():
            h.W_Q = wq
    return max((ob.output_error for ob in s.heads.get(node, {}).values()), default=0.0)


def empirical_min(c, words, node: str, own: dict, base: float, start: float, eta: float,
                  rel: float = 1e-3) -> tuple[float | None, float | None]:
    """``(smallest probe 1/τ found with the node's worst output error ≤ η, largest found above η)``
    by geometric bisection to relative ``rel``; ``(None, None)`` if the certified ``start`` itself
    fails (a bound or construction bug)."""
    ok = lambda x: worst_output_error(c, words, node, own, base, x) <= eta
    hi = start
    if not ok(hi):
        return None, None
    lo = hi / 1.25
    while ok(lo):
        hi, lo = lo, lo / 1.25
        if lo < 1e-6:
            return 0.0, None
    while hi / lo > 1 + rel:
        mid = math.sqrt(lo * hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi, lo


def run(name: str, regime: str, n_max: int, args) -> list[dict]:
    spec = load_spec(str(EXAMPLES / f"{name}.ltl"))
    c = build_formula(spec, Params(regime=regime, eta="1/4", construction=args.construction))
    cert = certify(c, n_max=n_max, find_tau=True, numeric=False)
    base = float(Fraction(cert["construction"]["inv_tau"]))
    certified = {}
    for row in cert["search"]["per_bound"]:
        if row["parameter"] == "tau":
            certified[c.bounds[row["node"]].leak] = float(Fraction(row["inv_tau_certified"]))
    words = words_for(c, n_max, args.exhaustive_len, args.random, list(certified.values()))
    positions = sum(len(w) for w in words)
    if positions > args.max_positions:
        raise SystemExit(f"output_tightness: {name} regime {regime}: {len(words)} words, {positions} positions "
                         f"> --max-positions {args.max_positions}; lower --random, --exhaustive-len or --n-max")
    own = {v: certified[nb.leak] for v, nb in c.bounds.items() if nb.leak in certified}
    out = []
    for v, nb in c.bounds.items():
        if nb.bound.parameter != tau_sym or nb.leak not in certified:
            continue
        try:
            head_of(c.model, v)
        except StopIteration:
            continue  # not a head (e.g. a layer-norm comparator)
        x_cert = certified[nb.leak]
        t0 = time.perf_counter()
        emp, fail = empirical_min(c, words, v, own, base, x_cert, float(c.eta), rel=args.rel)
        row = {"example": name, "regime": regime, "node": v, "kind": nb.bound.kind,
               "quantity": nb.bound.quantity, "source": nb.bound.source, "n_max": n_max, "words": len(words),
               "positions": positions, "inv_tau_certified": x_cert, "inv_tau_empirical": emp,
               "inv_tau_failing": fail, "ratio": (x_cert / emp) if emp else None,
               "ratio_max": (x_cert / fail) if fail else None, "seconds": round(time.perf_counter() - t0, 2)}
        out.append(row)
        print(f"{name:14s} {regime} {v[:34]:34s} {nb.bound.kind:18s} {nb.bound.quantity:6s} cert {x_cert:12.6g} emp "
              f"{emp if emp is not None else float('nan'):12.6g} ratio "
              f"{(x_cert / emp) if emp else float('nan'):8.4f}", flush=True)
        if args.jsonl:
            with open(args.jsonl, "a") as fh:
                fh.write(json.dumps(row) + "\n")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-max", type=int, default=1000)
    ap.add_argument("--only", "--examples", dest="only", nargs="*", default=None,
                    help="example names (default: every examples/*.ltl)")
    ap.add_argument("--rel", type=float, default=1e-3, help="relative resolution of the bisection (default 1e-3)")
    ap.add_argument("--max-positions", type=int, default=300_000,
                    help="refuse an example whose word set has more positions than this (default 3e5)")
    ap.add_argument("--jsonl", default=None, help="append each row here as it finishes (one JSON object a line)")
    ap.add_argument("--regimes", nargs="*", default=None, help="regimes to run (default: T and U, or P)")
    ap.add_argument("--exhaustive-len", type=int, default=10)
    ap.add_argument("--random", type=int, default=300)
    ap.add_argument("--construction", default="auto", choices=["auto", "unique", "average"])
    ap.add_argument("--json", default=None, help="write the rows and the per-kind summary here")
    args = ap.parse_args(argv)
    names = args.only or sorted(p.stem for p in EXAMPLES.glob("*.ltl"))
    rows = []
    for name in names:
        spec = load_spec(str(EXAMPLES / f"{name}.ltl"))
        for r in regimes(spec):
            if args.regimes and r not in args.regimes:
                continue
            rows.extend(run(name, r, args.n_max, args))
    summary = {}
    for r in rows:
        k = f"{r['kind']} ({r['regime']})"
        s = summary.setdefault(k, {"nodes": 0, "max_ratio": 0.0, "min_ratio": math.inf, "failed": 0})
        s["nodes"] += 1
        if r["ratio"] is None:
            s["failed"] += 1
        else:
            s["max_ratio"] = max(s["max_ratio"], r["ratio"])
            s["min_ratio"] = min(s["min_ratio"], r["ratio"])
    print("\nper node kind: certified / empirical on outputs")
    for k, s in summary.items():
        print(f"  {k:28s} nodes {s['nodes']:3d}  ratio {s['min_ratio']:.4f} .. {s['max_ratio']:.4f}"
              + (f"  ({s['failed']} without an empirical value)" if s["failed"] else ""))
    if args.json:
        Path(args.json).write_text(json.dumps({"argv": sys.argv[1:], "rows": rows, "summary": summary,
                                               "created": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())},
                                              indent=1, default=lambda x: None) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
