"""Bound certificates: assemble, write atomically, load, and verify (THEORY §8).

A certificate asserts, for one construction, its exact parameters and a length range, that every
attention node's error bound meets its tolerance — per node: the symbolic bound (SymPy ``srepr``
and LaTeX), the condition, how it was established (``proved`` with the exact SMT-LIB2 queries Z3
found unsatisfiable, ``refuted`` with a counterexample, or ``unknown``), the independent arb
check, and the numeric confirmation (inputs tried, worst observed, bound there, ratio).  The
composed claim of a logic is the conjunction (THEORY §3).

Integrity: every top-level section, node and claim has its own SHA-256 (so an edit is reported
by field), plus one hash of the whole.  :func:`verify_certificate` additionally re-derives the
construction from the stored source, regenerates every query from the stated bound, parameters
and range, re-runs them, re-checks counterexamples and the numeric summary, so an edit that also
rewrites the hashes is still caught, by field.

The JSON Schema is shipped as ``softhard/solver/schema/certificate-1.schema.json``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import platform
import tempfile
import time
from dataclasses import dataclass, field
from fractions import Fraction
from importlib import metadata, resources
from pathlib import Path
from typing import Callable

import mpmath
import networkx as nx
import sympy as sp

from ..bounds.confirm import confirm
from ..bounds.core import n as n_sym
from ..bounds.core import tau as tau_sym
from ..bounds.derive import NodeBound, latex
from ..constructions.counting import adversarial_layernorm_words
from ..constructions.errors import CertificateError, ParameterError, SearchFailed
from ..constructions.simulate import adversarial_words, all_words, random_words
from .arbcheck import arb_check, exceeds
from .check import Claim, ClaimResult, check_claim, run_z3
from .encode import build_query
from .pipeline import Construction, rebuild
from .search import empirical_inv_tau, find_inv_tau

#: largest length at which ``--find-tau`` measures the empirical minimum 1/τ (run time)
EMPIRICAL_N_CAP = 10_000

SCHEMA = "softhard-certificate"
SCHEMA_VERSION = 1
SCHEMA_FILE = "certificate-1.schema.json"


def schema() -> dict:
    """The JSON Schema of certificates (draft 2020-12)."""
    return json.loads(resources.files("softhard.solver").joinpath("schema", SCHEMA_FILE).read_text("utf-8"))


def _versions() -> dict:
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
        raise CertificateError(f"{where}: {s!r} is not an exact rational") from None


# --------------------------------------------------------------------------------------------
# claims


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

    def claim(self) -> Claim:
        return Claim(self.expr, self.tolerance, self.n_lo, self.n_hi, label=self.id)


def claim_specs(c: Construction, inv_tau: Fraction, n_lo: int, n_max: int, all_n: bool) -> list[ClaimSpec]:
    """The distinct claims for construction ``c`` at ``1/τ = inv_tau`` (one per distinct bound)."""
    subs = c.subs(inv_tau)
    out: dict[tuple, ClaimSpec] = {}
    for v, nb in c.bounds.items():
        b = nb.bound
        lo = max(n_lo, b.n_min)
        hi = None if all_n else n_max
        if hi is not None and lo > hi:
            continue  # the node is exact on the whole range (only BOS attendable)
        expr = sp.sympify(b.leak).subs(subs)
        tol = sp.sympify(b.tolerance).subs(subs)
        if expr.free_symbols - {n_sym} or not tol.is_Rational:
            raise ParameterError(f"node {v}: bound has unassigned parameters "
                                 f"{sorted(map(str, (expr.free_symbols - {n_sym}) | tol.free_symbols))}")
        key = (sp.srepr(expr), str(tol), lo, hi)
        if key not in out:
            out[key] = ClaimSpec(id=f"c{len(out)}", expr=expr, tolerance=Fraction(int(tol.p), int(tol.q)),
                                 n_lo=lo, n_hi=hi, template=nb)
        out[key].nodes.append(v)
    return list(out.values())


def node_static(nb: NodeBound, n_lo: int, n_max: int, all_n: bool) -> dict:
    """The parts of a certificate's node row that are derived from the bound alone (verify
    regenerates and compares them)."""
    b = nb.bound
    return {
        "node": nb.node, "operator": nb.operator, "layer": nb.layer, "kind": b.kind,
        "bound": {"srepr": sp.srepr(b.leak), "text": str(b.leak), "latex": latex(b.leak),
                  "tolerance": str(b.tolerance), "valid_for_n_ge": b.n_min, "source": b.source,
                  "attained_by": b.attained_by},
        "condition": (f"{b.kind} error <= {b.tolerance} for every integer n in "
                      f"[{max(n_lo, b.n_min)}, {'inf' if all_n else n_max}]"
                      + (f"; for n < {b.n_min} only BOS is attendable and the error is 0" if b.n_min > n_lo else "")),
    }


def construction_static(c: Construction, inv_tau: Fraction) -> dict:
    """The derived parts of a certificate's ``construction`` section (verify compares them)."""
    return {
        "title": c.title, "kind": c.kind, "regime": c.regime,
        "positional": c.model.positional_name, "bounded_positional": c.model.bounded,
        "params": {k: frac_str(v) for k, v in c.params.items()},
        "tau": frac_str(1 / inv_tau), "inv_tau": frac_str(inv_tau),
        "inv_tau_decimal": mpmath.nstr(mpmath.mpf(inv_tau.numerator) / inv_tau.denominator, 15),
    }


def _claim_json(cs: ClaimSpec, r: ClaimResult) -> dict:
    sc = r.second_check
    return {
        "id": cs.id,
        "nodes": cs.nodes,
        "expr_srepr": sp.srepr(cs.expr),
        "expr_text": str(cs.expr),
        "tolerance": frac_str(cs.tolerance),
        "n_lo": cs.n_lo,
        "n_hi": cs.n_hi,
        "condition": Claim(cs.expr, cs.tolerance, cs.n_lo, cs.n_hi).text(),
        "status": r.status,
        "method": ("z3 (negated claim unsatisfiable on every box of n; exp terms replaced by exact rational "
                   "enclosures, n real; a box answered 'sat' is only a candidate — its integers were checked "
                   "rigorously and the box split; the 'unsat' boxes cover the range)") if r.status == "proved" else
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


# --------------------------------------------------------------------------------------------
# numeric confirmation


def numeric_families(c: Construction, n_max: int, inv_tau: float, *, exhaustive_len: int = 10,
                     random_count: int = 1000, random_n_max: int = 500, adversarial_ns=(10, 100, 1000, 10000),
                     seed: int = 0) -> dict[str, list]:
    """The input families of the numeric confirmation (issue 2 item 7), capped by ``n_max``."""
    alph = c.model.alphabet
    exh = []
    for k in range(1, min(exhaustive_len, n_max) + 1):
        if len(alph) ** k > 50_000:
            break
        exh.extend(all_words(alph, k))
    rnd = []
    if random_count:
        # lengths from a log-spaced grid (≤ 32 distinct values: one batch per length)
        top = min(random_n_max, n_max)
        grid = sorted({max(1, int(round(top ** (k / 31)))) for k in range(32)})
        per = max(1, random_count // len(grid))
        for k, L in enumerate(grid):
            rnd.extend(random_words(alph, per, L, seed=seed + k, n_min=L))
    adv: list = []
    for k in sorted({min(k, n_max) for k in adversarial_ns}):
        adv.extend(dict.fromkeys(adversarial_words(c.model, k, inv_tau).values()))
        adv.extend(dict.fromkeys(adversarial_layernorm_words(c.model, k).values()))  # LN comparators
    fams = {"exhaustive": exh, "random": rnd, "adversarial": list(dict.fromkeys(adv))}
    return {k: v for k, v in fams.items() if v}


def _numeric(c: Construction, n_max: int, inv_tau: Fraction, opts: dict, progress=None) -> dict:
    it = float(inv_tau)
    opts = dict(opts)
    key_ns = opts.pop("key_pattern_ns", None)
    fams = numeric_families(c, n_max, it, **opts)
    if key_ns is None:  # the binding length, capped for run time, and two smaller ones
        top = min(n_max, 10**5)
        key_ns = sorted({k for k in (2, max(2, top // 100), top) if k <= n_max})
    conf = confirm(c.model, c.bounds, fams, it, beta=c.beta, eta=c.eta, progress=progress, key_pattern_ns=key_ns)
    per_node = conf.summary(word_chars=64)
    lengths = {f: [min(x.n for x in conf.checks if x.family == f), max(x.n for x in conf.checks if x.family == f)]
               for f in dict.fromkeys(x.family for x in conf.checks)}
    return {"inv_tau_float": it, "families": conf.words, "lengths": lengths,
            "worst_means": "per node, the check with the largest observed/bound ratio (largest_leak: the largest leak)",
            "mismatched_outputs": sum(len(v) for v in conf.mismatches.values()),
            "mismatched_outputs_unguarded": sum(len(v) for v in conf.unguarded_mismatches.values()),
            "mismatches_count": "positions (word, position) whose clean output differs from the hard model; "
                                "'unguarded': at a length where some node's bound exceeds eta (not claimed exact)",
            "premise_failures": conf.premise_failures,
            "max_output_deviation": conf.max_output_deviation, "ok": conf.ok, "nodes": per_node,
            "note": "a numeric run confirms or refutes, never proves (THEORY §7)"}


# --------------------------------------------------------------------------------------------
# finite precision (THEORY §7)

#: fraction bits of the floating-point formats whose limits a certificate reports
FORMATS = {"float64": 52, "float32": 23, "float16": 10, "bfloat16": 7}


def precision_section(c: Construction, n_max: int, inv_tau: Fraction, all_n: bool) -> dict:
    """What finite precision does to the certified construction (THEORY §7; notebook 06).

    * per format, the largest length at which adjacent positions still get distinct scores:
      regime T (scores ``b + β·j/n``, adjacent gap ``β/n`` near 1): the first collision of
      computed keys lies in ``[8/9, 1]·β·2^m`` (proved and measured in notebook 06), so
      ``n < ⌈8/9·β·2^m⌉`` is safe; regime U (integer scores up to ``2n``): exact while
      ``2n ≤ 2^(m+1)``, i.e. ``n ≤ 2^m``;
    * float64 at n_max: the leak the engine computes is within the relative rounding allowance
      of :func:`softhard.constructions.simulate.leak_rounding_allowance` of the exact leak, so the
      float64 run stays within η when ``bound·(1 + allowance) ≤ η``.

    A certificate's claims are about exact arithmetic; this section says how far a float run of
    the same construction can be trusted.  Other kinds of construction report nothing here.
    """
    from ..constructions.simulate import leak_rounding_allowance

    if c.kind != "formula" or c.regime not in ("T", "U"):
        return {"note": "no finite-precision analysis for this kind of construction"}
    beta = c.beta
    fmts = {}
    for name, m in FORMATS.items():
        if c.regime == "T":
            safe = -(-(8 * beta.numerator * 2**m) // (9 * beta.denominator))  # ceil(8/9·β·2^m)
            rule = "n < ceil(8/9 * beta * 2^m)"
            limit = safe - 1
        else:
            limit = 2**m
            rule = "n <= 2^m (integer scores up to 2n exact)"
        fmts[name] = {"fraction_bits": m, "adjacent_positions_separable_up_to_n": limit, "rule": rule,
                      "covers_n_max": (not all_n) and n_max <= limit}
    n_chk = n_max
    worst = max((float(nb.value(n_chk, inv_tau, c.beta, c.eta)) for nb in c.bounds.values()), default=0.0)
    if all_n:
        worst = max([worst] + [float(c.bounds[v].bound.all_n.subs(c.subs(inv_tau)))
                               for v in c.bounds if c.bounds[v].bound.all_n is not None])
    scale = 1 + float(beta) + 0.5 if c.regime == "T" else 2.0 * (n_chk + 1)  # Σ|q_c k_c| ≤ i + j
    allow = leak_rounding_allowance(scale, 2, float(inv_tau), n_chk + 1)
    return {
        "formats": fmts,
        "float64_at_n_max": {"n": n_chk, "worst_bound": worst, "rounding_allowance_rel": allow,
                             "worst_float64_leak": worst * (1 + allow),
                             "within_eta": worst * (1 + allow) <= float(c.eta)},
        "source": "THEORY §7; notebook 06_finite_precision (collision interval [8/9, 1]·β·2^m)",
    }


# --------------------------------------------------------------------------------------------
# certify


def certify(c: Construction, *, n_max: int, n_lo: int = 1, tau: Fraction | None = None, find_tau: bool = False,
            all_n: bool | None = None, timeout_s: float = 20.0, numeric: bool = True, numeric_opts: dict | None = None,
            progress: Callable[[str], None] | None = None, tune: tuple[str, ...] = ()) -> dict:
    """Build a certificate for ``c`` on ``n ∈ [n_lo, n_max]`` (or all ``n ≥ n_lo`` in regime U).

    Exactly one of ``tau`` (an exact positive Fraction) and ``find_tau`` must be given.
    ``tune``: further parameters the search finds together with τ (``("eps_ln",)``: the largest
    certifiable layer-norm ε; the construction is then rebuilt with it).
    ``all_n`` defaults to True when every bound is uniform in n (regime U/P selections, the ``pe``
    comparator; :attr:`Construction.uniform_in_n`) and False otherwise.
    Returns the certificate as a dict (see the schema); raises :class:`ParameterError` on bad input.
    """
    t_start = time.perf_counter()
    if (tau is None) == (not find_tau):
        raise ParameterError("give exactly one of --tau T and --find-tau")
    if n_max < 1 or n_lo < 1 or n_lo > n_max:
        raise ParameterError(f"need 1 <= n_min <= n_max, got n_min={n_lo}, n_max={n_max}")
    if tau is not None and tau <= 0:
        raise ParameterError(f"tau must be > 0, got {tau}")
    if all_n is None:
        all_n = c.uniform_in_n
    say = progress or (lambda s: None)
    search = None
    if find_tau:
        say("searching for the largest certifiable tau")
        search = _search(c, n_lo, n_max, all_n, timeout_s, tune=("tau",) + tuple(tune))
        if search["inv_tau"] is None:
            raise SearchFailed(f"--find-tau: no certifiable temperature found: {search['message']}")
        inv_tau = parse_frac(search["inv_tau"], "search")
        if search.get("params"):  # e.g. ε_LN: rebuild the construction with the value found
            c = rebuild(c.source, c.regime, {**c.params, **{k: parse_frac(v, "search") for k, v in
                                                            search["params"].items()}})
    else:
        inv_tau = 1 / tau
    t_solve = time.perf_counter()
    specs = claim_specs(c, inv_tau, n_lo, n_max, all_n)
    results: dict[str, ClaimResult] = {}
    for cs in specs:
        say(f"proving claim {cs.id} ({len(cs.nodes)} node(s))")
        results[cs.id] = check_claim(cs.claim(), timeout_s=timeout_s)
    solve_s = time.perf_counter() - t_solve
    claims = [_claim_json(cs, results[cs.id]) for cs in specs]
    by_node = {v: cs for cs in specs for v in cs.nodes}
    t_num = time.perf_counter()
    num = None
    if numeric:
        say("numeric confirmation")
        num = _numeric(c, n_max, inv_tau, numeric_opts or {}, progress=lambda f: say(f"numeric: {f}"))
    numeric_s = time.perf_counter() - t_num
    nodes = []
    for v, nb in c.bounds.items():
        cs = by_node.get(v)
        nodes.append({
            **node_static(nb, n_lo, n_max, all_n),
            "claim": cs.id if cs else None,
            "status": results[cs.id].status if cs else "proved",
            "numeric": (num or {}).get("nodes", {}).get(v),
        })
    statuses = [x["status"] for x in claims]
    status = "refuted" if "refuted" in statuses else ("unknown" if "unknown" in statuses else "proved")
    cert = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "tool": _versions(),
        "source": c.source,
        "construction": {**construction_static(c, inv_tau),
                         "tau_choice": "found by --find-tau" if find_tau else "given"},
        "range": {"n_min": n_lo, "n_max": n_max, "all_n": all_n},
        "graph": json.loads(json.dumps(graph_data(c.graph))),
        "nodes": nodes,
        "claims": claims,
        "composed": ("all node claims proved  =>  every clean-up round_eta is exact  =>  the soft transformer's "
                     "output equals the hard transformer's on every word in the range (THEORY §3)"),
        "status": status,
        "search": search,
        "numeric": num,
        "precision": precision_section(c, n_max, inv_tau, all_n),
        "times": {"solve_s": round(solve_s, 6), "numeric_s": round(numeric_s, 6),
                  "total_s": round(time.perf_counter() - t_start, 6)},
    }
    cert["hashes"] = compute_hashes(cert)
    return cert


def _float64_margin(c: Construction, b, n_bind: int | None, lo: int) -> float:
    """Relative margin on 1/τ for the search: 10× the float64 rounding allowance of the leak at the
    binding length (so a float64 run at the certified τ also stays within η), at least 1e-9."""
    from ..bounds.derive import required_inv_tau
    from ..constructions.simulate import leak_rounding_allowance
    if c.kind != "formula" or c.regime not in ("T", "U") or b.kind != "selection" or str(b.parameter) != "tau":
        return 1e-9
    nb_ = n_bind if n_bind is not None else 10**6
    x = float(required_inv_tau(b.leak if n_bind is not None or b.all_n is None else b.all_n,
                               n_value=max(nb_, lo), eta_value=c.eta, beta_value=c.beta))
    scale = 1 + float(c.beta) + 0.5 if c.regime == "T" else 2.0 * (nb_ + 1)  # Σ|q_c k_c| ≤ i + j
    return max(1e-9, 10 * leak_rounding_allowance(scale, 2, max(x, 1e-9), nb_ + 1))


@dataclass
class _Target:
    """One distinct bound the search tunes: its claim at a given ``1/parameter`` (``make``), the
    bound to invert numerically at a length (``leak_at``), the binding length ``n_bind`` (``None``:
    the n-independent bound) and the reference values (tight at ``n_bind``, closed form, gap lemma)."""

    nb: NodeBound
    lo: int
    hi: int | None
    n_bind: int | None
    make: Callable
    leak_at: Callable

    def reference(self, c: Construction, n_max: int) -> tuple[float, float | None, float | None]:
        from ..bounds.derive import evaluate, required_inv_tau
        b = self.nb.bound
        tight = float(required_inv_tau(self.leak_at(self.n_bind), n_value=self.n_bind if self.n_bind is not None else 1,
                                       eta_value=c.eta, beta_value=c.beta))
        closed = (float(evaluate(b.inv_tau_star, n_value=n_max, inv_tau=1, beta_value=c.beta, eta_value=c.eta))
                  if b.inv_tau_star is not None else None)
        generic = (float(required_inv_tau(b.generic, n_value=n_max, eta_value=c.eta, beta_value=c.beta))
                   if b.generic is not None and n_max >= 2 else None)
        return tight, closed, generic


def _targets(c: Construction, n_lo: int, n_max: int, all_n: bool, tune: tuple[str, ...]) -> list[_Target]:
    """The distinct bounds whose parameter is in ``tune``, with their claims (see :func:`_search`)."""
    from ..bounds.derive import in_tau
    out = []
    for nb in c.distinct_bounds():
        b = nb.bound
        if str(b.parameter) not in tune:
            continue
        lo = max(n_lo, b.n_min)
        if not all_n and lo > n_max:
            continue
        hi = None if all_n else n_max
        fixed = {k: v for k, v in c.subs().items()}

        def make(x, b=b, lo=lo, hi=hi, fixed=fixed, label=nb.node):
            s = dict(fixed)
            s[b.parameter] = sp.Rational(x.denominator, x.numerator)
            expr = sp.sympify(b.leak).subs(s)
            tol = sp.sympify(b.tolerance).subs(s)
            return Claim(expr, Fraction(int(tol.p), int(tol.q)), lo, hi, label=label)

        def leak_at(k, b=b):
            if k is None and b.all_n is not None:
                return b.all_n.subs(b.parameter, tau_sym)
            return in_tau(b, c.params)

        n_bind = None if (all_n and b.all_n is not None) else (n_max if not all_n else max(lo, 2))
        out.append(_Target(nb, lo, hi, n_bind, make, leak_at))
    return out


def _search(c: Construction, n_lo: int, n_max: int, all_n: bool, timeout_s: float,
            tune: tuple[str, ...] = ("tau",)) -> dict:
    """Per distinct bound whose parameter (τ, or ε_LN for a layer-norm comparator) is in ``tune``:
    certified ``1/parameter`` (Z3), tight numeric, closed form, generic gap lemma.  The result's
    ``inv_tau`` is the largest certified ``1/τ`` (1 if no node depends on τ: τ is then
    irrelevant), ``params`` the other found parameters (``{"eps_ln": "p/q"}``)."""
    from ..bounds.derive import required_inv_tau
    per = []
    for tg in _targets(c, n_lo, n_max, all_n, tune):
        nb, lo, make, leak_at, n_bind = tg.nb, tg.lo, tg.make, tg.leak_at, tg.n_bind
        b = nb.bound
        pname = str(b.parameter)
        margin = _float64_margin(c, b, n_bind, lo)
        res = find_inv_tau(make, leak_at, n_bind=n_bind, eta=c.eta, beta=c.beta, timeout_s=timeout_s, margin=margin)
        _, closed, generic = tg.reference(c, n_max)
        emp = None
        key = c.graph.nodes[nb.node].get("key") if nb.node in c.graph else None
        if key is not None and res.inv_tau is not None:
            # empirical minimum: the actual head on its attaining inputs, at the binding length
            # (capped at EMPIRICAL_N_CAP for run time; for regime U's all-n claim, at the cap)
            n_emp = min(n_max, EMPIRICAL_N_CAP) if not all_n else EMPIRICAL_N_CAP
            x_emp, runs = empirical_inv_tau(c.model, nb.node, key, n_emp, c.eta,
                                            patterns=("ones",) if b.key_const else ("ones", "zeros"),
                                            spacing=b.spacing, direction=c.graph.nodes[nb.node].get("direction", "past"),
                                            start=float(required_inv_tau(b.leak, n_value=n_emp, eta_value=c.eta,
                                                                         beta_value=c.beta)) or 1.0)
            cert_emp = res.inv_tau
            if n_emp != (n_max if not all_n else None) and not all_n:
                r2 = find_inv_tau(lambda x, mk=make, k=n_emp: Claim(mk(x).expr, mk(x).eta, lo, k, label=nb.node),
                                  leak_at, n_bind=n_emp, eta=c.eta, beta=c.beta, timeout_s=timeout_s)
                cert_emp = r2.inv_tau
            emp = {"n": n_emp, "inv_tau_empirical": x_emp, "runs": runs,
                   "inv_tau_certified_at_n": frac_str(cert_emp) if cert_emp is not None else None,
                   "ratio_certified_to_empirical": (float(cert_emp) / x_emp) if cert_emp is not None else None,
                   "method": "Illinois iteration on the head's own attaining key patterns (b ≡ 1, b ≡ 0)"}
        per.append({"node": nb.node, "kind": b.kind, "parameter": pname,
                    "inv_tau_certified": frac_str(res.inv_tau) if res.inv_tau is not None else None,
                    "inv_tau_tight_numeric": float(res.tight), "inv_tau_closed_form": closed,
                    "inv_tau_generic_gap_lemma": generic, "empirical": emp, "rounds": res.rounds,
                    "message": res.message})
    ok = [p for p in per if p["inv_tau_certified"] is not None]
    if len(ok) < len(per):
        bad = [p for p in per if p["inv_tau_certified"] is None]
        return {"inv_tau": None, "per_bound": per, "message": "; ".join(f"{p['node']}: {p['message']}" for p in bad)}
    taus = [parse_frac(p["inv_tau_certified"], "search") for p in ok if p["parameter"] == "tau"]
    best = max(taus, default=Fraction(1))
    params = {}
    for name in dict.fromkeys(p["parameter"] for p in ok if p["parameter"] != "tau"):
        inv = max(parse_frac(p["inv_tau_certified"], "search") for p in ok if p["parameter"] == name)
        params[name] = frac_str(1 / inv)
    out = {"inv_tau": frac_str(best), "tau": frac_str(1 / best), "per_bound": per,
           "method": ("numeric tight requirement (mpmath) + a relative margin of 10x the float64 rounding "
                      "allowance (at least 1e-9), rounded up to 12 digits, proved by Z3"),
           "message": "" if taus else "no node depends on tau: tau = 1 is arbitrary (every node is exact for "
                                      "every tau or depends only on other parameters)"}
    if params:
        out["params"] = params
    return out


# --------------------------------------------------------------------------------------------
# hashing, writing, loading


def _canon(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def compute_hashes(cert: dict) -> dict:
    """SHA-256 of every top-level section, of each node and claim, and of the whole (without ``hashes``)."""
    body = {k: v for k, v in cert.items() if k != "hashes"}
    sections = {k: hashlib.sha256(_canon(v)).hexdigest() for k, v in body.items()}
    for i, x in enumerate(body.get("nodes") or []):
        sections[f"nodes[{i}]"] = hashlib.sha256(_canon(x)).hexdigest()
    for i, x in enumerate(body.get("claims") or []):
        sections[f"claims[{i}]"] = hashlib.sha256(_canon(x)).hexdigest()
    return {"algorithm": "sha256", "sections": sections, "all": hashlib.sha256(_canon(body)).hexdigest()}


def check_output_path(path: str | os.PathLike, *, force: bool = False) -> Path:
    """The certificate's output path, or :class:`ParameterError` if it is a directory, exists
    (without ``force``) or lies in a missing directory — checked before any work is done."""
    p = Path(path)
    if p.is_dir():
        raise ParameterError(f"{p}: is a directory; give a file name for the certificate")
    if p.exists() and not force:
        raise ParameterError(f"{p}: file exists; use --force to overwrite it")
    if p.parent and not p.parent.exists():
        raise ParameterError(f"{p.parent}: no such directory")
    return p


def write_certificate(cert: dict, path: str | os.PathLike, *, force: bool = False) -> Path:
    """Write ``cert`` atomically: a temporary file in the same folder, fsync, then rename.

    Refuses to overwrite an existing file unless ``force`` (raises :class:`ParameterError`); on any
    error the target is untouched and the temporary file removed.
    """
    p = check_output_path(path, force=force)
    data = json.dumps(cert, indent=1, ensure_ascii=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=str(p.parent or "."))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; a certificate is an ordinary file
        if force:
            os.replace(tmp, p)
        else:  # link fails if the file appeared since the check: never clobber without --force
            try:
                os.link(tmp, p)
            except FileExistsError:
                raise ParameterError(f"{p}: file exists; use --force to overwrite it") from None
            except OSError:  # a file system without hard links: the checked rename
                if p.exists():
                    raise ParameterError(f"{p}: file exists; use --force to overwrite it") from None
                os.replace(tmp, p)
            else:
                os.unlink(tmp)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):  # leave nothing half-written behind
            os.unlink(tmp)
        raise
    return p


def load_certificate(path: str | os.PathLike) -> dict:
    """Read a certificate file; raises :class:`CertificateError` for unreadable or non-JSON content."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise CertificateError(f"{p}: cannot read ({getattr(e, 'strerror', None) or e})") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise CertificateError(f"{p}:{e.lineno}:{e.colno}: not valid JSON ({e.msg} line {e.lineno} column "
                               f"{e.colno})") from None
    if not isinstance(obj, dict):
        raise CertificateError(f"{p}: a certificate is a JSON object")
    return obj


# --------------------------------------------------------------------------------------------
# verify


@dataclass
class VerifyReport:
    """``problems``: ``(field, message)`` pairs; valid iff empty.  ``checked``: what was re-done."""

    problems: list[tuple[str, str]] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    status: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, where: str, msg: str) -> None:
        self.problems.append((where, msg))


def verify_certificate(cert: dict, *, timeout_s: float = 20.0, rerun_queries: bool = True) -> VerifyReport:
    """Re-check a certificate (module docstring).  Never raises for a bad certificate: every problem
    is reported with the field it concerns.  Valid iff ``report.ok``."""
    if isinstance(cert, dict) and cert.get("schema") == "softhard-tracr-certificate":
        from .tracr import verify_tracr  # compiled Tracr models (solver/tracr.py)
        return verify_tracr(cert, timeout_s=timeout_s, rerun_queries=rerun_queries)
    t0 = time.perf_counter()
    rep = VerifyReport(status=cert.get("status") if isinstance(cert, dict) else None)
    # 1. schema, 2. section hashes (reported after the more specific re-derivation problems)
    hash_problems = schema_and_hashes(rep, cert, schema())
    if hash_problems is None:
        rep.seconds = time.perf_counter() - t0
        return rep
    # 3. re-derivation: construction, graph, bounds, claims
    try:
        params = {k: parse_frac(v, f"construction.params.{k}") for k, v in cert["construction"]["params"].items()}
        inv_tau = parse_frac(cert["construction"]["inv_tau"], "construction.inv_tau")
        tau = parse_frac(cert["construction"]["tau"], "construction.tau")
        if tau * inv_tau != 1:
            rep.add("construction.tau", f"tau = {cert['construction']['tau']} is not 1/inv_tau = 1/({cert['construction']['inv_tau']})")
        c = rebuild(cert["source"], cert["construction"]["regime"], params)
    except (CertificateError, ParameterError) as e:
        rep.add("source", f"cannot re-derive the construction: {e}")
        return _finish(rep, hash_problems, t0)
    except Exception as e:  # a tampered source can fail in many ways; report, never crash
        rep.add("source", f"cannot re-derive the construction: {e.__class__.__name__}: {e}")
        return _finish(rep, hash_problems, t0)
    if graph_data(c.graph) != cert["graph"]:
        rep.add("graph", "stored computation graph differs from the one compiled from source")
    rng = cert["range"]
    # the range as the stored claims were made for it (an edited range shows up here first)
    his = {x["n_hi"] for x in cert["claims"]}
    if len(his) == 1 and cert["claims"]:
        (hi_claims,) = his
        if hi_claims is None and not rng["all_n"]:
            rep.add("range.all_n", "the claims are for all n, the range says otherwise")
        elif hi_claims is not None and rng["all_n"]:
            rep.add("range.all_n", f"the claims stop at n = {hi_claims}, the range says all n")
        elif hi_claims is not None and hi_claims != rng["n_max"]:
            rep.add("range.n_max", f"is {rng['n_max']}, but the claims were made and checked for n_max = {hi_claims}")
    if rng["n_min"] > rng["n_max"]:
        rep.add("range", f"n_min = {rng['n_min']} exceeds n_max = {rng['n_max']}")
    try:
        specs = claim_specs(c, inv_tau, rng["n_min"], rng["n_max"], rng["all_n"])
    except Exception as e:
        rep.add("construction", f"cannot form the claims: {e}")
        return _finish(rep, hash_problems, t0)
    by_id = {x["id"]: x for x in cert["claims"]}
    node_rows = {x["node"]: (i, x) for i, x in enumerate(cert["nodes"])}
    for v, nb in c.bounds.items():
        if v not in node_rows:
            rep.add("nodes", f"node {v!r} of the construction is missing from the certificate")
            continue
        i, row = node_rows[v]
        if row["bound"]["srepr"] != sp.srepr(nb.bound.leak):
            rep.add(f"nodes[{i}].bound.srepr", f"bound of node {v!r} differs from the bound re-derived from the source")
        if row["bound"]["tolerance"] != str(nb.bound.tolerance):
            rep.add(f"nodes[{i}].bound.tolerance", "tolerance differs from the re-derived one")
        st_row = node_static(nb, rng["n_min"], rng["n_max"], rng["all_n"])
        for k in ("operator", "layer", "kind", "condition"):
            if row.get(k) != st_row[k]:
                rep.add(f"nodes[{i}].{k}", f"{row.get(k)!r} differs from the re-derived {st_row[k]!r}")
        for k, v2 in st_row["bound"].items():
            if k not in ("srepr", "tolerance") and row["bound"].get(k) != v2:
                rep.add(f"nodes[{i}].bound.{k}", "differs from the re-derived bound")
    for v in node_rows:
        if v not in c.bounds:
            rep.add(f"nodes[{node_rows[v][0]}]", f"node {v!r} is not an attention node of the construction")
    rep.checked.append("re-derived construction, graph and bounds")
    statuses = []
    seen_ids = set()
    groups: dict[frozenset, tuple[int, dict]] = {}
    ids_seen: set[str] = set()
    for j, x in enumerate(cert["claims"]):
        key = frozenset(x["nodes"])
        if key in groups:
            rep.add(f"claims[{j}]", f"a second claim for node(s) {sorted(key)} (claims must map one-to-one to bounds)")
            continue
        if x["id"] in ids_seen:
            rep.add(f"claims[{j}].id", f"duplicate claim id {x['id']!r}")
        ids_seen.add(x["id"])
        groups[key] = (j, x)
    expected_claim_of: dict[str, str | None] = {v: None for v in c.bounds}
    for cs in specs:
        stored_c = groups.get(frozenset(cs.nodes))
        if stored_c is None:
            rep.add("claims", f"no stored claim for node(s) {cs.nodes}")
            continue
        j, x = stored_c
        for v in cs.nodes:
            expected_claim_of[v] = x["id"]
        seen_ids.add(x["id"])
        where = f"claims[{j}]"
        if x["expr_srepr"] != sp.srepr(cs.expr):
            rep.add(f"{where}.expr_srepr", "claimed expression is not the node bound with the stated parameters "
                                           f"(construction.inv_tau = {cert['construction']['inv_tau']})")
        if parse_frac(x["tolerance"], f"{where}.tolerance") != cs.tolerance:
            rep.add(f"{where}.tolerance", f"tolerance {x['tolerance']} differs from {frac_str(cs.tolerance)}")
        if x["n_lo"] != cs.n_lo or x["n_hi"] != cs.n_hi:
            rep.add(f"{where}.n_lo/n_hi", f"claimed range [{x['n_lo']}, {x['n_hi']}] differs from range "
                                          f"[{cs.n_lo}, {cs.n_hi}] implied by range.n_min/n_max/all_n")
        if x["condition"] != Claim(cs.expr, cs.tolerance, cs.n_lo, cs.n_hi).text():
            rep.add(f"{where}.condition", "the stated condition is not the claim that was checked")
        if x["expr_text"] != str(cs.expr):
            rep.add(f"{where}.expr_text", "the stated expression is not the claimed one")
        statuses.append(x["status"])
        _verify_claim(rep, where, x, cs, timeout_s, rerun_queries)
    for x in cert["claims"]:
        if x["id"] not in seen_ids:
            rep.add("claims", f"claim {x['id']} does not correspond to any node of the construction")
    # node statuses mirror claims; each node points to the claim of its bound
    for i, row in enumerate(cert["nodes"]):
        cid = row["claim"]
        if row["node"] in expected_claim_of and cid != expected_claim_of[row["node"]]:
            rep.add(f"nodes[{i}].claim", f"is {cid!r}, but node {row['node']!r} is covered by claim "
                                         f"{expected_claim_of[row['node']]!r}")
        if cid is None and row["status"] != "proved":
            rep.add(f"nodes[{i}].status", "a node without a claim is exact on the range: its status is proved")
        if cid is not None:
            if cid not in by_id:
                rep.add(f"nodes[{i}].claim", f"refers to unknown claim {cid}")
            elif row["status"] != by_id[cid]["status"]:
                rep.add(f"nodes[{i}].status", f"says {row['status']} but claim {cid} is {by_id[cid]['status']}")
    expect = "refuted" if "refuted" in statuses else ("unknown" if "unknown" in statuses else "proved")
    if cert["source"].get("kind") == "model":  # gap premises of a model file (solver/models.py)
        from .models import verify_premises
        expect = verify_premises(rep, cert, c, expect)
    if cert["status"] != expect:
        rep.add("status", f"says {cert['status']} but the claims give {expect}")
    fresh_c = construction_static(c, inv_tau)
    for k, v in fresh_c.items():
        if cert["construction"].get(k) != v:
            rep.add(f"construction.{k}", f"{cert['construction'].get(k)!r} differs from the re-derived {v!r}")
    if (cert["construction"].get("tau_choice") == "found by --find-tau") != (cert.get("search") is not None):
        rep.add("construction.tau_choice", "says how tau was chosen, but the search section disagrees")
    if cert.get("search") is not None:
        try:
            _verify_search(rep, cert["search"], c, inv_tau, rng)
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError, ZeroDivisionError,
                CertificateError) as e:
            rep.add("search", f"malformed search section ({e.__class__.__name__}: {e})")
    rep.checked.append("claims re-generated and re-run")
    # numeric summary consistency, precision section
    try:
        _verify_numeric(rep, cert, c)
    except (ValueError, TypeError, KeyError, OverflowError, ZeroDivisionError) as e:
        rep.add("numeric", f"malformed numeric summary ({e.__class__.__name__}: {e})")
    if "precision" in cert:
        fresh_p = json.loads(json.dumps(precision_section(c, rng["n_max"], inv_tau, rng["all_n"])))
        for k, v in fresh_p.items():
            if cert["precision"].get(k) != v:
                rep.add(f"precision.{k}", "differs from the precision analysis re-derived from the construction")
    return _finish(rep, hash_problems, t0)


def _close(a, b, rel: float = 1e-9) -> bool:
    """Two stored floats (or both None) agree to ``rel`` (deterministic mpmath values re-derived)."""
    if a is None or b is None:
        return a is None and b is None
    return abs(float(a) - float(b)) <= rel * max(abs(float(a)), abs(float(b)), 1e-300)


def _verify_search(rep: VerifyReport, srch: dict, c: Construction, inv_tau: Fraction, rng: dict) -> None:
    """The ``search`` section of a ``--find-tau`` certificate against the construction: the chosen
    τ (and tuned parameters) are the ones the claims use, every tuned bound has its row, each
    row's certified value meets its bound at the binding length (ball arithmetic), the tight,
    closed-form and gap-lemma values are re-derived, and the empirical summary is consistent
    (certified ≥ empirical: the measured leak never exceeds the bound).  The empirical minimum
    itself is a numeric run and is not repeated (like ``numeric``)."""
    w = "search"
    if parse_frac(srch["inv_tau"], f"{w}.inv_tau") != inv_tau:
        rep.add(f"{w}.inv_tau", f"is {srch['inv_tau']}, but the claims use construction.inv_tau = {frac_str(inv_tau)}")
    if "tau" in srch and parse_frac(srch["tau"], f"{w}.tau") * inv_tau != 1:
        rep.add(f"{w}.tau", f"is {srch['tau']}, not 1/({frac_str(inv_tau)})")
    found = srch.get("params") or {}
    for k, v in found.items():
        if k not in c.params or parse_frac(v, f"{w}.params.{k}") != c.params[k]:
            rep.add(f"{w}.params.{k}", f"is {v}, but the construction uses {k} = {c.params.get(k)}")
    targets = {tg.nb.node: tg for tg in _targets(c, rng["n_min"], rng["n_max"], rng["all_n"],
                                                 ("tau",) + tuple(found))}
    rows = srch["per_bound"]
    if sorted(r["node"] for r in rows) != sorted(targets):
        rep.add(f"{w}.per_bound", f"covers nodes {sorted(r['node'] for r in rows)}, the construction's tuned "
                                  f"bounds are {sorted(targets)}")
    best: dict[str, Fraction] = {}
    for i, r in enumerate(rows):
        where = f"{w}.per_bound[{i}]"
        tg = targets.get(r["node"])
        if tg is None:
            continue
        b = tg.nb.bound
        if r["kind"] != b.kind or r["parameter"] != str(b.parameter):
            rep.add(where, f"kind/parameter {r['kind']}/{r['parameter']} differ from the re-derived "
                           f"{b.kind}/{b.parameter}")
            continue
        x = parse_frac(r["inv_tau_certified"], f"{where}.inv_tau_certified")
        if x <= 0:
            rep.add(f"{where}.inv_tau_certified", f"must be > 0, got {r['inv_tau_certified']}")
            continue
        best[r["parameter"]] = max(best.get(r["parameter"], x), x)
        n_at = tg.n_bind if tg.n_bind is not None else tg.lo
        cl = tg.make(x)
        over, val = exceeds(cl.expr, cl.eta, n_at, prec=256)
        if over:
            rep.add(f"{where}.inv_tau_certified", f"{r['inv_tau_certified']} does not meet the bound at n = {n_at} "
                                                  f"(bound = {val} > {frac_str(cl.eta)})")
        tight, closed, generic = tg.reference(c, rng["n_max"])
        if r["rounds"] == 1 and not _close(r["inv_tau_tight_numeric"], tight):
            rep.add(f"{where}.inv_tau_tight_numeric", f"{r['inv_tau_tight_numeric']} differs from the re-derived {tight}")
        if r["rounds"] != 1 and not float(r["inv_tau_tight_numeric"]) >= tight * (1 - 1e-9):
            rep.add(f"{where}.inv_tau_tight_numeric", f"{r['inv_tau_tight_numeric']} is below the requirement "
                                                      f"{tight} at the binding length")
        if not float(x) >= float(r["inv_tau_tight_numeric"]) * (1 - 1e-12):
            rep.add(f"{where}.inv_tau_certified", "is below the tight requirement it was searched from")
        if not _close(r["inv_tau_closed_form"], closed):
            rep.add(f"{where}.inv_tau_closed_form", f"{r['inv_tau_closed_form']} differs from the re-derived {closed}")
        if not _close(r["inv_tau_generic_gap_lemma"], generic):
            rep.add(f"{where}.inv_tau_generic_gap_lemma",
                    f"{r['inv_tau_generic_gap_lemma']} differs from the re-derived {generic}")
        e = r.get("empirical")
        if e is not None and e.get("inv_tau_certified_at_n") is not None:
            ce = parse_frac(e["inv_tau_certified_at_n"], f"{where}.empirical.inv_tau_certified_at_n")
            xe = float(e["inv_tau_empirical"])
            if not (xe > 0 and _close(e["ratio_certified_to_empirical"], float(ce) / xe, 1e-12)):
                rep.add(f"{where}.empirical.ratio_certified_to_empirical",
                        "is not inv_tau_certified_at_n / inv_tau_empirical")
            elif float(ce) / xe < 1 - 1e-6:
                rep.add(f"{where}.empirical", f"the empirical minimum {xe} exceeds the certified {float(ce)}: the "
                                              "measured leak would exceed the bound")
            cle = tg.make(ce)
            over, val = exceeds(cle.expr, cle.eta, int(e["n"]), prec=256)
            if over:
                rep.add(f"{where}.empirical.inv_tau_certified_at_n",
                        f"{e['inv_tau_certified_at_n']} does not meet the bound at n = {e['n']} (bound = {val})")
    for name, v in best.items():
        want = inv_tau if name == "tau" else 1 / c.params[name]
        if v != want:
            rep.add(f"{w}.per_bound", f"the largest certified 1/{name} is {frac_str(v)}, the construction uses "
                                      f"{frac_str(want)}")
    rep.checked.append("search section re-derived (certified values at the binding length, tight, closed "
                       "form, gap lemma; empirical consistency)")


def schema_and_hashes(rep: VerifyReport, cert: dict, sch: dict, hasher=None) -> list[tuple[str, str]] | None:
    """Validate ``cert`` against the JSON Schema ``sch`` (a violation is added to ``rep`` with its
    JSON path; returns None) and compare every section hash; returns the hash problems, which the
    caller reports after its more specific checks (the hashes are unkeyed: they only show where an
    edit was made).  ``hasher``: the certificate kind's hash function (default :func:`compute_hashes`)."""
    import jsonschema
    try:
        jsonschema.validate(cert, sch)
        rep.checked.append("schema")
    except jsonschema.ValidationError as e:
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path).lstrip(".") or "<root>"
        rep.add(path, f"schema violation: {e.message}")
        return None
    stored = cert["hashes"]
    fresh = (hasher or compute_hashes)(cert)
    probs = [(k, "content differs from what was certified (section hash mismatch): the field was edited")
             for k, h in fresh["sections"].items() if stored["sections"].get(k) != h]
    probs += [(k, "section listed in hashes is missing") for k in stored["sections"] if k not in fresh["sections"]]
    if stored["all"] != fresh["all"] and not probs:
        probs.append(("hashes.all", "whole-certificate hash mismatch"))
    rep.checked.append("hashes")
    return probs


def _finish(rep: VerifyReport, hash_problems, t0) -> VerifyReport:
    rep.problems.extend(hash_problems)
    rep.seconds = time.perf_counter() - t0
    return rep


def graph_data(g: nx.DiGraph) -> dict:
    """``networkx.node_link_data`` with edges under ``"links"`` (stable across networkx 3.x)."""
    try:
        return nx.node_link_data(g, edges="links")
    except TypeError:  # networkx < 3.4
        return nx.node_link_data(g)


def _verify_claim(rep: VerifyReport, where: str, x: dict, cs: ClaimSpec, timeout_s: float, rerun: bool) -> None:
    st = x["status"]
    qs = x["queries"]
    # the independent interval check is cheap: re-run it and compare what the certificate reports
    sc = x.get("second_check")
    if sc is not None and rerun:
        ar = arb_check(cs.expr, cs.tolerance, cs.n_lo, cs.n_hi, deadline_s=max(5.0, timeout_s))
        if ar.status != sc.get("status"):
            rep.add(f"{where}.second_check.status", f"says {sc.get('status')!r}; re-running the arb check gives "
                                                    f"{ar.status!r}")
        dis = (st == "unknown" and ((ar.status == "refuted" and any(q["answer"] == "unsat" for q in qs))))
        if x.get("disagreement") and not (ar.status in ("refuted", "proved") and st == "unknown"):
            rep.add(f"{where}.disagreement", "records a disagreement the re-run checks do not show")
        if not x.get("disagreement") and dis:
            rep.add(f"{where}.disagreement", "the arb check refutes a claim whose queries are unsat: a disagreement")
        if st == "proved" and ar.status == "refuted":
            rep.add(f"{where}.status", f"says proved, but the arb check refutes it at n = {ar.counterexample}")
    if st == "proved":
        # the unsat boxes must cover [n_lo, n_hi] exactly, each query must encode the stated claim
        gap = _uncovered(qs, cs)
        if gap is not None:
            rep.add(f"{where}.queries", gap)
            return
        for k, q in enumerate(qs):
            if q["answer"] != "unsat":
                continue
            prec = _prec_of(q, cs)
            if prec is None:
                rep.add(f"{where}.queries[{k}].smtlib", "query does not encode the stated claim on its box "
                                                        f"[{q['lo']}, {q['hi']}] (bound, tau, eta or box edited)")
                continue
            if rerun:
                ans, reason, _, secs = run_z3(q["smtlib"], timeout_s)
                if ans == "unknown":
                    rep.add(f"{where}.queries[{k}].answer", f"could not be re-checked: z3 gave up after {secs:.1f} s "
                                                            f"({reason}); try a larger --timeout")
                elif ans != "unsat":
                    rep.add(f"{where}.queries[{k}].answer", f"stored unsat but z3 now answers {ans} {reason}".strip())
    elif st == "refuted":
        cex = x.get("counterexample")
        if cex is None:
            rep.add(f"{where}.status", "says refuted but no counterexample is stored")
            return
        if not isinstance(cex, int) or cex < cs.n_lo or (cs.n_hi is not None and cex > cs.n_hi):
            rep.add(f"{where}.counterexample", f"{cex!r} is not an integer in the claimed range")
            return
        bad, vtxt = exceeds(cs.expr, cs.tolerance, cex, prec=512)
        if not bad:
            rep.add(f"{where}.status", f"says refuted, but at n = {cex} the bound is {vtxt}, not above "
                                       f"{frac_str(cs.tolerance)}")
            return
        if x.get("value_at_counterexample") != vtxt:
            rep.add(f"{where}.value_at_counterexample", f"the bound at n = {cex} is {vtxt}")
        if rerun and cex > cs.n_lo:  # the reported counterexample is the smallest: no violation below it
            below = check_claim(Claim(cs.expr, cs.tolerance, cs.n_lo, cex - 1), timeout_s=timeout_s,
                                second_check=False, minimise=False, total_s=max(10.0, timeout_s))
            if below.status == "refuted":
                rep.add(f"{where}.counterexample", f"{cex} is not the smallest violation: the bound exceeds the "
                                                   f"tolerance already at n = {below.counterexample}")
    elif st == "unknown":
        # nothing is asserted — unless the stored queries are a complete proof, which an honest
        # run reports as proved (or, with the arb check refuting it, as a recorded disagreement)
        if _uncovered(qs, cs) is None and not x.get("disagreement") and \
                all(_prec_of(q, cs) is not None for q in qs if q["answer"] == "unsat"):
            rep.add(f"{where}.status", "says unknown, but its stored unsat queries cover the whole range and no "
                                       "disagreement is recorded: the status was changed from proved")


def _uncovered(qs: list[dict], cs: ClaimSpec) -> str | None:
    """None if the boxes of the queries answered ``unsat`` cover ``[n_lo, n_hi]`` (all n ≥ n_lo
    when ``n_hi`` is None); otherwise what is left uncovered."""
    boxes = sorted(((q["lo"], q["hi"]) for q in qs if q["answer"] == "unsat"), key=lambda b: b[0])
    if not boxes:
        return "no unsatisfiable query is stored"
    cur = cs.n_lo
    for lo, hi in boxes:
        if lo > cur:
            return f"proof boxes leave n in [{cur}, {lo - 1}] uncovered"
        if hi is None:
            return None
        cur = max(cur, hi + 1)
    if cs.n_hi is None:
        return f"proof boxes stop at n = {cur - 1} but the claim is for all n"
    if cur <= cs.n_hi:
        return f"proof boxes stop at n = {cur - 1} < n_max = {cs.n_hi}"
    return None


def _prec_of(q: dict, cs: ClaimSpec) -> int | None:
    """The enclosure precision at which ``q`` was generated from the claim, or None if none matches."""
    for prec in (128, 256, 512, 1024, 2048):
        if build_query(cs.expr, cs.tolerance, q["lo"], q["hi"], prec=prec).smtlib == q["smtlib"]:
            return prec
    return None


def _verify_numeric(rep: VerifyReport, cert: dict, c: Construction) -> None:
    num = cert.get("numeric")
    if not num:
        return
    inv_tau = Fraction(num["inv_tau_float"])
    for v, s in (num.get("nodes") or {}).items():
        if v not in c.bounds:
            rep.add(f"numeric.nodes.{v}", "unknown node")
            continue
        bd = float(c.bounds[v].value(s["at_n"], inv_tau, c.beta, c.eta))
        if abs(bd - s["bound_there"]) > 1e-12 * max(abs(bd), 1e-300):
            rep.add(f"numeric.nodes.{v}.bound_there", f"stored {s['bound_there']!r} but the bound at n = {s['at_n']} "
                                                      f"is {bd!r}")
        exp_ratio = s["worst_observed"] / s["bound_there"] if s["bound_there"] > 0 else (0.0 if s["worst_observed"] == 0 else float("inf"))
        if abs(exp_ratio - s["ratio"]) > 1e-9 * max(1.0, abs(exp_ratio)):
            rep.add(f"numeric.nodes.{v}.ratio", f"stored {s['ratio']!r} but worst_observed/bound_there = {exp_ratio!r}")
        viol = s["worst_observed"] > s["bound_there"] * (1 + s["allowance_rel"])
        anc = s.get("premise")
        if anc is not None:  # the stored worst check says an ancestor was not clean there: re-check what can be
            from ..bounds.confirm import attention_ancestors
            a_num = (num.get("nodes") or {}).get(anc) or {}
            if anc not in attention_ancestors(c.model, c.bounds).get(v, []):
                rep.add(f"numeric.nodes.{v}.premise", f"names {anc!r}, which is not an attention node below {v!r}")
            elif not a_num.get("largest_leak", 0.0) > float(c.eta):
                rep.add(f"numeric.nodes.{v}.premise", f"names {anc!r}, whose largest observed error does not "
                                                      f"exceed eta")
        elif viol and s["violations"] == 0:
            rep.add(f"numeric.nodes.{v}.violations", "worst observed exceeds the bound but no violation is recorded")
    anyviol = any(s["violations"] for s in (num.get("nodes") or {}).values())
    if num["ok"] and (anyviol or num["mismatched_outputs"]):
        rep.add("numeric.ok", "says ok but violations or output mismatches are recorded")
    rep.checked.append("numeric summary consistency")
