"""``softhard certify`` and ``softhard verify`` (the product's main job; THEORY §8)."""

from __future__ import annotations

import json
import sys
from fractions import Fraction

from ..constructions.errors import ParameterError
from .cli import seconds_option

#: certified when ``softhard certify`` is given no formula (Tomita 4: binary words without 000)
DEFAULT_EXAMPLE = """\
// Embedded default example: Tomita 4, binary strings without the factor 000.
name: tomita4
description: Tomita 4, binary strings without the factor 000 (embedded default)
alphabet: 0 1
formula:
     !(0 & Y 0 & Y Y 0)
  & H !(0 & Y 0 & Y Y 0)
"""


def register(sub, common, positive_int, tau_type) -> None:
    """Add the ``certify`` and ``verify`` subcommands to the CLI's subparsers."""
    p = sub.add_parser(
        "certify", help="prove that a temperature keeps every attention node within its tolerance",
        description="Derive every attention node's error bound, prove with Z3 that it stays <= eta for every "
                    "length in the range (or find the largest tau for which it does), check each claim "
                    "independently in interval arithmetic, confirm numerically, and write a JSON certificate. "
                    "Exit 0 when every claim is proved and the numeric confirmation agrees; 1 when any claim is "
                    "refuted or unknown, no certifiable tau is found, or the numeric confirmation fails; 2 on bad "
                    "input.")
    common(p)
    p.formula = None
    for a in p._actions:  # the formula is optional for certify: an embedded default example
        if a.dest == "formula":
            a.nargs = "?"
            a.default = None
            a.help = "formula or .ltl file (default: an embedded Tomita 4 example)"
    p.add_argument("--n-max", type=positive_int("--n-max"), default=1000, help="largest word length (default 1000)")
    p.add_argument("--n-min", type=positive_int("--n-min"), default=1, help="smallest word length (default 1)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--tau", type=tau_type, default=None, help="the temperature to certify, exact (e.g. 1/5000)")
    g.add_argument("--find-tau", action="store_true", help="find and certify the largest tau (smallest 1/tau)")
    p.add_argument("-o", "--output", default=None, help="write the certificate to this file (atomically)")
    p.add_argument("--force", action="store_true", help="overwrite an existing output file")
    p.add_argument("--timeout", type=seconds_option, default=20.0, help="hard wall-clock limit per solver query, seconds")
    p.add_argument("--no-numeric", action="store_true", help="skip the numeric confirmation")
    p.add_argument("--range-only", action="store_true",
                   help="regime U: prove only n in [n-min, n-max] instead of all n >= n-min")
    p.set_defaults(func=cmd_certify)

    p = sub.add_parser("verify", help="re-check a certificate: hashes, re-derived bounds, re-run queries",
                       description="Re-derive the bounds from the certificate's stored source, regenerate and re-run "
                                   "every stored solver query, re-check counterexamples, hashes and the numeric "
                                   "summary. Exit 0 only for a valid certificate; otherwise name the field.")
    p.add_argument("file", metavar="FILE", help="certificate JSON written by 'softhard certify'")
    p.add_argument("--timeout", type=seconds_option, default=20.0, help="hard wall-clock limit per solver query, seconds")
    p.add_argument("--json", action="store_true", help="print the verification report as JSON")
    p.set_defaults(func=cmd_verify)


def cmd_certify(args) -> int:
    from ..constructions.parse import load_spec, parse_spec
    from .certificate import certify
    from .certjson import write_certificate

    if args.tau is None and not args.find_tau:
        raise ParameterError("give --tau T or --find-tau")
    if args.n_min > args.n_max:
        raise ParameterError(f"--n-min {args.n_min} exceeds --n-max {args.n_max}")
    if args.range_only and args.regime == "T":
        raise ParameterError("--range-only applies to regimes U and P (regime T certificates are always for "
                             "n in [n-min, n-max])")
    if args.formula is None:
        spec = parse_spec(DEFAULT_EXAMPLE, source="<embedded tomita4>")
    else:
        spec = load_spec(args.formula, alphabet=args.alphabet)
    from .cli import _construction, _eps_ln
    c = _construction(args, spec)
    # --find-tau also finds the largest certifiable layer-norm epsilon unless --eps-ln fixes it
    tune = ("eps_ln",) if args.find_tau and _eps_ln(args) is None and c.params.eps_ln is not None else ()
    if args.output:  # fail before the work if the output cannot be written
        from .certjson import check_output_path
        check_output_path(args.output, force=args.force)
    from rich.console import Console
    err = Console(stderr=True, highlight=False)
    with err.status("certifying", spinner="dots") as st:
        cert = certify(c, n_max=args.n_max, n_lo=args.n_min, tau=args.tau, find_tau=args.find_tau,
                       all_n=False if args.range_only else None, timeout_s=args.timeout, numeric=not args.no_numeric,
                       progress=lambda s: st.update(s) if not args.json else None, tune=tune)
    if args.output:
        write_certificate(cert, args.output, force=args.force)
    if args.json:
        print(json.dumps(cert, indent=1))
    else:
        _print_certificate(cert, args.output)
    return 0 if cert["status"] == "proved" and (cert["numeric"] is None or cert["numeric"]["ok"]) else 1


def _fmt(x):
    from .cli import _fmt as f
    return f(x)


def _print_certificate(cert: dict, path) -> None:
    from rich.table import Table

    from .cli import stdout_console
    con = stdout_console()
    cons = cert["construction"]
    rng = cert["range"]
    rtxt = f"n >= {rng['n_min']} (all n)" if rng["all_n"] else f"{rng['n_min']} <= n <= {rng['n_max']}"
    con.print(f"[bold]{cons['title']}[/bold]")
    con.print(f"regime {cons['regime']} ({cons['positional']}), params {cons['params']}, "
              f"tau = {cons['tau']} (1/tau = {cons['inv_tau_decimal']}, {cons['tau_choice']}), {rtxt}")
    t = Table(show_header=True, header_style="bold", caption="bound: the node's error bound at n_max and the chosen "
              "tau (its formula: 'softhard bound', or nodes[].bound in the certificate); time: solver seconds per "
              "claim; arb: the independent interval re-check; obs/bound: worst observed leak / bound (numeric "
              "tightness)", caption_justify="left")
    for col, mw in (("node", 28), ("op", 7), ("layer", 5), ("kind", 14), ("bound", 11), ("condition", 26),
                    ("status", 16), ("time", 6), ("arb", 10), ("obs/bound", 9)):
        t.add_column(col, overflow="fold", max_width=mw)
    claims = {c["id"]: c for c in cert["claims"]}
    bound_at = _bounds_at_n_max(cert)
    for nd in cert["nodes"]:
        cl = claims.get(nd["claim"]) if nd["claim"] else None
        st = nd["status"]
        col = {"proved": "green", "refuted": "red", "unknown": "yellow"}[st]
        num = nd["numeric"]
        rng_txt = f"n in [{cl['n_lo']}, {cl['n_hi'] if cl['n_hi'] is not None else 'inf'}]" if cl else "exact"
        arb = "-"
        if cl and cl["second_check"]:
            sc = cl["second_check"]
            arb = sc["status"]
            if sc["status"] == "unknown" and "unbounded" in (sc.get("reason") or ""):
                arb = "ok to 2^40"
        t.add_row(nd["node"], nd["operator"], str(nd["layer"]), f"{nd['kind']} {cons['regime']}",
                  bound_at.get(nd["claim"], "0") if cl else "0",
                  f"<= {cl['tolerance']}, {rng_txt}" if cl else "exact",
                  f"[{col}]{st}[/{col}]" + (f" n={cl['counterexample']}" if cl and cl["counterexample"] else ""),
                  f"{cl['seconds']:.2f}" if cl else "-", arb,
                  (f"{num['ratio']:.4f}" if num else "-"))
    con.print(t)
    if cert["search"]:
        con.print("[bold]parameter search[/bold] (1/parameter needed at n_max):")
        if cert["search"].get("message"):
            con.print(f"  {cert['search']['message']}")
        for p in cert["search"]["per_bound"]:
            shared = [x["node"] for x in cert["nodes"] if x["node"] != p["node"] and
                      any(set(cl["nodes"]) >= {p["node"], x["node"]} for cl in cert["claims"])]
            con.print(f"  {p['node']}" + (f" (same bound as {', '.join(shared)})" if shared else "") + ":")
            con.print(f"    1/{p.get('parameter', 'tau')} certified "
                      f"{float(Fraction(p['inv_tau_certified'])):.10g}"
                      f"  tight numeric {p['inv_tau_tight_numeric']:.10g}"
                      f"  closed form {_fmt(p['inv_tau_closed_form']) if p['inv_tau_closed_form'] else '-'}"
                      f"  gap lemma {_fmt(p['inv_tau_generic_gap_lemma']) if p['inv_tau_generic_gap_lemma'] else '-'}")
            e = p.get("empirical")
            if e:
                con.print(f"    empirical minimum at n = {e['n']}: {e['inv_tau_empirical']:.10g} "
                          f"(certified there {float(Fraction(e['inv_tau_certified_at_n'])):.10g}, "
                          f"ratio {e['ratio_certified_to_empirical']:.8f})")
    num = cert["numeric"]
    if num:
        con.print(numeric_verdict(num["inv_tau_float"], num["families"], num["mismatched_outputs"],
                                  num.get("mismatched_outputs_unguarded", 0), num.get("premise_failures", 0),
                                  num["ok"]))
    con.print(status_line(cert, path))


def _bounds_at_n_max(cert: dict) -> dict[str, str]:
    """Per claim id, its bound (parameters substituted) evaluated at n_max, 8 digits (display only)."""
    import mpmath
    import sympy as sp

    from ..bounds.derive import evaluate
    n_max = cert["range"]["n_max"]
    out = {}
    for cl in cert["claims"]:
        try:
            k = n_max if cl["n_hi"] is None else min(n_max, cl["n_hi"])
            out[cl["id"]] = mpmath.nstr(evaluate(sp.sympify(cl["expr_srepr"]), n_value=max(k, cl["n_lo"]),
                                                 inv_tau=1), 8)
        except (TypeError, ValueError, ZeroDivisionError, SyntaxError):
            out[cl["id"]] = "?"
    return out


def status_line(cert: dict, path, extra: str = "") -> str:
    """The last line ``certify`` prints (formulas, models, Tracr): the certificate's status, and
    when the claims are proved but the numeric confirmation failed, that it failed (exit 1)."""
    colr = {"proved": "green", "refuted": "red"}.get(cert["status"], "yellow")
    num = cert.get("numeric")
    failed = num is not None and not num["ok"]
    return (f"status: [{colr}]{cert['status']}[/{colr}]{extra}"
            + (" — but the [red]numeric confirmation FAILED[/red] (see above; exit 1)" if failed else "")
            + f"  ({cert['times']['total_s']:.2f} s)" + (f"; certificate written to {path}" if path else ""))


def numeric_verdict(inv_tau: float | None, families: dict, mismatched: int, unguarded: int, premise_failures: int,
                    ok: bool) -> str:
    """One line on a numeric confirmation (``certify`` and ``confirm``): inputs, differing outputs
    and the verdict, saying where the bounds were not claimed to hold (bounds/confirm.py)."""
    at = "" if inv_tau is None else f" at 1/tau = {inv_tau:.10g}"
    txt = (f"numeric confirmation{at}: inputs {families}; positions whose clean output "
           f"differs from the hard model where every bound is <= eta: {mismatched}")
    if unguarded or premise_failures:
        txt += (f"; where some bound exceeds eta (too warm: exactness not claimed) {unguarded} differing "
                f"position(s) and {premise_failures} node check(s) whose inputs were not clean")
    return txt + ("; no bound exceeded" if ok else "; [red]A BOUND WAS EXCEEDED OR AN OUTPUT DIFFERS[/red]")


def cmd_verify(args) -> int:
    from .certjson import load_certificate
    from .kinds import verify_certificate
    cert = load_certificate(args.file)
    rep = verify_certificate(cert, timeout_s=args.timeout)
    if args.json:
        print(json.dumps(rep.to_json(), indent=1))
    elif rep.ok:
        print(f"valid certificate: status {rep.status}; checked {', '.join(rep.checked)} ({rep.seconds:.2f} s)")
    else:
        f, m = rep.problems[0]
        more = f" (+{len(rep.problems) - 1} more problem(s); --json lists all)" if len(rep.problems) > 1 else ""
        print(f"softhard: invalid certificate {args.file}: {f}: {m}{more}", file=sys.stderr)
    return 0 if rep.ok else 2
