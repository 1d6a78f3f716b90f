"""``softhard hahn``: Hahn's obstacle (THEORY §1) for a bounded-PE model at one fixed temperature —
the sensitivity bound, N_fail proved for all n >= N_fail, and with ``--check`` the numeric
demonstration (:mod:`softhard.solver.hahn`).  The model is a model file or a formula's regime T
construction.  Exit 1 when the analysis does not apply or a demonstration contradicts it."""

from __future__ import annotations

import json
from fractions import Fraction

from ....constructions.errors import ParameterError
from ....constructions.model_export import export_transformer
from ....constructions.modelfile import load_model, parse_model
from ....constructions.parameters import check_eta, to_fraction
from ....constructions.parse import load_spec
from ...hahn import constructions_keep_working, demonstrate, hahn_analysis, parse_change_at
from ...pipeline import build
from .console import stdout_console
from ..options import schedule_option
from .formula import eps_ln_option


def handle(args) -> int:
    """Hahn's analysis of a model file or a formula's regime T construction at the fixed ``--tau``."""
    if (args.model is None) == (args.formula is None):
        raise ParameterError("give a formula (or .ltl file) or --model FILE")
    eps_ln = eps_ln_option(args)  # given without --comparator ln: one line
    if schedule_option(args)[0] is not None:  # it was accepted and ignored
        raise ParameterError("--schedule lin/log: hahn analyses one fixed temperature (--tau); Hahn's lemma bounds "
                             "bounded scores, and a growing 1/tau(n) is one of its escapes (THEORY §1, §9)")
    eta = check_eta(to_fraction(args.eta, "--eta"))
    change = parse_change_at(args.change_at)
    spec_f = None
    if args.model:
        spec = load_model(args.model)
        hm = spec.canonical()
        name = spec.name
    else:
        spec_f = load_spec(args.formula, alphabet=args.alphabet)
        c = build(spec_f, "T", beta=to_fraction(args.beta, "--beta"), eta=eta, comparator=args.comparator,
                  eps_ln=eps_ln)
        lns = [v for v, a in c.graph.nodes(data=True) if a["kind"] == "layernorm"]
        if lns:  # Hahn's lemma needs Lipschitz layers: say why it does not apply (THEORY §1)
            result = {"model": f"{spec_f.name} (regime T construction)", "applicable": False,
                      "inv_tau": str(1 / args.tau), "change_at": args.change_at, "eta": str(eta),
                      "layernorm_nodes": lns, "eps_ln": str(c.params.eps_ln), "reason": layernorm_reason(c.params.eps_ln)}
            if args.json:
                print(json.dumps(result, indent=1))
            else:
                print_hahn(result)
            return 1
        doc = export_transformer(c.model, name=f"{spec_f.name} (regime T construction)", at=spec_f.at)
        hm = parse_model(doc, path="<regime T construction>").canonical()
        name = doc["name"]
    if len(hm.alphabet) < 2:
        raise ParameterError(f"hahn analyses one-symbol changes, and the alphabet {{{', '.join(hm.alphabet)}}} has "
                             "no other symbol to change to; give --alphabet with at least two symbols")
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
        print_hahn(result)
    if not res.applicable:
        return 1
    ok = True
    for v in result.get("demonstration", {}).values():
        ok &= bool(v["bound_respected"]) and v["failure_forced_from_n_fail"] is not False
    for r in result.get("constructions", []):
        ok &= r["rounded_outputs_equal"]
    return 0 if ok else 1


def layernorm_reason(eps_ln) -> str:
    """Why Hahn's lemma does not bound a construction with a layer-norm comparator (THEORY §1, §5 (a))."""
    lip = "unbounded: ε_LN = 0" if not eps_ln else f"1/sqrt(ε_LN) = {float(eps_ln) ** -0.5:.4g}"
    return ("the construction has a layer normalisation (the ln comparator, THEORY §5 (a)). Hahn's lemma bounds how "
            "far one changed symbol moves each layer's output through the layers' Lipschitz constants; layer norm "
            f"y = F/sqrt(F^2 + ε_LN) has Lipschitz constant {lip} at F = 0, so the O(1/n) change a symbol makes to F "
            "(1/(2(n+1)) at least) can move y from -1 to 1 at every n. Layer norm is a third escape from Hahn's "
            "obstacle, next to a temperature shrinking with n (regime T) and unbounded positional embeddings "
            "(regime U)" + (": with ε_LN = 0 the comparator is exact for every n." if not eps_ln else
                            "; with ε_LN > 0 it is exact while 4·ε_LN·(n+1)^2 stays small (1/ε_LN = Θ(n^2))."))


def print_hahn(r: dict) -> None:
    """The analysis (per head R, M; per output the sensitivity bound and N_fail) and the demonstrations."""
    con = stdout_console()
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
