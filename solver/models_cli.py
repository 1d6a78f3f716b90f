"""CLI for hard-attention model files (THEORY §1, §6): ``softhard gap``, ``softhard hahn``, and the
``--model`` forms of ``softhard run`` and ``softhard certify``.

:func:`register` is called once by :func:`softhard.solver.cli.build_parser` after the formula
commands exist; it adds the new subcommands and extends ``run`` and ``certify`` with ``--model``
(their formula argument becomes optional; without ``--model`` they behave exactly as before).
Exit status: 0 success; 1 a claim refuted/unknown, a gap of 0 (not simulable this way) or a
numeric check failed; 2 bad input (one line naming the file, field and layer).

Imports: the solver modules (:mod:`.models`, :mod:`.hahn`, :mod:`.pipeline`: SymPy, Z3, flint)
are imported by the commands that use them, not at module level: this module is imported to
build every command's parser, and importing them up front would add about 0.7 s to every
``softhard`` invocation (``softhard --help`` 0.4 s → 1.1 s).  Everything else is imported here.
"""

from __future__ import annotations

import json
import sys
from fractions import Fraction

import numpy as np
from rich.console import Console
from rich.table import Table

from ..constructions.errors import ParameterError
from ..constructions.gaps import DEFAULT_SEARCH_WORDS, analyse_gaps, plan_tie_breaks, tie_break
from ..constructions.engine import forward
from ..constructions.model_export import export_transformer
from ..constructions.modelfile import load_model, parse_model
from ..constructions.parse import load_spec, tokenize
from ..constructions.parameters import check_eta, to_fraction
from .certify_cli import status_line
from .certjson import check_output_path, write_certificate
from .cli import _fmt as fmt_float
from .cli import int_option, seconds_option, stdout_console


def _optional_formula(p) -> None:
    for a in p._actions:
        if a.dest == "formula":
            a.nargs = "?"
            a.default = None
            a.help = (a.help or "") + " (omit with --model)"


def _nonneg(name: str):
    return int_option(name, 0)


def _gap_options(p) -> None:
    p.add_argument("--exhaustive-limit", type=_nonneg("--exhaustive-limit"), default=20000,
                   help="enumerate every word when there are at most this many of length <= n-max (default 20000)")
    p.add_argument("--method", choices=["auto", "exhaustive", "searched"], default="auto",
                   help="gap analysis: auto (exhaustive if within the limit), exhaustive, searched")
    p.add_argument("--search-words", type=_nonneg("--search-words"), default=DEFAULT_SEARCH_WORDS,
                   help=f"searched analysis: exact evaluations (default {DEFAULT_SEARCH_WORDS})")
    p.add_argument("--search-max-len", type=_nonneg("--search-max-len"), default=512,
                   help="searched analysis: longest word tried (default 512)")
    p.add_argument("--seed", type=_nonneg("--seed"), default=0, help="searched analysis: random seed (>= 0)")
    p.add_argument("--tie-break", choices=["auto", "off"], default="auto",
                   help="add the beta*j/n tie-break to UHA heads with ties (THEORY §4); default auto")


def register(sub, common, positive_int, tau_type) -> None:
    """Add ``gap`` and ``hahn``; extend ``run`` and ``certify`` with ``--model`` (module docstring)."""
    p = sub.add_parser("gap", help="minimum attention-score gap of a model file (exhaustive or searched)",
                       description="Gap analysis of a hard-attention model (THEORY §2, §6): per head the minimum of "
                                   "s* - max{s_j : j not in the argmax set} over every query row of every word of length "
                                   "<= --n-max, computed in exact rational arithmetic, exhaustively when the number of "
                                   "words is small and otherwise by search (periodic, random, local search; reported as "
                                   "'searched', not proved), with the input attaining it. Exit 1 if a gap is 0 (not "
                                   "simulable by softmax this way).")
    p.add_argument("--model", required=True, metavar="FILE", help="model file (JSON, see docs/models.md)")
    p.add_argument("--n-max", type=positive_int("--n-max"), required=True, help="longest word analysed")
    _gap_options(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_gap)

    p = sub.add_parser("hahn", help="Hahn's obstacle: sensitivity bound and N_fail of a bounded-PE model at fixed tau",
                       description="For a bounded-positional-embedding model at one fixed temperature: a bound on how "
                                   "much a one-symbol change can move an output (THEORY §1) and the length N_fail beyond "
                                   "which no one-symbol change can move it from <= eta to >= 1-eta (proved for all n >= "
                                   "N_fail). With a formula, the model is its regime T construction; --check runs the "
                                   "numeric demonstration (and, for a formula, shows the regime T construction with "
                                   "tau(n) and the regime U construction at fixed tau keep working).")
    common(p)
    _optional_formula(p)
    p.add_argument("--model", default=None, metavar="FILE", help="model file instead of a formula")
    p.add_argument("--tau", type=tau_type, required=True, help="the fixed temperature, exact (e.g. 1/4)")
    p.add_argument("--change-at", default="n-1", help="position of the changed symbol: n-c or c (default n-1)")
    p.add_argument("--check", action="store_true", help="numeric demonstration on flip pairs")
    p.add_argument("--n-check-max", type=positive_int("--n-check-max"), default=20000,
                   help="longest word in the numeric demonstration (default 20000)")
    p.add_argument("--timeout", type=seconds_option, default=20.0, help="hard limit per solver query, seconds")
    p.set_defaults(func=cmd_hahn)

    run = sub.choices["run"]
    _optional_formula(run)
    run.add_argument("--model", default=None, metavar="FILE", help="run a model file instead of a formula")
    run.add_argument("--tie-break", choices=["auto", "off"], default="auto",
                     help="with --model: add the UHA tie-break beta*j/n exactly as 'certify --model' does "
                          "(planned from the exhaustive gap analysis up to --n-max; default auto)")
    run.add_argument("--n-max", type=positive_int("--n-max"), default=None,
                     help="with --model: the length range whose gap analysis plans the tie-break (use the "
                          "certificate's n_max to run the certified model; default: the word's length)")
    _wrap(run, cmd_run_model)

    cert = sub.choices["certify"]
    cert.add_argument("--model", default=None, metavar="FILE",
                      help="certify a hard-attention model file (THEORY §6) instead of a formula")
    cert.add_argument("--epsilon", default=None,
                      help="with --model: the target output error, exact (e.g. 1/4), or 'margin' (just below the "
                           "smallest rounding margin of the boolean/categorical outputs, so rounded outputs are equal)")
    _gap_options(cert)
    _wrap(cert, cmd_certify_model)


def _wrap(parser, model_fn) -> None:
    """Route to ``model_fn`` when ``--model`` is given, else to the parser's original command."""
    orig = parser.get_default("func")

    def dispatch(args):
        if getattr(args, "model", None):
            if getattr(args, "formula", None):
                raise ParameterError("give either a formula or --model, not both")
            return model_fn(args)
        if getattr(args, "formula", None) is None and orig.__name__ != "cmd_certify":
            if getattr(args, "string", None) is not None:
                raise ParameterError("give both the formula (or a .ltl file) and the input word: "
                                     "softhard run FORMULA_OR_FILE STRING (or softhard run --model FILE STRING)")
            raise ParameterError("give a formula (or a .ltl file) or --model FILE")
        if orig.__name__ == "cmd_run" and getattr(args, "n_max", None) is not None:
            raise ParameterError("--n-max is for 'run --model' (it plans the UHA tie-break)")
        if getattr(args, "epsilon", None) is not None:
            raise ParameterError("--epsilon is for --model (formula certificates use --eta)")
        return orig(args)

    dispatch.__name__ = getattr(orig, "__name__", "dispatch")
    parser.set_defaults(func=dispatch)


def _console():
    return stdout_console()


def _fmt(x) -> str:
    return fmt_float(float(x))


# --------------------------------------------------------------------------------------------
# gap


def cmd_gap(args) -> int:
    spec = load_model(args.model)
    hm = spec.canonical()
    rep = analyse_gaps(hm, args.n_max, exhaustive_limit=args.exhaustive_limit, search_words=args.search_words,
                       search_max_len=args.search_max_len, seed=args.seed, method=args.method)
    after = None
    infos = []
    betas = plan_tie_breaks(rep) if args.tie_break == "auto" else {}
    if betas:
        hm2, infos = tie_break(hm, betas, args.n_max, {h: rep.heads[h].gap_untied for h in betas})
        after = analyse_gaps(hm2, args.n_max, exhaustive_limit=args.exhaustive_limit, search_words=args.search_words,
                             search_max_len=args.search_max_len, seed=args.seed, method=args.method)
    final = after or rep
    result = {"model": spec.name, "file": spec.path, "n_max": args.n_max, "report": rep.to_json(),
              "tie_break": [t.to_json() for t in infos] or None,
              "report_after_tie_break": after.to_json() if after else None,
              "simulable": final.simulable,
              "verdict": _verdict(final)}
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        _print_gap(spec, rep, "gap analysis")
        if after:
            con = _console()
            con.print("[bold]UHA tie-break[/bold] (THEORY §4): score += beta*p_j, p_j = j/n (rightmost) or -j/n (leftmost)")
            for t in infos:
                g_after = after.heads[t.head].gap
                con.print(f"  {t.head}: beta = {t.beta}; untied gap before {_fmt(t.gap_untied) if t.gap_untied else '-'}"
                          f", predicted after >= {_fmt(t.predicted_gap)}, found after "
                          f"{_fmt(g_after) if g_after is not None else '-'}"
                          + (f" (cost factor {float(t.gap_untied / g_after):.4g})" if t.gap_untied and g_after else ""))
            _print_gap(spec, after, "gap analysis after the tie-break")
        _console().print(result["verdict"])
    return 0 if final.simulable else 1


def _verdict(rep) -> str:
    z = rep.zero_gap()
    how = ("established exhaustively" if rep.exhaustive else "searched, NOT proved")
    if z:
        h = z[0]
        return (f"NOT simulable this way: head {h.name} ({h.rule}) has gap 0 on input {' '.join(h.word)!r} at query "
                f"row {h.row} ({how}).")
    return f"every head has a positive gap on inputs of length <= {rep.n_max} ({how})."


def _print_gap(spec, rep, title) -> None:
    con = _console()
    con.print(f"[bold]{spec.name}[/bold]: {title}, {rep.method} over {rep.words} words of length <= {rep.n_max} "
              f"({rep.seconds:.2f} s)")
    t = Table(show_header=True, header_style="bold")
    for col in ("head", "layer", "mask", "rule", "gap", "attained by (row)", "max ties", "untied gap"):
        t.add_column(col, overflow="fold")
    for h in rep.heads.values():
        t.add_row(h.name, str(h.layer), h.mask, h.rule,
                  "-" if h.gap is None else f"{h.gap} ({_fmt(h.gap)})",
                  "-" if h.word is None else f"{' '.join(h.word)} ({h.row})", str(h.ties_max),
                  "-" if h.gap_untied is None else _fmt(h.gap_untied))
    con.print(t)
    for o in rep.outputs.values():
        if o.margin is not None:
            con.print(f"  output {o.name} ({o.type}): margin {o.margin} ({_fmt(o.margin)}) at "
                      f"{' '.join(o.word)} (position {o.row})")
    for note in rep.notes:
        con.print(f"  [yellow]note[/yellow]: {note}")


# --------------------------------------------------------------------------------------------
# run --model


def cmd_run_model(args) -> int:
    if args.string is None:
        raise ParameterError("give the input word: softhard run --model FILE STRING")
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
        raise ParameterError(f"--tau {args.tau} gives an inverse temperature outside the float64 range")
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
                        "hard_read": _read(o, hv), "soft_read": _read(o, sv)})
        outs.append({"output": o.name, "type": o.type, "at": o.at, "positions": per})
    heads = {name: {"max_leak": float(np.max(tr_.leak[0, 1:])) if tr_.leak is not None and n >= 1 else 0.0,
                    "path": tr_.path} for name, tr_ in soft.heads.items()}
    agree = all(r["hard_read"] == r["soft_read"] for o in outs for r in o["positions"])
    result = {"model": spec.name, "word": word, "n": n, "inv_tau": inv_tau, "tau_source": src, "outputs": outs,
              "heads": heads, "tie_break": tie_notes, "soft_reads_equal_hard": agree}
    if args.json:
        print(json.dumps(result, indent=1))
        return 0 if agree else 1
    con = _console()
    con.print(f"[bold]{spec.name}[/bold] on {' '.join(word)} (n = {n}), 1/tau = {_fmt(inv_tau)} ({src})")
    for o in outs:
        t = Table(show_header=True, header_style="bold", title=f"output {o['output']} ({o['type']}, read at {o['at']})")
        for col in ("pos", "sym", "hard", "soft", "hard read", "soft read"):
            t.add_column(col, justify="right")
        for r in o["positions"]:
            t.add_row(str(r["position"]), r["symbol"], ", ".join(_fmt(v) for v in r["hard"]),
                      ", ".join(_fmt(v) for v in r["soft"]), str(r["hard_read"]), str(r["soft_read"]))
        con.print(t)
    for note in tie_notes:
        con.print(f"  {note}")
    for name, h in heads.items():
        con.print(f"  head {name}: max leak {_fmt(h['max_leak'])} ({h['path']} path)")
    if not agree:
        con.print("[red]the soft model's read-out differs from the hard model's at some position[/red] "
                  "(exit 1): the temperature is too warm for this word")
    return 0 if agree else 1


def _read(o, vals):
    if o.type == "boolean":
        return int(vals[0] > float(o.threshold))
    if o.type == "categorical":
        return o.classes[int(np.argmax(vals))]
    return vals[0]


# --------------------------------------------------------------------------------------------
# certify --model


def cmd_certify_model(args) -> int:
    from .models import VERIFY_EXHAUSTIVE_LIMIT, NotSimulable, build_model_construction, certify_model

    if args.epsilon is None:
        raise ParameterError("certify --model needs --epsilon E (the target output error, exact, e.g. 1/4)")
    if args.exhaustive_limit > VERIFY_EXHAUSTIVE_LIMIT:
        raise ParameterError(f"--exhaustive-limit {args.exhaustive_limit} exceeds {VERIFY_EXHAUSTIVE_LIMIT}, the most "
                             "words 'softhard verify' re-enumerates: such a certificate could not be verified")
    if args.tau is None and not args.find_tau:
        raise ParameterError("give --tau T or --find-tau")
    if args.n_min > args.n_max:
        raise ParameterError(f"--n-min {args.n_min} exceeds --n-max {args.n_max}")
    if args.output:  # fail before the work if the output cannot be written
        check_output_path(args.output, force=args.force)
    spec = load_model(args.model)
    err = Console(stderr=True, highlight=False)
    with err.status("analysing gaps", spinner="dots") as st:
        say = (lambda s: st.update(s)) if not args.json else (lambda s: None)
        try:
            c, an = build_model_construction(spec, n_max=args.n_max, epsilon=args.epsilon,
                                             tie_break_mode=args.tie_break, exhaustive_limit=args.exhaustive_limit,
                                             search_words=args.search_words, search_max_len=args.search_max_len,
                                             seed=args.seed, method=args.method, progress=say)
            cert = certify_model(c, an, n_max=args.n_max, n_lo=args.n_min, tau=args.tau, find_tau=args.find_tau,
                                 timeout_s=args.timeout, numeric=not args.no_numeric, progress=say)
        except NotSimulable as e:
            if args.json:
                print(json.dumps({"status": "not simulable", "message": str(e), "gap_report": e.report.to_json()},
                                 indent=1))
            else:
                print(f"softhard: {e}", file=sys.stderr)
            return 1
    if args.output:
        write_certificate(cert, args.output, force=args.force)
    if args.json:
        print(json.dumps(cert, indent=1))
    else:
        print_model_certificate(cert, args.output)
    return 0 if cert["status"] == "proved" and (cert["numeric"] is None or cert["numeric"]["ok"]) else 1


def print_model_certificate(cert: dict, path) -> None:
    con = _console()
    cons = cert["construction"]
    rng = cert["range"]
    pr = cert["premises"]
    con.print(f"[bold]{cons['title']}[/bold]")
    con.print(f"positional: {cons['positional']} ({'bounded' if cons['bounded_positional'] else 'unbounded'}); "
              f"epsilon = {cons['params']['epsilon']}; tau = {cons['tau']} (1/tau = {cons['inv_tau_decimal']}, "
              f"{cons['tau_choice']}); {rng['n_min']} <= n <= {rng['n_max']}")
    pcol = "green" if pr["status"].startswith("established") else "yellow"
    con.print(f"gap premises: [{pcol}]{pr['status']}[/{pcol}] ({pr['words']} of {pr['total_words']} words, "
              f"{cert['times'].get('gap_analysis_s', 0.0):.2f} s)")
    t = Table(show_header=True, header_style="bold")
    for col in ("head", "layer", "rule", "gap", "attained by (row)", "max ties"):
        t.add_column(col, overflow="fold")
    for h in pr["heads"]:
        att = h["attained_by"]
        t.add_row(h["head"], str(h["layer"]), h["rule"], f"{h['gap']} ({h['gap_decimal']})" if h["gap"] else "-",
                  f"{' '.join(att['word'])} ({att['row']})" if att else "-", str(h["ties_max"]))
    con.print(t)
    if pr.get("tie_break"):
        for tb in pr["tie_break"]["heads"]:
            con.print(f"  tie-break {tb['head']}: {tb['term']} with beta = {tb['beta']} "
                      f"(untied gap before {tb['gap_before_untied']}, predicted after >= "
                      f"{tb['predicted_gap_after_decimal']}); hard outputs unchanged: "
                      f"{pr['tie_break']['hard_outputs_unchanged']}")
    for m in pr["output_margins"]:
        if m["margin"] is not None:
            below = m["epsilon_below_margin"]
            con.print(f"  output {m['output']}: margin {m['margin']} ({m['margin_decimal']}); epsilon "
                      f"{'<' if below else '>='} margin" + (" => rounded outputs equal" if below else
                                                             " [yellow](rounding not guaranteed)[/yellow]"))
    t = Table(show_header=True, header_style="bold")
    for col in ("output", "claim", "status", "s", "arb", "numeric tightness"):
        t.add_column(col, overflow="fold")
    claims = {c_["id"]: c_ for c_ in cert["claims"]}
    for nd in cert["nodes"]:
        cl = claims.get(nd["claim"]) if nd["claim"] else None
        st = nd["status"]
        col = {"proved": "green", "refuted": "red", "unknown": "yellow"}[st]
        num = nd["numeric"]
        t.add_row(nd["node"], f"error <= {cl['tolerance']} for n in [{cl['n_lo']}, {cl['n_hi']}]" if cl else "exact",
                  f"[{col}]{st}[/{col}]" + (f" n={cl['counterexample']}" if cl and cl["counterexample"] else ""),
                  f"{cl['seconds']:.2f}" if cl else "-",
                  cl["second_check"]["status"] if cl and cl["second_check"] else "-",
                  (f"{num['ratio']:.3g} (worst {num['worst_observed']:.3g} vs bound {num['bound_there']:.3g})"
                   if num else "-"))
    con.print(t)
    if cert["search"]:
        for p in cert["search"]["per_bound"]:
            con.print(f"  1/tau: certified {p['inv_tau_certified']} (tight numeric {p['inv_tau_tight_numeric']:.10g})")
    num = cert["numeric"]
    if num:
        ung = num.get("mismatched_outputs_unguarded", 0)
        con.print(f"numeric confirmation at 1/tau = {num['inv_tau_float']:.10g}: inputs {num['families']}, rounded "
                  f"outputs differing from the hard model: {num['mismatched_outputs']}"
                  + (f" (+{ung} on outputs whose margin is <= epsilon: rounding not claimed)" if ung else "")
                  + f", {'no bound exceeded' if num['ok'] else '[red]A BOUND WAS EXCEEDED OR AN OUTPUT DIFFERS[/red]'}")
        for h, r in (num.get("heads") or {}).items():
            con.print(f"  head {h}: observed/bound {r['worst_ratio']:.3g} (worst {r['observed']:.3g} vs bound "
                      f"{r['bound']:.3g} at n = {r['n']})")
    extra = "" if cert["status"] != "unknown" or pr["status"].startswith("established") else \
        " (claims conditional on premises found by search, not proved)"
    con.print(status_line(cert, path, extra))


# --------------------------------------------------------------------------------------------
# hahn


def cmd_hahn(args) -> int:
    from .hahn import constructions_keep_working, demonstrate, hahn_analysis, parse_change_at
    from .pipeline import build

    if (args.model is None) == (args.formula is None):
        raise ParameterError("give a formula (or .ltl file) or --model FILE")
    if args.formula is not None and args.regime != "T":
        raise ParameterError(f"hahn analyses the bounded-PE construction (regime T); regime {args.regime} has "
                             "unbounded positional embeddings, where Hahn's lemma does not apply (THEORY §1)")
    eta = check_eta(to_fraction(args.eta, "--eta"))
    change = parse_change_at(args.change_at)
    spec_f = None
    if args.model:
        spec = load_model(args.model)
        hm = spec.canonical()
        name = spec.name
    else:
        spec_f = load_spec(args.formula, alphabet=args.alphabet)
        c = build(spec_f, "T", beta=to_fraction(args.beta, "--beta"), eta=eta, comparator=args.comparator)
        doc = export_transformer(c.model, name=f"{spec_f.name} (regime T construction)", at=spec_f.at)
        hm = parse_model(doc, path="<regime T construction>").canonical()
        name = doc["name"]
    inv_tau = 1 / args.tau
    res = hahn_analysis(hm, inv_tau, eta=eta, change_at=change, timeout_s=args.timeout)
    result = {"model": name, **res.to_json()}
    if res.applicable and args.check:
        result["demonstration"] = {o: demonstrate(hm, res, o, n_cap=args.n_check_max) for o in res.outputs}
        if spec_f is not None:
            nfs = [v.get("n_fail") for v in res.outputs.values() if v.get("n_fail")]
            if nfs:
                nf = max(nfs)
                ns = sorted({min(args.n_check_max, k * nf) for k in (1, 2, 4)})
                result["constructions"] = constructions_keep_working(spec_f, ns, change_at=change, eta=eta)
    if args.json:
        print(json.dumps(result, indent=1, default=str))
    else:
        _print_hahn(result)
    if not res.applicable:
        return 1
    ok = True
    for v in result.get("demonstration", {}).values():
        ok &= bool(v["bound_respected"]) and v["failure_forced_from_n_fail"] is not False
    for r in result.get("constructions", []):
        ok &= r["rounded_outputs_equal"]
    return 0 if ok else 1


def _print_hahn(r: dict) -> None:
    con = _console()
    con.print(f"[bold]{r['model']}[/bold]: Hahn's obstacle at 1/tau = {r['inv_tau']} (fixed), symbol changed at "
              f"position {r['change_at']}, eta = {r['eta']}")
    if not r["applicable"]:
        con.print(f"[yellow]not applicable[/yellow]: {r['reason']}")
        return
    for h, R in r["score_range_per_head"].items():
        con.print(f"  head {h}: non-BOS score range R = {R}, other positions seen M = {r['other_positions_seen_per_head'][h]}")
    for o, v in r["outputs"].items():
        con.print(f"[bold]output {o}[/bold]: sensitivity(n) <= {v['sensitivity']}")
        if v.get("n_fail") is None:
            con.print(f"  {v.get('message', 'no N_fail')}")
            continue
        pf = v.get("proof", {})
        tv = Fraction(v["target"])
        con.print(f"  N_fail = {v['n_fail']}: for every n >= N_fail the bound is <= {v['target']} "
                  f"(= {float(tv):.10g}; {pf.get('status', 'not proved')}"
                  f"{' by z3 for all n >= N_fail' if pf.get('status') == 'proved' else ''}), "
                  f"below the flip threshold 1 - 2 eta = {r['flip_threshold']}: no one-symbol change can move the "
                  f"output from within eta of 0 to within eta of 1 (an output near 1/2 may still cross it).  At n = "
                  f"N_fail the bound is {v['sensitivity_at_n_fail']:.6g}.")
    for o, d in r.get("demonstration", {}).items():
        con.print(f"[bold]numeric demonstration ({o})[/bold]: observed sensitivity below 1 - 2 eta from n = "
                  f"{d.get('insensitive_from')} on (N_fail = {d['n_fail']}: the bound's guarantee); first length where "
                  f"a flip pair is not clean: {d['first_break']}; every pair fails from N_fail on: "
                  f"{d['failure_forced_from_n_fail']}; observed sensitivity <= bound everywhere: {d['bound_respected']}")
        for row in d["rows"]:
            if row["n"] in (2, 3, 4, 8, 16, 32, 64) or (d["n_fail"] and row["n"] in (d["n_fail"] - 1, d["n_fail"])) \
                    or row is d["rows"][-1]:
                con.print(f"  n = {row['n']:>6}: observed {row['observed_sensitivity']:.4g}  bound "
                          f"{row['sensitivity_bound']:.4g}  clean pairs {row['clean_pairs']}/{row['pairs']}")
    for c in r.get("constructions", []):
        con.print(f"  regime {c['regime']} construction at n = {c['n']} (1/tau = {c['inv_tau']:.6g}, {c['tau_rule']}): "
                  f"rounded outputs equal to hard on all {c['pairs']} flip pairs: {c['rounded_outputs_equal']}")
