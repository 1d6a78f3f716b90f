"""``softhard bound``: per attention node of a formula's construction, the tight SymPy bound, the
inverse temperature it needs at ``--n-max`` (tight numeric, closed form, generic gap lemma) and its
growth order in n; with ``--schedule lin|log`` also the constant S each node needs (THEORY §9:
at ``--n-max`` and its supremum over n, numeric — ``certify --schedule`` proves it for all n)."""

from __future__ import annotations

import json

import sympy as sp
from rich.table import Table

from ....bounds import selection as S
from ....bounds.cache import text_of
from ....bounds.core import asymptotic_order, tau
from ....bounds.derive import evaluate, in_tau, latex, required_inv_tau
from ....constructions.errors import ParameterError
from ...search import schedule_requirement
from ..options import EXIT_OK
from .console import fmt, progress, stdout_console
from ..options import schedule_option
from .formula import formula_construction


def handle(args) -> int:
    """Per attention node: its bound, the 1/tau it needs at ``--n-max`` and its growth order (and,
    under ``--schedule``, the constant S it needs)."""
    if schedule_option(args)[1] is not None:
        raise ParameterError("bound --schedule takes the kind only (lin or log): it reports the S each node needs")
    with progress("deriving the node bounds") as say:
        c = formula_construction(args, schedules=True)
        nodes = node_rows(c, args.n_max, say)
    nmax = args.n_max
    required = {}
    for x in nodes:
        required[x["parameter"]] = max(required.get(x["parameter"], 0.0), x["inv_tau_required"])
    result = {"formula": str(c.spec.formula), "alphabet": list(c.spec.alphabet), "regime": c.regime,
              "beta": str(c.beta), "eta": str(c.eta), "n_max": nmax, "nodes": nodes,
              "comparator": c.source.get("comparator"),
              "composed": "every node's error <= eta  =>  every clean-up round_eta is exact  =>  "
                          "soft output == hard output (THEORY §3)",
              "inv_tau_required_all_nodes": required.get("tau", 0.0),
              "inv_required_by_parameter": required}
    if c.params.schedule is not None:
        result["schedule"] = c.params.schedule
    if args.json:
        print(json.dumps(result, indent=2))
        return EXIT_OK
    con = stdout_console()
    con.print(f"[bold]{c.spec.formula}[/bold]  regime {c.regime}, beta = {c.beta}, eta = {c.eta}, n_max = {nmax}"
              + (f", comparator {result['comparator']}" if result["comparator"] else ""))
    if not nodes:
        con.print("no attention nodes: the formula is computed exactly by the embedding and ReLU gates")
        return EXIT_OK
    t = Table(show_header=True, header_style="bold")
    for col in ("node", "op", "layer", "param p", f"1/p needed at n={nmax} (tight)", "closed form", "gap lemma",
                "order", "gap-lemma order"):
        t.add_column(col, justify="right" if col not in ("node",) else "left", overflow="fold")
    for x in nodes:
        t.add_row(x["node"], x["operator"], str(x["layer"]), x["parameter"], fmt(x["inv_tau_required"], 8),
                  fmt(x["inv_tau_closed_form"], 8), fmt(x["inv_tau_generic"], 8) if x["inv_tau_generic"] else "-",
                  x["order"], x["generic_order"] or "-")
    con.print(t)
    if c.params.schedule is not None:
        g = {"lin": "S*n", "log": "S*ln(n+1)"}[c.params.schedule]
        ts = Table(show_header=True, header_style="bold",
                   title=f"schedule 1/tau(n) = {g}: the constant S each node needs (numeric; certify proves)")
        for col in ("node", f"S needed at n={nmax}", "sup over n (to 1e12)", "at n", "one S for every n?"):
            ts.add_column(col, justify="left" if col == "node" else "right", overflow="fold")
        for x in nodes:
            sc = x.get("schedule")
            if sc is not None:
                ts.add_row(x["node"], fmt(sc["S_required_at_n_max"], 8), fmt(sc["S_required_sup"], 8),
                           str(sc["sup_at_n"]), "yes" if sc["survives"] else "no: S(n) still grows at n = 1e12")
        con.print(ts)
    shown = set()
    for x in nodes:
        key = x["leak_bound"]
        if key in shown:
            continue
        shown.add(key)
        kind = {"selection": "key ≡ 1 (Y/X)" if x["key_const"] else "general key"}.get(x["kind"], x["kind"])
        con.print(f"\n[bold]error bound ({kind})[/bold], attained by {x['attained_by']}:")
        con.print(x["leak_bound_latex"] if args.latex else key)
        con.print(f"[bold]closed-form 1/{x['parameter']}*(n, eta)[/bold]:")
        con.print(x["closed_form_latex"] if args.latex else x["closed_form"])
        if x["all_n_bound"]:
            con.print(f"[bold]bound for all n[/bold]: {x['all_n_bound']}")
    con.print(f"\n{result['composed']}")
    return EXIT_OK


def node_rows(c, nmax: int, say) -> list[dict]:
    """Per attention node of the construction ``c``: its bound, the 1/tau it needs at ``nmax``
    (float), the closed form and growth orders (``bound``'s JSON rows)."""
    subs = {S.beta: sp.Rational(c.beta.numerator, c.beta.denominator),
            S.eta: sp.Rational(c.eta.numerator, c.eta.denominator)}
    nodes = []
    for v, nb in c.bounds.items():
        say(f"node {v}")
        b = nb.bound
        order, const = growth(b.inv_tau_star, subs, simplify=True)
        gen_star = b.inv_tau_star_generic
        gorder = growth(gen_star, subs)[0] if gen_star is not None else None
        req = (float(required_inv_tau(in_tau(b, c.params.exact()), n_value=nmax, eta_value=c.eta, beta_value=c.beta))
               if nmax >= b.n_min else 0.0)
        gen = (float(required_inv_tau(b.generic, n_value=nmax, eta_value=c.eta, beta_value=c.beta))
               if nmax >= 2 and b.generic is not None else None)
        closed = float(evaluate(b.inv_tau_star, n_value=max(nmax, b.n_min), inv_tau=1, beta_value=c.beta,
                                eta_value=c.eta))
        nodes.append({
            "node": v, "operator": nb.operator, "layer": nb.layer, "kind": b.kind, "key_const": b.key_const,
            "parameter": str(b.parameter),
            "leak_bound": str(b.leak), "leak_bound_latex": latex(b.leak),
            "all_n_bound": None if b.all_n is None else str(b.all_n),
            "generic_bound": None if b.generic is None else str(b.generic), "gap": str(b.gap),
            "inv_tau_required": req, "inv_tau_closed_form": closed, "inv_tau_generic": gen,
            "closed_form": str(b.inv_tau_star), "closed_form_latex": latex(b.inv_tau_star),
            "order": order, "order_constant": const, "generic_order": gorder,
            "attained_by": b.attained_by, "valid_for_n_ge": b.n_min, "source": b.source,
            "schedule": schedule_row(c, b, nmax),
        })
    return nodes


def growth(expr: sp.Expr, subs: dict, *, simplify: bool = False) -> tuple[str, str]:
    """:func:`~softhard.bounds.core.asymptotic_order` of ``expr`` with ``subs`` (β, η) substituted
    (simplified first when ``simplify``): ``(label, str of the leading constant)``, e.g. ``("Θ(n)",
    "log(2)/beta")``.  Kept in the derivation cache by the expression's tree: SymPy's limit takes
    ~0.2–0.9 s per call, and the nodes of a nested formula share a handful of bound shapes (a
    99-deep ``Y…Y a`` has two).  Raises ``ValueError`` when no growth class fits."""
    def compute() -> str:
        e = expr.subs(subs)
        label, const = asymptotic_order(sp.simplify(e) if simplify else e)
        return json.dumps([label, str(const)])

    extra = [sorted([str(k), str(v)] for k, v in subs.items()), simplify]
    label, const = json.loads(text_of("order", expr, extra, compute))
    return label, const


def schedule_row(c, b, nmax: int) -> dict | None:
    """Under a schedule (THEORY §9), for a bound whose parameter is τ: the S it needs at ``nmax``,
    the supremum over n on :data:`~softhard.solver.search.SCHEDULE_NS` and whether it levels off
    (numeric, from :func:`~softhard.solver.search.schedule_requirement`); None otherwise."""
    if c.params.schedule is None or b.parameter != tau:
        return None
    leak_s = in_tau(b, c.params.exact()).subs(tau, tau / c.params.schedule_factor())
    sup, at, growing = schedule_requirement(leak_s, max(2, b.n_min), tolerance=c.tolerance, beta=c.beta)
    here = (float(required_inv_tau(leak_s, n_value=nmax, eta_value=c.tolerance, beta_value=c.beta))
            if nmax >= b.n_min else 0.0)
    return {"S_required_at_n_max": here, "S_required_sup": float(sup), "sup_at_n": at, "survives": not growing}
