"""The human-readable summary ``softhard certify`` prints, one printer per certificate kind:
:func:`print_formula_certificate`, :func:`print_model_certificate`,
:func:`print_tracr_certificate` (the certificate itself is the JSON; these read it only)."""

from __future__ import annotations

from fractions import Fraction

from .console import families_text, fmt, numeric_verdict, status_line, stdout_console


def _table(**options):
    """A ``rich.table.Table`` (rich's table module is imported here, by the printed summaries only: a
    ``certify --json`` builds none; ~0.06 s of imports, ISSUE 16)."""
    from rich.table import Table  # third-party; the summaries' tables only

    return Table(**options)


def print_formula_certificate(cert: dict, path=None, extras: dict | None = None) -> None:
    """Human-readable summary of a formula certificate (per node: bound, condition, status, interval
    check, numeric tightness; the parameter search; the numeric verdict; the status).  ``extras``:
    the values the summary computes from the certificate with SymPy
    (:func:`softhard.solver.cli.handlers.summary_values.formula_extras`: ``bounds_at_n_max``, per
    claim id its bound's value at n_max); a claim without one shows ``?``."""
    con = stdout_console()
    cons = cert["construction"]
    rng = cert["range"]
    rtxt = f"n >= {rng['n_min']} (all n)" if rng["all_n"] else f"{rng['n_min']} <= n <= {rng['n_max']}"
    con.print(f"[bold]{cons['title']}[/bold]")
    sched = cons.get("schedule") or {}
    temp = (f"schedule {sched['kind']}: 1/tau(n) = {sched['inv_tau_of_n']} (S = {sched['S']}, {cons['tau_choice']})"
            if sched.get("kind") in ("lin", "log") else
            f"tau = {cons['tau']} (1/tau = {cons['inv_tau_decimal']}, {cons['tau_choice']})")
    con.print(f"regime {cons['regime']} ({cons['positional']}), {params_text(cons['params'])}, {temp}, {rtxt}")
    at = (f"n = {rng['n_max']} and the schedule's 1/tau({rng['n_max']})" if sched.get("kind") in ("lin", "log")
          else f"n = {rng['n_max']} and the chosen tau")
    t = _table(show_header=True, header_style="bold", caption=f"bound: the node's error bound at {at} "
              "(its formula: 'softhard bound', or nodes[].bound in the certificate); time: solver seconds per "
              "claim; arb: the independent interval re-check in ball arithmetic (proved/refuted/unknown, or "
              "'ok n<=2^40': it covers every n up to 2^40, where ball arithmetic stops; the Z3 proof covers all n); obs/bound: worst observed error / bound — "
              "the node's output error |soft - hard| for output bounds (quantity 'output', THEORY §4b), the leak "
              "otherwise (numeric tightness)", caption_justify="left")
    for col, mw in (("node", 28), ("op", 7), ("layer", 5), ("kind", 19), ("bound", 14), ("condition", 26),
                    ("status", 16), ("time", 6), ("arb", 10), ("obs/bound", 9)):
        # the bound's number is kept whole (summary_values.bounds_at_n_max keeps it within 14 characters)
        t.add_column(col, overflow="fold", max_width=mw)
    claims = {c["id"]: c for c in cert["claims"]}
    bound_at = (extras or {}).get("bounds_at_n_max") or {}
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
                arb = "ok n<=2^40"  # the caption explains it
        t.add_row(nd["node"], nd["operator"], str(nd["layer"]), f"{nd['kind']} {cons['regime']}",
                  bound_at.get(nd["claim"], "0") if cl else "0",
                  f"<= {cl['tolerance']}, {rng_txt}" if cl else "exact",
                  f"[{col}]{st}[/{col}]" + (f" n={cl['counterexample']}" if cl and cl["counterexample"] else ""),
                  f"{cl['seconds']:.2f}" if cl else "-", arb,
                  (f"{num['ratio']:.4f}" if num and num["ratio"] is not None else "-"))
    con.print(t)
    for nd in cert["nodes"]:  # THEORY §4b: how each P/F selection was built, and what the other way needs
        ch = nd.get("choice")
        if ch and ch.get("alternative"):
            tight, alt = ch.get("inv_tau_tight"), ch.get("alternative_inv_tau_tight")
            if tight is None and alt is None:  # a schedule: no single n_max to compare the two at
                con.print(f"  {nd['node']}: {ch['attention']}-hard ({ch['method']})")
                continue
            con.print(f"  {nd['node']}: {ch['attention']}-hard ({ch['method']}); tight 1/tau "
                      f"{f'{tight:.6g}' if tight is not None else '-'}, the {ch['alternative']}-hard construction "
                      f"would need {f'{alt:.6g}' if alt is not None else '-'} at n = {ch.get('binding_n')}")
    if cert["search"]:
        con.print("[bold]parameter search[/bold] " + (
            "(the schedule's constant S = (1/tau(n))/g(n) each needs for every n: its supremum over n):"
            if sched.get("kind") in ("lin", "log") else "(1/parameter needed at n_max):"))
        if cert["search"].get("message"):
            con.print(f"  {cert['search']['message']}")
        for p in cert["search"]["per_bound"]:
            shared = [x["node"] for x in cert["nodes"] if x["node"] != p["node"] and
                      any(set(cl["nodes"]) >= {p["node"], x["node"]} for cl in cert["claims"])]
            con.print(f"  {p['node']}" + (f" (same bound as {', '.join(shared)})" if shared else "") + ":")
            unit = ("S" if sched.get("kind") in ("lin", "log") and p.get("parameter") == "tau"
                    else f"1/{p.get('parameter', 'tau')}")
            con.print(f"    {unit} certified "
                      f"{float(Fraction(p['inv_tau_certified'])):.10g}"
                      f"  tight numeric {p['inv_tau_tight_numeric']:.10g}"
                      f"  closed form {fmt(p['inv_tau_closed_form']) if p['inv_tau_closed_form'] else '-'}"
                      f"  gap lemma {fmt(p['inv_tau_generic_gap_lemma']) if p['inv_tau_generic_gap_lemma'] else '-'}")
            e = p.get("empirical")
            if e:
                con.print(f"    empirical minimum at n = {e['n']}: {e['inv_tau_empirical']:.10g} "
                          f"(certified there {float(Fraction(e['inv_tau_certified_at_n'])):.10g}, "
                          f"ratio {e['ratio_certified_to_empirical']:.8f})")
    num = cert["numeric"]
    if num:
        con.print(numeric_verdict("each length's 1/tau(n)" if sched.get("kind") in ("lin", "log") else num["inv_tau_float"],
                                  num["families"], num["mismatched_outputs"],
                                  num.get("mismatched_outputs_unguarded", 0), num.get("premise_failures", 0),
                                  num["ok"]))
    print_float64_premise(con, cert)
    for nd in cert["nodes"]:  # why a node's bound does not survive the schedule (THEORY §9)
        sch = nd.get("schedule") or {}
        if sch.get("reason") and not sch.get("survives_all_n"):
            con.print(f"schedule, {nd['node']}: {sch['reason']}", markup=False)
    con.print(status_line(cert, path))


def stage_time(cert: dict, key: str) -> str:
    """A stage's seconds from ``times`` (``"0.41 s"``); a certificate from a certify artefact has
    only ``artefact_s`` and ``total_s`` there (docs/certificates.md): ``"done by the recorded run"``."""
    v = (cert.get("times") or {}).get(key)
    return f"{v:.2f} s" if isinstance(v, (int, float)) else "done by the recorded run"


def params_text(params: dict) -> str:
    """``beta = 1/4, eta = 1/4`` (a parameter dict for people; None values left out)."""
    return ", ".join(f"{k} = {v}" for k, v in params.items() if v is not None) or "no parameters"


def print_float64_premise(con, cert: dict) -> None:
    """The float64 premise (precision.float64_premise) when it does not plainly hold: the claims
    are about exact arithmetic, and a float64 run of the construction is not covered."""
    prem = (cert.get("precision") or {}).get("float64_premise")
    if not prem or prem["status"] == "holds":
        return
    colr = "red" if prem["status"] == "fails" else "yellow"
    why = f" — {'; '.join(prem['reasons'])}" if prem["reasons"] else ""
    con.print(f"float64 premise: [{colr}]{prem['status']}[/{colr}]{why} (the status below is for exact arithmetic; a "
              "float64 transformer run of this construction is not covered by it)")


def print_model_certificate(cert: dict, path=None, extras: dict | None = None) -> None:
    """Human-readable summary of a model-file certificate (gap premises per head, output margins, the
    claim per output, the numeric verdict, the status)."""
    con = stdout_console()
    cons = cert["construction"]
    rng = cert["range"]
    pr = cert["premises"]
    con.print(f"[bold]{cons['title']}[/bold]")
    con.print(f"positional: {cons['positional']} ({'bounded' if cons['bounded_positional'] else 'unbounded'}); "
              f"epsilon = {cons['params']['epsilon']}; tau = {cons['tau']} (1/tau = {cons['inv_tau_decimal']}, "
              f"{cons['tau_choice']}); {rng['n_min']} <= n <= {rng['n_max']}")
    pcol = "green" if pr["status"].startswith("established") else "yellow"
    con.print(f"gap premises: [{pcol}]{pr['status']}[/{pcol}] ({pr['words']} of {pr['total_words']} words, "
              f"{stage_time(cert, 'gap_analysis_s')})")
    t = _table(show_header=True, header_style="bold")
    for col in ("head", "layer", "rule", "gap", "attained by (row)", "max ties", "tieless"):
        t.add_column(col, overflow="fold")
    for h in pr["heads"]:
        att, tied = h["attained_by"], h["tied_at"]
        t.add_row(h["head"], str(h["layer"]), h["rule"], f"{h['gap']} ({h['gap_decimal']})" if h["gap"] else "-",
                  f"{' '.join(att['word'])} ({att['row']})" if att else "-", str(h["ties_max"]),
                  "yes" if h["tieless"] else f"no: {h['rows']['tied']} tied rows, first "
                                             f"{' '.join(tied['word'])} ({tied['row']})")
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
    t = _table(show_header=True, header_style="bold")
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
        con.print(f"numeric confirmation at 1/tau = {num['inv_tau_float']:.10g}: inputs {families_text(num['families'])}, rounded "
                  f"outputs differing from the hard model: {num['mismatched_outputs']}"
                  + (f" (+{ung} on outputs whose margin is <= epsilon: rounding not claimed)" if ung else "")
                  + f", {'no bound exceeded' if num['ok'] else '[red]A BOUND WAS EXCEEDED OR AN OUTPUT DIFFERS[/red]'}")
        for h, r in (num.get("heads") or {}).items():
            con.print(head_row_text(h, r))
    extra = "" if cert["status"] != "unknown" or pr["status"].startswith("established") else \
        " (claims conditional on premises found by search, not proved)"
    print_float64_premise(con, cert)
    con.print(status_line(cert, path, extra))


def head_row_text(head: str, r: dict) -> str:
    """One head's row of a model certificate's numeric section (``numeric.heads``): observed/bound
    at its worst length; a zero bound with an observation above it (``worst_ratio`` null: strict
    JSON has no infinity) is said in words, within the float64 rounding allowance or not."""
    if r["worst_ratio"] is not None:
        return (f"  head {head}: observed/bound {r['worst_ratio']:.3g} (worst {r['observed']:.3g} vs bound "
                f"{r['bound']:.3g} at n = {r['n']})")
    within = r["observed"] <= r["bound"] + r["allowance_abs"]
    return (f"  head {head}: bound {r['bound']:.3g} at n = {r['n']}, worst observed {r['observed']:.3g} "
            + (f"(float64 rounding: within the allowance {r['allowance_abs']:.3g})" if within
               else f"[red]ABOVE the bound plus the rounding allowance {r['allowance_abs']:.3g}[/red]"))


def _tol_txt(answer: dict, var: str) -> str:
    """'epsilon', or the length-dependent tolerance an answer used (solver.tracr ``fraction_rule``)."""
    return f"0.999/(2{var}({var}-1))" if answer.get("tolerance_rule") else "epsilon"


def _st(s: str) -> str:
    col = {"proved": "green", "refuted": "red"}.get(s, "yellow")
    return f"[{col}]{s}[/{col}]"


def _deviations(ex: dict) -> str:
    """' (vs stored numpy soft 1e-16, JAX float32 2e-08)' for the deviations an example section has."""
    parts = [f"{what} {ex[k]:.2g}" for k, what in (("max_abs_soft_minus_stored_numpy_soft", "stored numpy soft"),
                                                   ("max_abs_soft_minus_stored_jax_float32", "JAX float32"))
             if ex.get(k) is not None]
    return f" (vs {', '.join(parts)})" if parts else ""


def print_tracr_certificate(cert: dict, path=None, extras: dict | None = None) -> None:
    """Human-readable summary of a Tracr certificate (per output: the proved length range and the
    temperature it needs)."""
    con = stdout_console()
    m = cert["model"]
    tr = cert["source"]["tracr"]
    lam = m["inv_tau_compiled"]
    con.print(f"[bold]{m['name']}[/bold] — Tracr model {tr['source']} (vocab {' '.join(m['vocab'])}, max_seq_len "
              f"{m['max_seq_len']}, {m['layers']} layer(s))")
    con.print(f"compiled temperature: nominal coldness c = {m['coldness_nominal']} ({m['coldness_source']}), key_size "
              f"K = {m['key_size']}  =>  effective 1/tau = c/sqrt(K) = {lam['decimal']} (claims use the rational "
              f"lower enclosure; every bound decreases in 1/tau)")
    con.print("residual blocks: " + ", ".join(
        f"{b['name']} ({b['kind']}{', ' + str(b['size']) + ' values' if b['kind'] == 'categorical' else ''})"
        for b in m["blocks"]))
    for note in m["notes"]:
        con.print(f"  note: {note}")
    unc = cert.get("uncertifiable")
    if unc:
        con.print(f"[yellow]not certifiable[/yellow]: {unc['part']}: {unc['reason']}")
        con.print(status_line(cert, path))
        return
    pr = cert["premises"]
    con.print(f"premises: [green]{pr['status']}[/green], every word of length <= {pr['n_max']} "
              f"({stage_time(cert, 'analysis_s')})")
    for h in cert["heads"]:
        t = h["table"]
        p = next(x for x in pr["heads"] if x["head"] == h["head"])
        con.print(f"[bold]head {h['head']}[/bold] ({t['pattern']} pattern): logit table {len(t['query_states'])} query x "
                  f"{len(t['key_states'])} key states, levels {{{', '.join(t['levels'])}}} (unit scores: x 1/tau)")
        d1, d2 = p["bos_competitor"], p["bos_in_argmax"]
        if d1["rows"]:
            con.print(f"  rows with BOS a competitor: BOS gap {d1['gap_bos']}, other competitors' gap {d1['gap_rest']}, "
                      f"argmax >= {d1['a_min']}")
        if d2["rows"]:
            con.print(f"  rows with BOS in the argmax: competitors' gap {d2['gap_rest']}, argmax >= {d2['a_min']}")
        a = h["at_compiled_inv_tau"]
        con.print(f"  leak bound Theta(n, tau) = {h['leak_bound']['text']}")
        con.print(f"  at n = {a['n']}, compiled 1/tau: {a['structured']} (generic gap lemma: {a['generic']})")
    for mm in cert["mlps"]:
        con.print(f"[bold]MLP {mm['mlp']}[/bold]: {mm['rule']}")
        an = mm.get("analysis")
        if an and mm.get("condition"):
            con.print("  discretisation margins (distance of each hard input value to the nearest kink, exact): "
                      + ", ".join(f"z={c['z']}: {fmt(c['margin_decimal'], 4) if c['margin'] else 'inf'}"
                                  + (" (on a ramp)" if c["slope"] else "") for c in an["contexts"]))
            con.print(f"  tolerated input error r_min = {an['r_min']} ({fmt(an['r_min_decimal'], 6)}); slopes there "
                      f"{', '.join(f'{k}: {v}' for k, v in an['slopes'].items() if v != '0') or 'all 0'} (Lipschitz bound would be "
                      f"{max((Fraction(v) for v in an['lipschitz'].values()), default=0)})")
            con.print(f"  resolution condition: {mm['condition']['text']}")
        dec = mm.get("decoder")
        if dec:
            con.print(f"  count decoder (slope L = {dec['slope']}, matches the weights to {dec['max_kink_error']:.1e}): "
                      f"{dec['condition']}; with L = {dec['slope']}, counts up to {dec['max_count_decoded']} are decoded")
    for o in cert["outputs"]:
        con.print(f"[bold]output {o['output']}[/bold] ({o['type']}): margin {o['margin']}, epsilon = {o['epsilon']}; "
                  f"error(n, tau) <= {o['bound']['text']}")
    A = cert["answers"]
    a1, a2, a3, a4 = A["compiled"], A["min_inv_tau"], A["longer_inputs"], A["recompiled"]
    outs = ", ".join(f"{o['output']} ({o['type']}, epsilon {o['epsilon']})" for o in cert["outputs"])
    con.print(f"[bold]answers for output {outs}[/bold] (every one a set of Z3 claims, each re-checked in arb "
              "interval arithmetic):")
    if a1["status"] == "proved":
        con.print(f" 1. at the compiled 1/tau = {a1['inv_tau_decimal']}: within epsilon for every n in [1, "
                  f"{a1['exact_up_to']}] {_st('proved')} — limited by {a1['limited_by']}")
    else:
        con.print(f" 1. at the compiled 1/tau = {a1['inv_tau_decimal']}: {_st(a1['status'])}; within epsilon for n <= "
                  f"{a1.get('exact_up_to')}, first failure of the bound at n = {a1.get('first_failure')}")
    if a2.get("inv_tau") and a2["inv_tau"] != "0":
        con.print(f" 2. smallest 1/tau for every n <= {a2['n']}: {a2['inv_tau_decimal']} {_st(a2['status'])} (the bound's claim is refuted at "
                  f"{a2['refuted_below_decimal']}: the bound, not necessarily the model, fails below; binding: {a2['binding']}) = nominal coldness {a2['nominal_coldness']} "
                  f"at key_size {a2['key_size']}"
                  + ("" if a2.get("premise") == "exhaustive" else f" — {a2.get('premise')} premises beyond max_seq_len")
                  + ("" if not a2.get("recompiled_for_n") else
                     f"; compiled for max_seq_len {a2['n']}: key_size {a2['recompiled_for_n']['key_size']}, nominal "
                     f"coldness {a2['recompiled_for_n']['nominal_coldness']}"))
    else:
        con.print(f" 2. smallest 1/tau for n <= {a2.get('n')}: {a2.get('note') or a2.get('reason')}")
    if a3.get("exact_up_to"):
        con.print(f" 3. longer inputs at the compiled 1/tau ({a3['meaning']}): within {_tol_txt(a3, 'n')} for every "
                  f"n <= {a3['exact_up_to']} {_st(a3['status'])}, not certifiable at {a3['exact_up_to'] + 1} "
                  f"(binding: {a3['binding']})")
        if a3.get("tolerance_rule"):
            con.print(f"    tolerance: {a3['tolerance_rule']}")
        for note in a3.get("hard_vs_program") or []:
            con.print(f"    [yellow]but[/yellow]: {note}")
    elif a3.get("all_n"):
        con.print(f" 3. longer inputs at the compiled 1/tau ({a3['meaning']}): within epsilon for every n — the bound "
                  f"does not grow with n {_st(a3['status'])}")
    else:
        con.print(f" 3. longer inputs: {_st(a3['status'])} {a3.get('reason', '')}")
    if a4.get("N_c") is not None and a4.get("hard_failure_next"):
        f = a4["hard_failure_next"]
        con.print(f" 4. compiled for max_seq_len N (hypothetical; {a4['key_size_rule']}): exact for every N <= {a4['N_c']} "
                  f"{_st(a4['status'])} (claims for each N with the count decoder's margins at N); at N = "
                  f"{f['N']} the hard model itself decodes count {f['count']} as {f['decoded']} (MLP resolution "
                  "condition w(w+1) < L)")
    elif a4.get("N_c") is not None:
        con.print(f" 4. compiled for max_seq_len N (hypothetical; {a4['key_size_rule']}): with the same coldness, within "
                  f"{_tol_txt(a4, 'N')} for every n <= N for every N <= {a4['N_c']} {_st(a4['status'])} (1/tau = "
                  f"{a4['inv_tau_at_N_c_decimal']} at N = {a4['N_c']}), not at N = {a4['N_c'] + 1}")
    else:
        con.print(f" 4. compiled for max_seq_len N: {a4.get('note') or a4.get('reason')}")
    if a4.get("hard_model_exact_up_to") is not None and not a4.get("hard_failure_next"):
        con.print(f"    the hard model itself decodes every count correctly only for max_seq_len <= "
                  f"{a4['hard_model_exact_up_to']} (MLP resolution condition)")
    num = cert["numeric"]
    if num:
        ex = num["examples"]
        aw = num["all_words"]
        comp = next(p for p in aw["per_inv_tau"] if p["compiled"])
        ratios = [r["ratio"] for r in comp["rows"] if r["ratio"] is not None]
        hp = aw["high_precision"][0] if aw["high_precision"] else None
        con.print(f"numeric: {ex['count']} stored examples — hard reproduces RASP: {ex['hard_reproduced']} (numpy hard: "
                  f"{ex['numpy_hard_reproduced']}), soft agrees: {ex['soft_reproduced']}" + _deviations(ex))
        con.print(f"  all {aw['families']['exhaustive']} words: observed/bound "
                  + (f"up to {max(ratios):.10g}" if ratios else "below float64 resolution")
                  + (f"; 50 digits at n = {hp['n']}: {hp['observed_mp50']} vs bound {hp['bound']} ("
                     + (f"ratio {hp['ratio']:.4g}" if hp["ratio"] is not None else "the bound is 0: no ratio")
                     + f", '{hp['word']}')" if hp else "")
                  + f"; bound exceeded: {aw['violations']}, outputs differing: {aw['mismatched_outputs']}")
    con.print(status_line(cert, path))
