"""``softhard confirm``: numeric confirmation of a formula construction's node bounds — every word
up to ``--exhaustive-len``, random words and adversarial words per node; each node's worst observed
error against its bound (tightness = observed/bound).  Never a proof (THEORY §7)."""

from __future__ import annotations

import json
from typing import Callable

import numpy as np
from rich.table import Table

from ....bounds.confirm import confirm
from ....constructions.counting import adversarial_layernorm_words
from ....constructions.simulate import RandomWords, adversarial_words, all_words, periodic_words
from ...formula_numeric import check_work, work_estimate
from ..options import EXIT_FAIL, EXIT_OK
from .console import families_text, fmt, numeric_verdict, progress, stdout_console
from .formula import formula_construction, schedule_inv_tau


def handle(args) -> int:
    """Exhaustive, random and adversarial words; per node the worst observed error against its bound."""
    c = formula_construction(args, schedules=True)
    m = c.model
    scheduled = schedule_inv_tau(args, c)
    if scheduled is not None:
        inv_tau = scheduled
    elif args.tau is not None:
        it_fixed = float(1 / args.tau)
        inv_tau = lambda k: it_fixed  # noqa: E731
    else:
        # the temperature at which every bound is η·(1 − 10⁻⁶): exactly at η a float leak can land a
        # rounding error above η, leaving a clean-up inexact (and the next keys non-Boolean)
        margin = 1 + 1e-6
        inv_tau = lambda k: max(float(c.inv_tau_required(10**12 if c.uniform_in_n else k)) * margin, 1e-6)  # noqa: E731
    alph = c.spec.alphabet
    exh = []
    for k in range(1, min(args.exhaustive_len, args.n_max) + 1):  # no word longer than --n-max
        if len(alph) ** k > 200_000:
            break
        exh.extend(all_words(alph, k))
    adv_ns = sorted({k for k in (10, 100, args.n_max) if k <= args.n_max})
    # one adversarial word of length --n-max alone: refused before the random lengths are drawn
    # (NumPy draws them as int64; --max-positions is at most 10^18 < 2^63)
    check_work(args.n_max + 1, 0, args.max_positions, "lower --n-max", parts="one adversarial word of length --n-max")
    rnd = RandomWords(alph, args.random, args.n_max, seed=args.seed)  # generated lazily: memory O(chunk)
    check_budget(c, exh, rnd, adv_ns, args.max_positions, inv_tau)
    adv = []
    for k in adv_ns:
        adv.extend(dict.fromkeys(adversarial_words(m, k, inv_tau(k)).values()))
        adv.extend(dict.fromkeys(adversarial_layernorm_words(m, k).values()))  # LN comparators
    fams = {"exhaustive": exh, "random": rnd,
            "adversarial": adv}
    fams = {k: v for k, v in fams.items() if v}
    with progress("confirming") as say:  # stderr: stdout stays clean
        conf = confirm(m, c.bounds, fams, inv_tau, beta=c.beta, eta=c.eta, key_pattern_ns=adv_ns,
                       progress=lambda name: say(f"confirming: family {name}"))
    summ = conf.summary()
    lengths = sorted({ch.n for ch in conf.checks})
    temps = {str(k): float(inv_tau(k)) for k in lengths}
    tau_txt = (f"1/tau at each length from --schedule {args.schedule} (THEORY §9)" if scheduled is not None else
               f"fixed 1/tau = {fmt(float(1 / args.tau), 10)} (--tau)" if args.tau is not None else
               "1/tau at each length: the smallest at which every node's bound is <= eta*(1 - 1e-6)"
               + (" (one value: the bounds are uniform in n)" if len(set(temps.values())) == 1 else ""))
    result = {"formula": str(c.spec.formula), "regime": c.regime, "n_max": args.n_max,
              "temperature": tau_txt, "inv_tau_by_length": temps,
              "inputs": conf.words, "ok": conf.ok, "nodes": summ,
              "mismatches": {k: [("".join(w), p) for w, p in v[:10]] for k, v in conf.mismatches.items()},
              "mismatches_unguarded": {k: [("".join(w), p) for w, p in v[:10]]
                                       for k, v in conf.unguarded_mismatches.items()},
              "premise_failures": conf.premise_failures,
              "max_output_deviation": conf.max_output_deviation}
    if args.json:
        print(json.dumps(result, indent=2, default=str))
    else:
        con = stdout_console()
        con.print(f"[bold]{c.spec.formula}[/bold] regime {c.regime}: inputs {families_text(conf.words)}")
        con.print(f"temperature: {tau_txt}; e.g. 1/tau = {fmt(temps[str(lengths[-1])], 10)} at n = {lengths[-1]}"
                  if lengths else f"temperature: {tau_txt}")
        t = Table(show_header=True, header_style="bold")
        for col in ("node", "inputs", "worst observed", "bound there", "tightness", "at n", "family",
                    "max tightness per family", "violations"):
            t.add_column(col, overflow="fold")
        for v, s in summ.items():
            t.add_row(v, str(s["inputs"]), fmt(s["worst_observed"], 8), fmt(s["bound_there"], 8),
                      "-" if s["ratio"] is None else f"{s['ratio']:.6f}", str(s["at_n"]), s["family"],
                      ", ".join(f"{f}: {'-' if r is None else f'{r:.4f}'}" for f, r in s["max_ratio_by_family"].items()),
                      str(s["violations"]))
        con.print(t)
        con.print(numeric_verdict(None, conf.words,
                                  sum(len(v) for v in conf.mismatches.values()),
                                  sum(len(v) for v in conf.unguarded_mismatches.values()), conf.premise_failures,
                                  conf.ok))
        if not conf.ok:
            con.print("[red]BOUND OR CONSTRUCTION REFUTED[/red]")
    return EXIT_OK if conf.ok else EXIT_FAIL


def check_budget(c, exh: list, rnd: RandomWords, adv_ns: list[int], max_positions: int,
                 inv_tau: Callable[[int], float]) -> None:
    """Refuse (:class:`ParameterError` naming ``--max-positions``, one line with the estimate) a
    confirmation over more word positions than ``max_positions``, estimated before any run: every
    exhaustive and random word (exactly: the random lengths are drawn first), per adversarial
    length the periodic candidates searched plus two words per head, and the dense attention
    path's work at lengths where ``inv_tau`` is too warm for the bounds
    (:func:`~softhard.solver.formula_numeric.work_estimate`)."""
    heads = sum(len(b.heads) for b in c.model.blocks)
    cands = len(periodic_words(c.spec.alphabet, 3))
    by_len: dict[int, int] = {}
    for w in exh:
        by_len[len(w)] = by_len.get(len(w), 0) + 1
    lens, counts = np.unique(rnd.lens, return_counts=True)
    for n, k in zip(lens.tolist(), counts.tolist()):
        by_len[n] = by_len.get(n, 0) + k
    for n in adv_ns:
        by_len[n] = by_len.get(n, 0) + cands + 2 * max(heads, 1)
    adv = sum((cands + 2 * max(heads, 1)) * (k + 1) for k in adv_ns)
    pos, dense = work_estimate(c, by_len, inv_tau)
    check_work(pos, dense, max_positions, "lower --n-max or --random",
               parts=f"random words {rnd.positions:.3g}, adversarial {adv:.3g}")
