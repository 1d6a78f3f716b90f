"""The claims step: every kind's claims, in one structure (ARCHITECTURE.md, "claims").

A claim is "for every integer n in [n_lo, n_hi]: bound(n) <= tolerance" with every parameter
substituted (:class:`~softhard.solver.check.Claim`).  :func:`claim_specs` forms the distinct claims
of a construction at one temperature (nodes with the same bound share a claim);
:func:`claim_json` is how every certificate kind records a claim and its result; the other
helpers render the derived, parameter-independent parts of a certificate (node rows, the
construction section, the graph, exact rationals, library versions).
"""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from fractions import Fraction
from importlib import metadata

import mpmath
import networkx as nx
import sympy as sp

from ..bounds.cache import srepr_of, str_of
from ..bounds.cache import subs as cached_subs
from ..bounds.core import n as n_sym
from ..bounds.derive import NodeBound, alternative_bound, in_tau, latex, required_inv_tau
from ..constructions.errors import CertificateError, ParameterError
from .arbcheck import exceeds
from .check import Claim, ClaimResult
from .pipeline import Construction


def versions() -> dict:
    out = {"python": platform.python_version()}
    for dist in ("softhard", "z3-solver", "sympy", "mpmath", "python-flint", "numpy", "networkx", "lark"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def frac_str(x: Fraction) -> str:
    return f"{x.numerator}/{x.denominator}" if x.denominator != 1 else str(x.numerator)


def parse_frac(s, where: str) -> Fraction:
    try:
        return Fraction(str(s))
    except (ValueError, ZeroDivisionError):
        raise CertificateError(f"{where}: {s!r} is not an exact rational", path=where) from None


@dataclass
class ClaimSpec:
    """One claim to prove: the substituted bound (in n only), tolerance, range, and the nodes using it."""

    id: str
    expr: sp.Expr
    tolerance: Fraction
    n_lo: int
    n_hi: int | None
    nodes: list[str] = field(default_factory=list)
    template: NodeBound | None = None
    #: a schedule's claim: exponentials tied to n get polynomial enclosures (THEORY §9 lemma E)
    poly_exp: bool = False

    def claim(self) -> Claim:
        return Claim(self.expr, self.tolerance, self.n_lo, self.n_hi, label=self.id, poly_exp=self.poly_exp)


def claim_specs(c: Construction, inv_tau: Fraction, n_lo: int, n_max: int, all_n: bool) -> list[ClaimSpec]:
    """The distinct claims for construction ``c`` at ``1/τ = inv_tau`` (one per distinct bound)."""
    subs = c.params.substitution(inv_tau=inv_tau)
    out: dict[tuple, ClaimSpec] = {}
    for v, nb in c.bounds.items():
        b = nb.bound
        lo = max(n_lo, b.n_min)
        hi = None if all_n else n_max
        if hi is not None and lo > hi:
            continue  # the node is exact on the whole range (only BOS attendable)
        expr = cached_subs(b.leak, subs)
        tol = cached_subs(b.tolerance, subs)
        if expr.free_symbols - {n_sym} or not tol.is_Rational:
            raise ParameterError(f"node {v}: bound has unassigned parameters "
                                 f"{sorted(map(str, (expr.free_symbols - {n_sym}) | tol.free_symbols))}")
        key = (srepr_of(expr), str(tol), lo, hi)
        if key not in out:
            out[key] = ClaimSpec(id=f"c{len(out)}", expr=expr, tolerance=Fraction(int(tol.p), int(tol.q)),
                                 n_lo=lo, n_hi=hi, template=nb, poly_exp=c.params.schedule is not None)
        out[key].nodes.append(v)
    return list(out.values())


def node_static(nb: NodeBound, n_lo: int, n_max: int, all_n: bool) -> dict:
    """The parts of a certificate's node row that are derived from the bound alone (verify
    regenerates and compares them)."""
    b = nb.bound
    return {
        "node": nb.node, "operator": nb.operator, "layer": nb.layer, "kind": b.kind, "quantity": b.quantity,
        "bound": {"srepr": srepr_of(b.leak), "text": str_of(b.leak), "latex": latex(b.leak),
                  "tolerance": str(b.tolerance), "valid_for_n_ge": b.n_min, "source": b.source,
                  "attained_by": b.attained_by},
        "condition": (f"{b.kind} error <= {b.tolerance} for every integer n in "
                      f"[{max(n_lo, b.n_min)}, {'inf' if all_n else n_max}]"
                      + (f"; for n < {b.n_min} only BOS is attendable and the error is 0" if b.n_min > n_lo else "")),
    }


def choice_static(c: Construction, v: str, n_max: int, all_n: bool) -> dict | None:
    """The ``choice`` of a node row (THEORY §4b): for a selection that may be built unique- or
    average-hard, the construction used, the other one, and both tight numeric requirements
    ``1/τ`` at the binding length ``n_max`` (mpmath, :func:`~softhard.bounds.derive.required_inv_tau`;
    ``None`` for an all-n certificate); None for every other node.  Deterministic: verify
    re-derives it."""
    g = c.graph
    if v not in g or not g.nodes[v].get("average_ok"):
        return None
    alt = alternative_bound(g, v, c.regime)
    nb = c.bounds[v]
    n_b = None if all_n else n_max

    def tight(b):
        if n_b is None or n_b < b.n_min:
            return None
        return float(required_inv_tau(in_tau(b, c.params.exact()), n_value=n_b, eta_value=c.tolerance,
                                      beta_value=c.beta))

    method = c.source.get("construction", "auto")
    return {"attention": g.nodes[v]["attention"], "alternative": alt[0] if alt else None, "method": method,
            "binding_n": n_b, "inv_tau_tight": tight(nb.bound),
            "alternative_inv_tau_tight": tight(alt[1]) if alt else None,
            "alternative_kind": alt[1].kind if alt else None,
            "alternative_bound_text": str_of(alt[1].leak) if alt else None,
            "reason": ("auto: average-hard in regime T — its output-error bound is at most the unique "
                       "construction's leak bound for every n >= 2, tau and beta (THEORY §4b), so it never needs "
                       "a larger 1/tau" if method == "auto" and c.regime == "T" else
                       "auto: unique-hard — one tau for every n needs the position term (THEORY §4b)"
                       if method == "auto" else f"--construction {method}")}


def schedule_static(c: Construction, inv_tau: Fraction) -> dict | None:
    """A schedule certificate's ``construction.schedule`` (THEORY §9): its kind (an input), S = the
    stated 1/τ constant and ``1/τ(n)`` as text; None for the constant schedule."""
    if c.params.schedule is None:
        return None
    g = {"lin": "n", "log": "ln(n+1)"}[c.params.schedule]
    return {"kind": c.params.schedule, "S": frac_str(inv_tau), "inv_tau_of_n": f"{frac_str(inv_tau)}*{g}",
            "meaning": f"1/tau(n) = S*{g}: logits scaled by S*{g} (THEORY §9)"}


def construction_static(c: Construction, inv_tau: Fraction) -> dict:
    """The derived parts of a certificate's ``construction`` section (verify compares them)."""
    sched = schedule_static(c, inv_tau)
    return {**({"schedule": sched} if sched is not None else {}),
        "title": c.title, "kind": c.kind, "regime": c.regime,
        "positional": c.model.positional_name, "bounded_positional": c.model.bounded,
        "params": {k: frac_str(v) for k, v in c.params.exact().items()},
        "tau": frac_str(1 / inv_tau), "inv_tau": frac_str(inv_tau),
        "inv_tau_decimal": mpmath.nstr(mpmath.mpf(inv_tau.numerator) / inv_tau.denominator, 15),
    }


#: n at which :func:`schedule_outcome` evaluates a bound to tell "fails at small n" from "does not survive"
FAR_N = 10**12


def _growing_term(c: Construction, nb: NodeBound) -> str:
    """Which term of a node's bound grows under the construction's schedule (THEORY §9 table)."""
    b, k = nb.bound, c.params.schedule_kind
    if b.kind == "selection" and c.regime == "T":
        return {"log": "the earlier key = 1 competitors sit at gaps k·β/n, so they weigh Σ_k r^k with "
                       "r = (n+1)^(-beta*S/n) -> 1, i.e. about n/(beta*S*ln(n+1)) -> infinity: a gap shrinking like 1/n "
                       "needs 1/tau(n) = Theta(n), and ln-scaling gives only Theta(log n)",
                "lin": "r = e^(-beta*S) is constant: the sum of the competitors r/(1-r) does not decay, so S must make "
                       "it <= eta/(1-eta) on its own"}.get(k, "the competitors' weight grows like n")
    if b.kind == "average-selection":
        return ("the n - 2 key = 0 positions at gap 1 weigh (n-2)*(n+1)^(-S), which tends to 0 only for S > 1"
                if k == "log" else "the n - 2 key = 0 positions at gap 1 weigh (n-2)*e^(-S*n)")
    if b.kind == "comparator-head":
        return "the comparator's gap 1/(2(n+1)) shrinks like 1/n; only 1/tau(n) = Theta(n) keeps its leak bounded"
    return "the bound at large n exceeds the tolerance"


def schedule_outcome(c: Construction, nb: NodeBound, inv_tau: Fraction, cs: ClaimSpec | None, r: ClaimResult | None,
                     all_n: bool) -> dict:
    """Per node under a schedule (THEORY §9): ``survives_all_n`` (True: the all-n claim is proved;
    False: refuted; None: unknown or a finite range), ``holds_up_to_n`` (a refuted all-n claim: the
    largest n below the smallest violation, when the bisection proved every smaller n), and the
    ``reason`` (for a refuted claim: the bound at n = 10^12 in ball arithmetic, which term grows).
    Deterministic: verify re-derives it."""
    if cs is None or r is None:
        return {"survives_all_n": True, "holds_up_to_n": None, "reason": "exact for every n (no claim)"}
    if r.status == "proved":
        return {"survives_all_n": True if all_n else None, "holds_up_to_n": None if all_n else cs.n_hi,
                "reason": ("proved for every n >= %d" % cs.n_lo) if all_n else f"proved on [{cs.n_lo}, {cs.n_hi}]"}
    if r.status != "refuted":
        return {"survives_all_n": None, "holds_up_to_n": None, "reason": f"unknown: {r.reason}"}
    up = r.counterexample - 1 if (r.counterexample is not None and not r.reason) else None
    far, val = exceeds(cs.expr, cs.tolerance, FAR_N, prec=256)
    why = (f"does not survive: the bound at n = 10^12 is {val} > {frac_str(cs.tolerance)}; {_growing_term(c, nb)}"
           if far else f"fails at n = {r.counterexample} but is within tolerance at n = 10^12: a larger S is "
                      "needed at small n")
    return {"survives_all_n": False if all_n else None, "holds_up_to_n": up, "reason": why}


def claim_json(cs: ClaimSpec, r: ClaimResult) -> dict:
    """A claim and its result as every certificate kind records it (``seconds`` fields are measured)."""
    sc = r.second_check
    return {
        "id": cs.id,
        "nodes": cs.nodes,
        "expr_srepr": srepr_of(cs.expr),
        "expr_text": str_of(cs.expr),
        "tolerance": frac_str(cs.tolerance),
        "n_lo": cs.n_lo,
        "n_hi": cs.n_hi,
        "condition": Claim(cs.expr, cs.tolerance, cs.n_lo, cs.n_hi).text(),
        "status": r.status,
        "method": ("z3 (negated claim unsatisfiable on every box of n; exp terms replaced by exact rational "
                   "enclosures, n real; a box answered 'sat' is only a candidate — its integers were checked "
                   "rigorously and the box split; the 'unsat' boxes cover the range)"
                   + ("; schedule (THEORY §9): rational powers h^(-p/q) encoded exactly by R > 0, R^Q*h = 1 "
                      "(lemma L), exp atoms with a polynomial argument g <= 0 also satisfy E*(1 - g + g^2/2) <= 1 "
                      "(lemma E)" if cs.poly_exp else "")) if r.status == "proved" else
                  ("z3 candidate + arb rigorous evaluation at the counterexample" if r.status == "refuted"
                   else "z3/arb inconclusive"),
        "reason": r.reason,
        "counterexample": r.counterexample,
        "value_at_counterexample": r.value,
        "seconds": round(r.seconds, 6),
        "queries": [{"lo": q.lo, "hi": q.hi, "answer": q.answer, "seconds": round(q.seconds, 6),
                     "reason": q.reason, "smtlib": q.smtlib} for q in r.queries],
        "second_check": None if sc is None else {
            "method": "python-flint arb ball arithmetic with subdivision", "status": sc.status, "boxes": sc.boxes,
            "seconds": round(sc.seconds, 6), "counterexample": sc.counterexample, "value": sc.value,
            "reason": sc.reason},
        "disagreement": r.disagreement,
    }


def graph_data(g: nx.DiGraph) -> dict:
    """``networkx.node_link_data`` with edges under ``"links"`` (stable across networkx 3.x)."""
    try:
        return nx.node_link_data(g, edges="links")
    except TypeError:  # networkx < 3.4
        return nx.node_link_data(g)
