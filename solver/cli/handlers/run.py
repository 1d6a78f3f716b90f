"""``softhard run``: the hard and the soft transformer on one word, for each kind of source — a
formula (:func:`run_formula`), a model file (:func:`run_model`), a Tracr export
(:func:`run_tracr`).  :func:`handle` checks that exactly one source is given and picks its kind.
Exit 0 when the soft read-out equals the hard one, 1 when it differs."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
from rich.table import Table

from ....bounds.confirm import confirm
from ....constructions.engine import forward
from ....constructions.errors import ParameterError
from ....constructions.exact_balls import exact_engine
from ....constructions.gaps import analyse_gaps
from ....constructions.tie_breaks import plan_tie_breaks, tie_break
from ....constructions.modelfile import load_model
from ....constructions.parameters import fraction_text
from ....constructions.parse import tokenize
from ....constructions.semantics import truth
from ....constructions.tracr import bos_obstacle
from ....constructions.tracr_load import load_tracr
from ..options import EXIT_FAIL, EXIT_OK
from .console import TABLE_ENDS, elided, fmt, stdout_console
from .formula import formula_construction, schedule_inv_tau


def handle(args) -> int:
    """Check the sources (a formula, ``--model`` or ``--tracr``: exactly one) and run that kind."""
    if args.tracr:
        if args.model:
            raise ParameterError("give either --tracr or --model, not both")
        if args.formula is not None:
            raise ParameterError("give either a formula or --tracr, not both")
        return run_tracr(args)
    if args.model:
        if args.formula is not None:
            raise ParameterError("give either a formula or --model, not both")
        return run_model(args)
    if args.formula is None:
        raise ParameterError("give both the formula (or a .ltl file) and the input word: "
                             "softhard run FORMULA_OR_FILE STRING (or softhard run --model FILE STRING)")
    if args.n_max is not None:
        raise ParameterError("--n-max is for 'run --model' (it plans the UHA tie-break)")
    return run_formula(args)


def run_formula(args) -> int:
    """``run FORMULA STRING``: per position the reference, hard and soft values; per node its worst
    error against its bound (exit 1 when the soft verdict differs from the hard one)."""
    c = formula_construction(args, schedules=True)
    word = tokenize(args.string, c.spec.alphabet)
    n = len(word)
    scheduled = schedule_inv_tau(args, c)
    inv_tau = (scheduled(n) if scheduled is not None else float(1 / args.tau) if args.tau is not None
               else c.default_inv_tau(n))
    if not np.isfinite(inv_tau) or inv_tau <= 0:
        if args.tau is not None:
            raise ParameterError(f"--tau {args.tau} gives an inverse temperature outside the float64 range")
        raise ParameterError(f"the closed-form 1/tau at n = {n} (beta = {fraction_text(c.beta)}, eta = "
                             f"{fraction_text(c.eta)}) is outside the float64 range; give --tau, or a larger beta or eta")
    m = c.model
    tok = m.encode([word])
    hard = forward(m, tok, mode="hard")
    soft = forward(m, tok, mode="soft", inv_tau=inv_tau)
    root = m.index(m.outputs[0])
    ref = truth(c.spec.formula, word)
    at = c.spec.at
    k = n - 1 if at == "last" else 0
    heads = list(c.bounds)
    rows = []
    for p in range(n):
        rows.append({
            "position": p + 1, "symbol": word[p], "reference": int(ref[p]),
            "hard": float(hard.x[0, p + 1, root]), "soft": float(soft.x[0, p + 1, root]),
            "raw": {h: float(soft.x[0, p + 1, m.index(f"raw:{h}")]) for h in heads},
        })
    # per node: worst leak against its bound with the computed rounding allowance (bounds.confirm)
    conf = confirm(m, c.bounds, {"word": [word]}, inv_tau, beta=c.beta, eta=c.eta)
    leaks = {}
    for ch in conf.checks:
        leaks[ch.node] = {"observed_leak": ch.observed, "bound": ch.bound, "within_eta": ch.bound <= float(c.eta),
                          "exceeded": ch.exceeds,
                          # None when infinite (no float64 rounding guarantee), as in confirm: strict JSON
                          "allowance_rel": ch.allowance_rel if math.isfinite(ch.allowance_rel) else None,
                          # a node's bound assumes clean inputs: every attention node below it within eta
                          "premise": ch.premise}
    result = {
        "formula": str(c.spec.formula), "alphabet": list(c.spec.alphabet), "word": word, "n": n,
        "regime": c.regime, "beta": str(c.beta), "eta": str(c.eta), "inv_tau": inv_tau, "tau": 1 / inv_tau,
        "comparator": c.source.get("comparator"), "eps_ln": str(c.params.eps_ln) if c.params.eps_ln is not None else None,
        "tau_source": (f"--schedule {args.schedule}: 1/tau(n) at n = {n}" if scheduled is not None else
                       "--tau" if args.tau is not None else "closed form 1/tau*(n, eta)"),
        "judged_at": at, "positions": rows,
        "accepted": {"reference": bool(ref[k]), "hard": bool(hard.x[0, k + 1, root] > 0.5),
                     "soft": bool(soft.x[0, k + 1, root] > 0.5)},
        "heads": leaks,
    }
    agree = result["accepted"]["hard"] == result["accepted"]["soft"]
    rc = EXIT_OK if agree else EXIT_FAIL
    if args.json:
        print(json.dumps(result, indent=2))
        return rc
    con = stdout_console()
    if args.summary:
        acc = result["accepted"]
        differ = sum((r["soft"] > 0.5) != (r["hard"] > 0.5) for r in rows)
        worst = max(leaks.items(), key=lambda kv: kv[1]["observed_leak"], default=None)
        con.print(f"{c.spec.formula}: n = {n}, 1/tau = {fmt(inv_tau)}; reference {_verdict(acc['reference'])}, hard "
                  f"{_verdict(acc['hard'])}, soft {_verdict(acc['soft'])}; positions whose soft clean value differs "
                  f"from the hard one: {differ} of {n}"
                  + (f"; largest node error {fmt(worst[1]['observed_leak'])} ({worst[0]}, bound "
                     f"{fmt(worst[1]['bound'])})" if worst else ""), soft_wrap=True)
        return rc
    con.print(f"[bold]{c.spec.formula}[/bold]  over {{{', '.join(c.spec.alphabet)}}}, regime {c.regime}, n = {n}, "
              f"1/tau = {fmt(inv_tau)} ({result['tau_source']}), eta = {c.eta}")
    t = Table(show_header=True, header_style="bold")
    for col in ("pos", "sym", "reference", "hard", "soft (clean)"):
        t.add_column(col, justify="right")
    for h in heads:
        t.add_column(f"raw {h}", justify="right", overflow="fold", max_width=24)
    shown, left_out = elided(rows, lambda r: (r["soft"] > 0.5) != (r["hard"] > 0.5))
    for r in shown:
        if r is None:
            t.add_row("…", *[""] * (4 + len(heads)))
            continue
        t.add_row(str(r["position"]), r["symbol"], str(r["reference"]), fmt(r["hard"]), fmt(r["soft"]),
                  *[fmt(r["raw"][h], 8) for h in heads])
    con.print(t)
    _left_out_line(con, left_out)
    acc = result["accepted"]
    con.print(f"judged at the {at} position: reference {'accepts' if acc['reference'] else 'rejects'}, "
              f"hard {'accepts' if acc['hard'] else 'rejects'}, soft {'accepts' if acc['soft'] else 'rejects'}")
    for h, v in leaks.items():
        flag = "" if v["within_eta"] else "  [red](bound exceeds eta: exactness not guaranteed)[/red]"
        if v["premise"]:
            rel = "vs"
            flag += f"  (bound not applicable: node {v['premise']} exceeds eta, so its inputs are not clean)"
        else:
            rel = "[red]> (BOUND EXCEEDED)[/red]" if v["exceeded"] else "<="
        con.print(f"  node {h}: max error {fmt(v['observed_leak'])} {rel} bound {fmt(v['bound'])}{flag}")
    if not agree:
        con.print("[red]soft verdict differs from the hard one[/red] (exit 1)")
    return rc


def run_model(args) -> int:
    """``run --model FILE STRING``: per output and position the hard and soft values and their read-outs
    (exit 1 when a soft read-out differs)."""
    spec = load_model(args.model)
    hm = spec.canonical()
    word = tokenize(args.string, hm.alphabet)
    n = len(word)
    hm.check_length(n)
    tie_notes = []
    if args.tie_break == "auto":  # the same model certify --model analyses and certifies
        n_plan = args.n_max or n
        rep = analyse_gaps(hm, n_plan)
        betas = plan_tie_breaks(rep)
        if betas:
            hm, infos = tie_break(hm, betas, n_plan, {h: rep.heads[h].gap_untied for h in betas})
            tie_notes = [f"UHA tie-break on head {t.head}: beta = {t.beta} (planned for n <= {n_plan}, as "
                         f"'certify --model --n-max {n_plan}' does)" for t in infos]
    tr = hm.transformer()
    if args.tau is not None:
        inv_tau = float(1 / args.tau)
        src = "--tau"
    elif spec.inv_tau is not None:
        inv_tau = float(spec.inv_tau)
        src = "model file inv_tau"
    else:
        inv_tau, src = 1.0, "default 1"
    if not np.isfinite(inv_tau) or inv_tau <= 0:
        raise ParameterError(f"{'--tau ' + str(args.tau) if args.tau is not None else src} gives an inverse "
                             "temperature outside the float64 range")
    tok = tr.encode([word])
    hard = forward(tr, tok, mode="hard")
    soft = forward(tr, tok, mode="soft", inv_tau=inv_tau)
    outs = []
    for o in hm.outputs:
        cols = [tr.labels.index(hm.labels[c]) for c in o.coords]
        per = []
        for p in range(1, n + 1):
            hv = [float(hard.x[0, p, c]) for c in cols]
            sv = [float(soft.x[0, p, c]) for c in cols]
            per.append({"position": p, "symbol": word[p - 1], "hard": hv, "soft": sv,
                        "hard_read": read_output(o, hv), "soft_read": read_output(o, sv)})
        outs.append({"output": o.name, "type": o.type, "at": o.at, "positions": per})
    heads = {name: {"max_leak": float(np.max(tr_.leak[0, 1:])) if tr_.leak is not None and n >= 1 else 0.0,
                    "path": tr_.path} for name, tr_ in soft.heads.items()}
    agree = all(r["hard_read"] == r["soft_read"] for o in outs for r in o["positions"])
    result = {"model": spec.name, "word": word, "n": n, "inv_tau": inv_tau, "tau_source": src, "outputs": outs,
              "heads": heads, "tie_break": tie_notes, "soft_reads_equal_hard": agree}
    if args.json:
        print(json.dumps(result, indent=1))
        return 0 if agree else 1
    con = stdout_console()
    if args.summary:
        differ = sum(r["hard_read"] != r["soft_read"] for o in outs for r in o["positions"])
        con.print(f"{spec.name}: n = {n}, 1/tau = {fmt(inv_tau)}; positions whose soft read-out differs from the hard "
                  f"one: {differ} of {sum(len(o['positions']) for o in outs)}; largest head leak "
                  f"{fmt(max((h['max_leak'] for h in heads.values()), default=0.0))}", soft_wrap=True)
        return 0 if agree else 1
    con.print(f"[bold]{spec.name}[/bold] on {' '.join(word)} (n = {n}), 1/tau = {fmt(inv_tau)} ({src})")
    for o in outs:
        t = Table(show_header=True, header_style="bold", title=f"output {o['output']} ({o['type']}, read at {o['at']})")
        for col in ("pos", "sym", "hard", "soft", "hard read", "soft read"):
            t.add_column(col, justify="right")
        shown, left_out = elided(o["positions"], lambda r: r["hard_read"] != r["soft_read"])
        for r in shown:
            if r is None:
                t.add_row("…", *[""] * 5)
                continue
            t.add_row(str(r["position"]), r["symbol"], ", ".join(fmt(v) for v in r["hard"]),
                      ", ".join(fmt(v) for v in r["soft"]), str(r["hard_read"]), str(r["soft_read"]))
        con.print(t)
        _left_out_line(con, left_out)
    for note in tie_notes:
        con.print(f"  {note}")
    for name, h in heads.items():
        con.print(f"  head {name}: max leak {fmt(h['max_leak'])} ({h['path']} path)")
    if not agree:
        con.print("[red]the soft model's read-out differs from the hard model's at some position[/red] "
                  "(exit 1): the temperature is too warm for this word")
    return 0 if agree else 1


def _left_out_line(con, left_out: int) -> None:
    """Under an elided table: how many positions it leaves out (none: nothing printed)."""
    if left_out:
        con.print(f"({left_out} positions not shown: the first and last {TABLE_ENDS} and the first {TABLE_ENDS} "
                  "where soft and hard differ are; --json lists every position)")


def _verdict(accepts: bool) -> str:
    return "accepts" if accepts else "rejects"


def read_output(o, vals):
    """An output's read-out from its coordinates' values."""
    if o.type == "boolean":
        return int(vals[0] > float(o.threshold))
    if o.type == "categorical":
        return o.classes[int(np.argmax(vals))]
    return vals[0]


def run_tracr(args) -> int:
    """``run --tracr MODEL STRING``: per position the exact hard value, the soft value and the stored
    RASP value."""
    tm = load_tracr(args.tracr)
    hm = tm.hard_model()
    # space-separated tokens (Tracr vocabularies may have multi-character tokens), else characters
    if " " in args.string.strip():
        word = args.string.split()
        for i, t in enumerate(word, 1):
            if t not in hm.alphabet:
                raise ParameterError(f"token {t!r} at position {i} is not in the vocabulary {{{' '.join(hm.alphabet)}}}")
    else:
        word = tokenize(args.string, hm.alphabet)
    hm.check_length(len(word))
    lam = float(1 / args.tau) if args.tau is not None else tm.inv_tau_float
    tr = hm.transformer()
    o = hm.outputs[0]
    x = exact_engine(hm).run(np.array([hm.encode(word)], dtype=np.int64)).x
    hard = [[Fraction(int(v), x.den) for v in x.num[0, i, o.coords]] for i in range(1, len(word) + 1)]
    soft = forward(tr, tr.encode([word]), mode="soft", inv_tau=lam).x[0][1:, o.coords]
    rasp = next((e["rasp"] for e in tm.examples if e["input"] == list(word)), None)
    rows = []
    for i, w in enumerate(word):
        if o.type == "categorical":
            hd = o.classes[int(np.argmax([float(v) for v in hard[i]]))]
            sd = o.classes[int(np.argmax(soft[i]))]
        else:
            hd, sd = float(hard[i][0]), float(soft[i][0])
        rows.append({"position": i + 1, "token": w, "hard": hd, "soft": sd,
                     "max_abs_soft_minus_hard": float(np.max(np.abs(soft[i] - np.array([float(v) for v in hard[i]])))),
                     "rasp": None if rasp is None else rasp[i]})
    ob = bos_obstacle(hm)
    res = {"model": tm.name, "word": word, "inv_tau": lam, "tau_source": "--tau" if args.tau else "compiled c/sqrt(key_size)",
           "positions": rows,
           "bos_convention": None if ob is None else f"{ob[0]}: {ob[1]} (these values use the format's BOS row)"}
    if args.json:
        print(json.dumps(res, indent=1, default=str))
        return 0
    con = stdout_console()
    if args.summary:
        con.print(f"{tm.name}: n = {len(word)}, 1/tau = {fmt(lam, 10)}; positions whose soft output differs from the "
                  f"hard one: {sum(r['soft'] != r['hard'] for r in rows)} of {len(rows)}; largest |soft - hard| "
                  f"{fmt(max((r['max_abs_soft_minus_hard'] for r in rows), default=0.0), 3)}", soft_wrap=True)
        return 0
    con.print(f"[bold]{tm.name}[/bold] on {' '.join(word)} (n = {len(word)}), 1/tau = {fmt(lam, 10)} ({res['tau_source']})")
    t = Table(show_header=True, header_style="bold")
    for col in ("pos", "token", "hard (exact)", "soft", "|soft - hard|", "stored RASP"):
        t.add_column(col, justify="right")
    shown, left_out = elided(rows, lambda r: r["soft"] != r["hard"])
    for r in shown:
        if r is None:
            t.add_row("…", *[""] * 5)
            continue
        t.add_row(str(r["position"]), r["token"], str(r["hard"]) if o.type == "categorical" else fmt(r["hard"], 10),
                  str(r["soft"]) if o.type == "categorical" else fmt(r["soft"], 10), fmt(r["max_abs_soft_minus_hard"], 3),
                  "-" if r["rasp"] is None else str(r["rasp"]))
    con.print(t)
    _left_out_line(con, left_out)
    if ob is not None:
        con.print(f"[yellow]note[/yellow]: {res['bos_convention']}")
    return 0
