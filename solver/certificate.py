"""Certificates of formula constructions: certify, assemble, replay (THEORY §8; docs/certificates.md).

A certificate asserts, for one construction, its exact parameters and a length range, that every
attention node's error bound meets its tolerance — per node: the symbolic bound (SymPy ``srepr``
and LaTeX), the condition, how it was established (``proved`` with the exact SMT-LIB2 queries Z3
found unsatisfiable, ``refuted`` with a counterexample, or ``unknown``), the independent arb
check, and the numeric confirmation.  The composed claim of a logic is the conjunction (THEORY §3).

The certificate is built in one place, :func:`assemble`, from the construction, its parameters,
the values a search found and the measured results.  :func:`certify` runs the search and the
measurements and then calls :func:`assemble`; :func:`replay` (verify) calls the same
:func:`assemble` with the stored parameters, searched values and measured fields, so every other
field is re-derived — bounds and texts, every claim re-proved at the stated values — and compared
by :mod:`softhard.solver.replay`.  :data:`FORMULA` is this kind's entry in the registry.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import sympy as sp

from ..bounds.cache import subs as cached_subs
from ..bounds.confirm import PATTERN_TEXT, key_patterns
from ..bounds.core import tau as tau_sym
from ..bounds.derive import NodeBound, evaluate, in_tau, required_inv_tau
from ..bounds.params import Params
from ..constructions.errors import CertificateError, ParameterError, SearchFailed
from ..constructions.parameters import DEFAULT_MAX_POSITIONS, to_count, to_fraction, to_seconds
from ..constructions.simulate import leak_rounding_allowance
from .arbcheck import exceeds
from .certjson import compute_hashes
from .check import Claim, ClaimResult, ProofCache
from .claims import (choice_static, claim_json, claim_specs, construction_static, frac_str, graph_data, node_static,
                     parse_frac, schedule_outcome, versions)
from .formula_inputs import inputs as formula_inputs
from .formula_numeric import NUMERIC_TEXTS, check_nodes, check_plan, numeric_section
from .pipeline import Construction, rebuild
from .precision import FORMATS, precision_section, separable_up_to
from .replay import SCHEMA, SCHEMA_VERSION, Kind, VerifyReport, check_new_certificate, solver_section
from .search import (SCHEDULE_NS, SEARCH_TRIES, empirical_inv_tau, find_inv_tau, find_schedule_constant,
                     schedule_requirement)

#: largest length at which ``--find-tau`` measures the empirical minimum 1/τ (run time)
EMPIRICAL_N_CAP = 10_000
#: most soft runs of one empirical minimum (:func:`softhard.solver.search.empirical_inv_tau`'s ``max_runs``)
EMPIRICAL_MAX_RUNS = 60

COMPOSED = ("all node claims proved  =>  every clean-up round_eta is exact  =>  the soft transformer's "
            "output equals the hard transformer's on every word in the range (THEORY §3)")

def float64_margin(c: Construction, b, n_bind: int | None, lo: int) -> float:
    """Relative margin on 1/τ for the search, so that a float64 run at the certified τ also stays
    within η: 10× the float64 rounding allowance ``A`` of the leak at the binding length and the
    exact requirement (at least 1e-9) while that is at most :data:`SMALL_MARGIN` — the leak falls at
    least as fast as 1/τ rises, so the raise covers ``leak·(1 + 10A) ≤ η``.  A larger allowance
    (from n ≈ 10^10 in regime T, where the scores' rounding error times 1/τ is no longer small) grows
    with 1/τ itself, so a raise by 10A can overshoot by orders of magnitude (10^5× at n = 10^15):
    there the margin is the smallest raise ``t`` found with ``leak(x(1+t))·(1 + 10·A(x(1+t))) ≤ η``
    (:func:`_covering_raise`), or 1e-9 when none up to 10^3 exists — float64 cannot represent the
    construction at that length, whatever τ, and the precision section's premise says so.

    Beyond the length where float64 separates adjacent positions (:func:`separable_up_to`) no
    float64 run represents the construction, so no margin is owed there: 1e-9 (the allowance also
    overflows to infinity from about n = 6·10^17 on)."""
    if (c.kind != "formula" or c.regime not in ("T", "U") or b.kind != "selection" or str(b.parameter) != "tau"
            or c.params.schedule is not None):
        return 1e-9
    nb_ = n_bind if n_bind is not None else 10**6
    if max(nb_, lo) > separable_up_to(c.regime, c.beta, FORMATS["float64"]):
        return 1e-9
    expr = b.leak if n_bind is not None or b.all_n is None else b.all_n
    x = float(required_inv_tau(expr, n_value=max(nb_, lo), eta_value=c.tolerance, beta_value=c.beta))
    scale = 1 + float(c.beta) + 0.5 if c.regime == "T" else 2.0 * (nb_ + 1)  # Σ|q_c k_c| ≤ i + j
    m = 10 * leak_rounding_allowance(scale, 2, max(x, 1e-9), nb_ + 1)
    if m <= SMALL_MARGIN:
        return max(1e-9, m)
    raise_t = _covering_raise(lambda v: float(evaluate(expr, n_value=max(nb_, lo), inv_tau=v, beta_value=c.beta,
                                                       eta_value=c.eta)),
                              lambda v: leak_rounding_allowance(scale, 2, v, nb_ + 1), x, float(c.tolerance))
    return 1e-9 if raise_t is None else max(1e-9, raise_t)


#: the largest margin :func:`float64_margin` takes as 10× the allowance (a raise of 1/τ by 0.1%)
SMALL_MARGIN = 1e-3


def _covering_raise(leak: Callable[[float], float], allowance: Callable[[float], float], x: float,
                    eta: float) -> float | None:
    """Smallest relative raise ``t`` in [10^-3, 10^3] found with ``leak(x(1+t))·(1 + 10·allowance(x(1+t)))
    ≤ eta`` (a doubling grid from 10^-3, then 40 bisection steps below the first grid point that
    covers), or None.  Numeric (float64 and the leak's 50-digit value): it only places the search's
    candidate; the claim at the certified value is proved exactly and the precision section checks
    the float64 premise there."""
    def covers(t: float) -> bool:
        v = x * (1 + t)
        a = allowance(v)
        return math.isfinite(a) and leak(v) * (1 + 10 * a) <= eta

    lo, t = 0.0, SMALL_MARGIN
    while t <= 1e3:
        if covers(t):
            for _ in range(40):
                mid = (lo + t) / 2
                lo, t = (lo, mid) if covers(mid) else (mid, t)
            return t
        lo, t = t, 2 * t
    return None


@dataclass
class Target:
    """One distinct bound the search tunes: its claim at a given ``1/parameter`` (``make``), the
    bound to invert numerically at a length (``leak_at``), the binding length ``n_bind`` (``None``:
    the n-independent bound) and the reference values (tight at ``n_bind``, closed form, gap lemma)."""

    nb: NodeBound
    lo: int
    hi: int | None
    n_bind: int | None
    make: Callable
    leak_at: Callable

    def scheduled(self, c: Construction) -> bool:
        """A τ bound of a construction with a schedule (THEORY §9): its values are the constant S."""
        return c.params.schedule is not None and self.nb.bound.parameter == tau_sym

    def binding(self, c: Construction) -> int | None:
        """The binding length: ``n_bind``, or under a schedule where the numeric requirement S(n) is
        largest (:func:`~softhard.solver.search.schedule_requirement`, cached per construction)."""
        if not self.scheduled(c):
            return self.n_bind
        return self._schedule_sup(c)[1]

    def _schedule_sup(self, c: Construction):
        key = ("schedule_sup", self.nb.node, self.lo)
        if key not in c._cache:
            c._cache[key] = schedule_requirement(self.leak_at(None), self.lo, tolerance=c.tolerance, beta=c.beta)
        return c._cache[key]

    def reference(self, c: Construction, n_max: int) -> tuple[float, float | None, float | None]:
        """(tight numeric requirement at the binding length, closed form and gap lemma at ``n_max``), as
        1/τ — or, under a schedule (THEORY §9), all three in units of S, each the supremum over the
        lengths n ≥ lo of :data:`~softhard.solver.search.SCHEDULE_NS` of its 1/τ(n) divided by g(n):
        the constant each would need for every n, comparable with the certified S."""
        b = self.nb.bound

        def closed_at(n):
            return (float(evaluate(b.inv_tau_star, n_value=n, inv_tau=1, beta_value=c.beta, eta_value=c.tolerance))
                    if b.inv_tau_star is not None else None)

        def generic_at(n):
            return (float(required_inv_tau(b.generic, n_value=n, eta_value=c.tolerance, beta_value=c.beta))
                    if b.generic is not None and n >= 2 else None)

        if self.scheduled(c):
            ns = [k for k in SCHEDULE_NS if k >= self.lo]
            sup = [max((x / c.params.inv_tau_at(k, 1) for k in ns if (x := f(k)) is not None), default=None)
                   for f in (closed_at, generic_at)]
            return float(self._schedule_sup(c)[0]), sup[0], sup[1]
        tight = float(required_inv_tau(self.leak_at(self.n_bind), n_value=self.n_bind if self.n_bind is not None else 1,
                                       eta_value=c.tolerance, beta_value=c.beta))
        return tight, closed_at(n_max), generic_at(n_max)


def targets(c: Construction, n_lo: int, n_max: int, all_n: bool, tune: tuple[str, ...]) -> list[Target]:
    """The distinct bounds whose parameter is in ``tune``, with their claims (see :func:`_search`)."""
    out = []
    for nb in c.distinct_bounds():
        b = nb.bound
        if str(b.parameter) not in tune:
            continue
        lo = max(n_lo, b.n_min)
        if not all_n and lo > n_max:
            continue
        hi = None if all_n else n_max
        fixed = c.params.substitution(keep=(b.parameter,))

        sched = c.params.schedule is not None and b.parameter == tau_sym

        def make(x, b=b, lo=lo, hi=hi, fixed=fixed, label=nb.node, sched=sched):
            s = dict(fixed)
            # a schedule's τ(n) = 1/(S·g(n)) (THEORY §9): the one substitution, Params.substitution
            s[b.parameter] = (c.params.substitution(inv_tau=x)[tau_sym] if sched
                              else sp.Rational(x.denominator, x.numerator))
            expr = cached_subs(b.leak, s)
            tol = cached_subs(b.tolerance, s)
            return Claim(expr, Fraction(int(tol.p), int(tol.q)), lo, hi, label=label, poly_exp=sched)

        def leak_at(k, b=b, sched=sched):
            if sched:  # the bound with τ → τ/g(n): its "1/τ" is the schedule's constant S
                return in_tau(b, c.params.exact()).subs(tau_sym, tau_sym / c.params.schedule_factor())
            if k is None and b.all_n is not None:
                return b.all_n.subs(b.parameter, tau_sym)
            return in_tau(b, c.params.exact())

        n_bind = None if (all_n and b.all_n is not None) else (n_max if not all_n else max(lo, 2))
        out.append(Target(nb, lo, hi, n_bind, make, leak_at))
    return out




# --------------------------------------------------------------------------------------------
# search (certify only) and its section (derived from the values found)


def search_values(c: Construction, n_lo: int, n_max: int, all_n: bool, timeout_s: float, tune: tuple[str, ...],
                  proofs: ProofCache) -> list[dict]:
    """Per distinct bound whose parameter (τ, or ε_LN for a layer-norm comparator) is in ``tune``:
    the certified ``1/parameter`` found by :func:`~softhard.solver.search.find_inv_tau` (``None``
    if the search failed, with its ``message``), the number of ``rounds`` (measured: a search
    log) and the ``empirical`` minimum measured on the actual head (a numeric run).

    Raises nothing for a failed search: the caller reports it (:class:`SearchFailed`)."""
    out = []
    for tg in targets(c, n_lo, n_max, all_n, tune):
        nb, b = tg.nb, tg.nb.bound
        if c.params.schedule is not None and b.parameter == tau_sym:  # THEORY §9: S on a grid, all n
            res = find_schedule_constant(tg.make, tg.leak_at(None), tg.lo, tolerance=c.tolerance, beta=c.beta,
                                         timeout_s=timeout_s, check=proofs.check)
        else:
            margin = float64_margin(c, b, tg.n_bind, tg.lo)
            res = find_inv_tau(tg.make, tg.leak_at, n_bind=tg.n_bind, tolerance=c.tolerance, beta=c.beta,
                               timeout_s=timeout_s, margin=margin, check=proofs.check)
        row = {"node": nb.node, "inv_tau_certified": frac_str(res.inv_tau) if res.inv_tau is not None else None,
               "rounds": res.rounds, "message": res.message, "empirical": None}
        key = c.graph.nodes[nb.node].get("key") if nb.node in c.graph else None
        if key is not None and res.inv_tau is not None and c.params.schedule is None:
            row["empirical"] = _empirical(c, tg, key, n_max, all_n, timeout_s, res.inv_tau, proofs)
        out.append(row)
    return out


def _empirical(c: Construction, tg: Target, key: str, n_max: int, all_n: bool, timeout_s: float,
               certified: Fraction, proofs: ProofCache) -> dict:
    """The empirical minimum 1/τ: the actual head on its attaining inputs at the binding length
    (capped at :data:`EMPIRICAL_N_CAP`; regime U's all-n claim at the cap), with the certified
    value at that length for comparison (measured)."""
    b = tg.nb.bound
    n_emp = min(n_max, EMPIRICAL_N_CAP) if not all_n else EMPIRICAL_N_CAP
    x_emp, runs = empirical_inv_tau(c.model, tg.nb.node, key, n_emp, c.eta,
                                    patterns=key_patterns(b), spacing=b.spacing, quantity=b.quantity, first=b.first,
                                    value_label=c.graph.nodes[tg.nb.node].get("value"), value_spacing=b.value_spacing,
                                    direction=c.graph.nodes[tg.nb.node].get("direction", "past"),
                                    start=float(required_inv_tau(b.leak, n_value=n_emp, eta_value=c.eta,
                                                                 beta_value=c.beta)) or 1.0,
                                    max_runs=EMPIRICAL_MAX_RUNS)
    cert_emp = certified
    if n_emp != n_max and not all_n:
        r2 = find_inv_tau(lambda x, mk=tg.make, k=n_emp: Claim(mk(x).expr, mk(x).eta, tg.lo, k, label=tg.nb.node),
                          tg.leak_at, n_bind=n_emp, tolerance=c.tolerance, beta=c.beta, timeout_s=timeout_s, check=proofs.check)
        cert_emp = r2.inv_tau
    return {"n": n_emp, "inv_tau_empirical": x_emp, "runs": runs,
            "inv_tau_certified_at_n": frac_str(cert_emp) if cert_emp is not None else None,
            "ratio_certified_to_empirical": (float(cert_emp) / x_emp) if cert_emp is not None else None,
            "method": _empirical_method(b)}


def _empirical_method(b) -> str:
    """The fixed description of an empirical minimum's run for bound ``b`` (verify compares it)."""
    return ("Illinois iteration on the head's own attaining key patterns (" +
            ", ".join(PATTERN_TEXT[p] for p in key_patterns(b)) + f"), on its {b.quantity}")


def found_params(c: Construction, found: list[dict], n_lo: int, n_max: int, all_n: bool,
                 tune: tuple[str, ...]) -> tuple[Fraction, dict[str, Fraction]]:
    """``(1/τ, other parameters)`` a search's rows select: the largest certified 1/τ (1 when no
    bound depends on τ) and, per other tuned parameter, 1/(largest certified 1/parameter).

    Raises :class:`CertificateError` when the rows do not cover exactly the tuned bounds."""
    tgs = {tg.nb.node: tg for tg in targets(c, n_lo, n_max, all_n, tune)}
    if sorted(r["node"] for r in found) != sorted(tgs):
        raise CertificateError(f"search.per_bound covers nodes {sorted(r['node'] for r in found)}, the construction's "
                               f"tuned bounds are {sorted(tgs)}", path="search.per_bound")
    best: dict[str, Fraction] = {}
    for i, r in enumerate(found):
        x = parse_frac(r["inv_tau_certified"], f"search.per_bound[{i}].inv_tau_certified")
        if x <= 0:
            raise CertificateError(f"search.per_bound[{i}].inv_tau_certified: must be > 0",
                                   path=f"search.per_bound[{i}].inv_tau_certified")
        p = str(tgs[r["node"]].nb.bound.parameter)
        best[p] = max(best.get(p, x), x)
    inv_tau = best.pop("tau", Fraction(1))
    return inv_tau, {k: 1 / v for k, v in best.items()}


def searched_params(c: Construction, found: list[dict], n_lo: int, n_max: int, all_n: bool,
                    tune: tuple[str, ...]) -> tuple[Fraction, dict[str, Fraction]]:
    """:func:`found_params` of a search that certify just ran; raises :class:`SearchFailed`
    (exit 1, naming each bound and why) when some bound has no certified value."""
    bad = [r for r in found if r["inv_tau_certified"] is None]
    if bad:
        raise SearchFailed("--find-tau: no certifiable temperature found: "
                           + "; ".join(f"{r['node']}: {r['message']}" for r in bad))
    return found_params(c, found, n_lo, n_max, all_n, tune)


def search_section(c: Construction, found: list[dict], n_lo: int, n_max: int, all_n: bool, tune: tuple[str, ...],
                   timeout_s: float, proofs: ProofCache) -> dict:
    """The ``search`` section, derived from the certified values in ``found`` (each re-proved with
    Z3 at its own value: the proof the search found, or in a replay a fresh one), the tight,
    closed-form and gap-lemma references re-derived; ``rounds`` and ``empirical`` are measured
    and copied from ``found``."""
    tgs = {tg.nb.node: tg for tg in targets(c, n_lo, n_max, all_n, tune)}
    per = []
    for r in found:
        tg = tgs[r["node"]]
        b = tg.nb.bound
        x = parse_frac(r["inv_tau_certified"], "search.per_bound.inv_tau_certified")
        proof = proofs.check(tg.make(x), timeout_s=timeout_s, minimise=False)
        tight, closed, generic = tg.reference(c, n_max)
        per.append({"node": tg.nb.node, "kind": b.kind, "parameter": str(b.parameter),
                    "inv_tau_certified": r["inv_tau_certified"], "proof_at_certified": proof.status,
                    "binding_n": tg.binding(c), "inv_tau_tight_numeric": tight, "inv_tau_closed_form": closed,
                    "inv_tau_generic_gap_lemma": generic, "empirical": r.get("empirical"), "rounds": r.get("rounds"),
                    "message": "" if proof.status == "proved" else f"not proved at the stated value ({proof.reason})"})
    inv_tau, params = found_params(c, found, n_lo, n_max, all_n, tune)
    taus = [p for p in per if p["parameter"] == "tau"]
    out = {"inv_tau": frac_str(inv_tau), "tau": frac_str(1 / inv_tau), "per_bound": per,
           "method": ("numeric tight requirement (mpmath) + a relative margin of 10x the float64 rounding "
                      "allowance (at least 1e-9), rounded up to 12 digits, proved by Z3; every row's value is "
                      "re-proved at itself"),
           "message": "" if taus else "no node depends on tau: tau = 1 is arbitrary (every node is exact for "
                                      "every tau or depends only on other parameters)"}
    if params:
        out["params"] = {k: frac_str(v) for k, v in params.items()}
    return out


# --------------------------------------------------------------------------------------------
# assemble (certify and replay)


def assemble(c: Construction, *, inv_tau: Fraction, n_lo: int, n_max: int, all_n: bool, timeout_s: float,
             proofs: ProofCache, found: list[dict] | None = None, tune: tuple[str, ...] = ("tau",),
             numeric: dict | None = None, say: Callable[[str], None] = lambda s: None) -> dict:
    """The certificate of ``c`` at ``1/τ = inv_tau`` on ``[n_lo, n_max]`` (all n ≥ n_lo when
    ``all_n``), without the measured envelope (``created``, ``tool``, ``times``) and ``hashes``.

    ``found``: the rows of a τ search (certified values, with their measured ``rounds`` and
    ``empirical``), or None for a given τ; ``numeric``: the measured numeric section or None.
    Every claim is checked through ``proofs``.  Deterministic in its arguments (measured fields
    aside): :func:`replay` relies on it."""
    numeric = json.loads(json.dumps(numeric))  # its node rows are copied into nodes[]: no shared objects
    specs = claim_specs(c, inv_tau, n_lo, n_max, all_n)
    results: dict[str, ClaimResult] = {}
    for cs in specs:
        say(f"proving claim {cs.id} ({len(cs.nodes)} node(s))")
        results[cs.id] = proofs.check(cs.claim(), timeout_s=timeout_s)
    by_node = {v: cs for cs in specs for v in cs.nodes}
    nodes = []
    for v, nb in c.bounds.items():
        cs = by_node.get(v)
        nodes.append({**node_static(nb, n_lo, n_max, all_n), "choice": choice_static(c, v, n_max, all_n),
                      "claim": cs.id if cs else None,
                      "status": results[cs.id].status if cs else "proved",
                      "numeric": (numeric or {}).get("nodes", {}).get(v),
                      **({"schedule": schedule_outcome(c, nb, inv_tau, cs, results[cs.id] if cs else None, all_n)}
                         if c.params.schedule is not None else {})})
    statuses = [r.status for r in results.values()]
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "kind": c.kind,
        "source": c.source,
        "construction": {**construction_static(c, inv_tau),
                         "tau_choice": "found by --find-tau" if found is not None else "given"},
        "range": {"n_min": n_lo, "n_max": n_max, "all_n": all_n},
        "graph": json.loads(json.dumps(graph_data(c.graph))),
        "nodes": nodes,
        "claims": [claim_json(cs, results[cs.id]) for cs in specs],
        "composed": COMPOSED,
        "status": "refuted" if "refuted" in statuses else ("unknown" if "unknown" in statuses else "proved"),
        "search": None if found is None else search_section(c, found, n_lo, n_max, all_n, tune, timeout_s, proofs),
        "numeric": numeric,
        "precision": precision_section(c, n_max, inv_tau, all_n),
    }


def envelope(cert: dict, times: dict, *, timeout_s: float) -> dict:
    """Add the certifying run's solver settings (``solver``: ``timeout_s``, the per-query limit in
    seconds, a replay input: :func:`~softhard.solver.replay.solver_section`), the measured envelope
    (``created``, ``tool`` versions, ``times``) and the hashes, then checks the result against the schema
(:func:`~softhard.solver.replay.check_new_certificate`).  Every kind's certify ends here."""
    cert["solver"] = solver_section(timeout_s)
    cert["created"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    cert["tool"] = versions()
    cert["times"] = {k: round(v, 6) for k, v in times.items()}
    cert["hashes"] = compute_hashes(cert)
    check_new_certificate(cert)  # schema-valid, and remembered as such for its verify
    return cert


def check_range(n_lo: int, n_max: int, tau: Fraction | None, find_tau: bool) -> None:
    """Raise :class:`ParameterError` unless exactly one of ``tau``/``find_tau`` is given, τ > 0 and
    1 ≤ n_lo ≤ n_max."""
    if (tau is None) == (not find_tau):
        raise ParameterError("give exactly one of tau (or inv_tau, under a schedule its constant S) and find_tau "
                             "(--tau T, --schedule KIND:S, --find-tau on the command line)")
    if n_max < 1 or n_lo < 1 or n_lo > n_max:
        raise ParameterError(f"need 1 <= n_min <= n_max, got n_min={n_lo}, n_max={n_max}")
    if tau is not None and tau <= 0:
        raise ParameterError(f"tau must be > 0, got {tau}")


def certify(c: Construction, *, n_max: int, n_lo: int = 1, tau: Fraction | str | None = None, find_tau: bool = False,
            all_n: bool | None = None, timeout_s: float = 20.0, numeric: bool = True, numeric_opts: dict | None = None,
            progress: Callable[[str], None] | None = None, tune: tuple[str, ...] = (),
            max_positions: int | None = DEFAULT_MAX_POSITIONS, inv_tau: Fraction | str | None = None) -> dict:
    """Build a certificate for ``c`` on ``n ∈ [n_lo, n_max]`` (or all ``n ≥ n_lo`` in regime U).

    Exactly one of ``tau``, ``inv_tau`` (= 1/τ; under a schedule 1/τ(n) = S·g(n) its constant S,
    THEORY §9) and ``find_tau`` must be given; ``tau``/``inv_tau`` exact and positive: a Fraction,
    an int or a string such as ``"1/100"``.
    ``tune``: further parameters the search finds together with τ (``("eps_ln",)``: the largest
    certifiable layer-norm ε; the construction is then rebuilt with it).
    ``all_n`` defaults to True when every bound is uniform in n (regime U/P selections, the ``pe``
    comparator, ``ln`` comparators with ε_LN = 0 in any regime; :attr:`Construction.uniform_in_n`)
    and False otherwise.
    ``max_positions``: the numeric confirmation's work budget (word positions, the dense attention
    path's work at a too-warm temperature included; an integer >= 1, None: no limit), checked before
    it runs; ``numeric_opts``: the plan's options (:func:`~softhard.solver.formula_numeric.resolve_plan`).
    ``n_max``/``n_lo``: integers ``>= 1`` (or an integral float or exact decimal text, ``"1e6"``, read
    as the command line reads ``--n-max``); ``timeout_s``: each solver query's hard limit, in (0, 86400].
    Returns the certificate as a dict (schema 2); raises :class:`ParameterError` on bad input (an
    infinite, fractional or non-numeric ``n_max`` too) or a numeric confirmation over the budget,
    and :class:`SearchFailed` when ``find_tau`` finds no certifiable temperature.
    """
    t_start = time.perf_counter()
    n_max, n_lo = to_count(n_max, "n_max"), to_count(n_lo, "n_lo")
    timeout_s = to_seconds(timeout_s, "timeout_s")
    if max_positions is not None:
        max_positions = to_count(max_positions, "max_positions")
    if tau is not None and inv_tau is not None:
        raise ParameterError("give tau or inv_tau, not both")
    if inv_tau is not None:
        inv_tau = to_fraction(inv_tau, "inv_tau")
        if inv_tau <= 0:
            raise ParameterError(f"inv_tau must be > 0, got {inv_tau}")
        tau = 1 / inv_tau
    elif tau is not None:
        tau = to_fraction(tau, "tau")  # "1/100" or a Fraction: exact
    check_range(n_lo, n_max, tau, find_tau)
    if all_n is None:  # (a searched ε_LN > 0 is not exact for every n: Θ(n²)); a schedule: all n (THEORY §9)
        all_n = (c.uniform_in_n or c.params.schedule is not None) and "eps_ln" not in tune
    say = progress or (lambda s: None)
    proofs = ProofCache()
    tune = ("tau",) + tuple(tune)
    found = None
    if find_tau:
        say("searching for the largest certifiable tau")
        found = search_values(c, n_lo, n_max, all_n, timeout_s, tune, proofs)
        inv_tau, params = searched_params(c, found, n_lo, n_max, all_n, tune)
        if params:  # e.g. ε_LN: rebuild the construction with the value found
            c = rebuild(c.source, c.params.with_(**params))
    else:
        inv_tau = 1 / tau
    t_solve = time.perf_counter()
    num = None
    if numeric:
        say("numeric confirmation")
        num = numeric_section(c, n_max, inv_tau, numeric_opts or {}, progress=lambda f: say(f"numeric: {f}"),
                              max_positions=max_positions)
    t_num = time.perf_counter()
    cert = assemble(c, inv_tau=inv_tau, n_lo=n_lo, n_max=n_max, all_n=all_n, timeout_s=timeout_s, proofs=proofs,
                    found=found, tune=tune, numeric=num, say=say)
    t_end = time.perf_counter()
    return envelope(cert, timeout_s=timeout_s, times={"search_s": t_solve - t_start, "numeric_s": t_num - t_solve, "solve_s": t_end - t_num,
                           "total_s": t_end - t_start})


# --------------------------------------------------------------------------------------------
# replay (verify)


def construction_params(cert: dict) -> Params:
    """The certificate's parameters as one :class:`Params` (``construction.regime``,
    ``construction.params``, the source's comparator).  Raises :class:`CertificateError` naming
    ``construction.params`` for a value that is not a valid parameter."""
    con = cert["construction"]
    try:
        exact = {k: parse_frac(v, f"construction.params.{k}") for k, v in con["params"].items()}
        sched = con.get("schedule")
        return Params(regime=con["regime"], comparator=cert["source"].get("comparator"),
                      schedule=None if sched is None else sched.get("kind"), **exact)
    except (ParameterError, TypeError) as e:
        raise CertificateError(f"construction.params: {e}", path="construction.params") from None


def replay(cert: dict, timeout_s: float) -> tuple[dict, Construction]:
    """Re-assemble a formula (or model-file) certificate from its stored source, parameters,
    searched values and measured fields (module docstring); returns it with the rebuilt
    construction.  Raises :class:`CertificateError`/:class:`ParameterError` for inputs that do
    not rebuild."""
    con, rng = cert["construction"], cert["range"]
    if not 1 <= rng["n_min"] <= rng["n_max"]:
        raise CertificateError(f"range: need 1 <= n_min <= n_max, got {rng['n_min']}, {rng['n_max']}", path="range")
    params = construction_params(cert)
    srch = cert.get("search")
    found = None
    tune = ("tau",)
    if srch is not None:
        found = [{k: r.get(k) for k in ("node", "inv_tau_certified", "rounds", "empirical")} for r in srch["per_bound"]]
        tune = ("tau",) + tuple(srch.get("params") or {})
    c = rebuild(cert["source"], params)
    if found is not None:
        inv_tau, tuned = found_params(c, found, rng["n_min"], rng["n_max"], rng["all_n"], tune)
        if tuned:
            c = rebuild(cert["source"], params.with_(**tuned))
    else:
        inv_tau = parse_frac(con["inv_tau"], "construction.inv_tau")
        if inv_tau <= 0:
            raise CertificateError("construction.inv_tau: must be > 0", path="construction.inv_tau")
    fresh = assemble(c, inv_tau=inv_tau, n_lo=rng["n_min"], n_max=rng["n_max"], all_n=rng["all_n"],
                     timeout_s=timeout_s, proofs=ProofCache(), found=found, tune=tune, numeric=cert.get("numeric"))
    return fresh, c


def check_measured(cert: dict, c: Construction, rep: VerifyReport) -> None:
    """Consistency of the measured fields (docs/certificates.md, "Measured fields"): the numeric
    section (:func:`~softhard.solver.formula_numeric.check_nodes`; for a formula also
    :func:`~softhard.solver.formula_numeric.check_plan` and the fixed texts), the search rows' order
    (one per bound, in the search's order), each search row's ``rounds`` (1..:data:`SEARCH_TRIES` for
    a found value), whether it has an empirical minimum (exactly for a found τ of a head with a key,
    no schedule), and each empirical minimum: its length
    (the binding one capped at :data:`EMPIRICAL_N_CAP`), its run count, its fixed description, and
    against its certified value (ratio; the certified value at the empirical length meets the bound
    there in ball arithmetic; certified ≥ empirical)."""
    num = cert.get("numeric")
    if num:
        check_nodes(num, c, rep)
        if cert.get("kind") == "formula":
            for k, text in NUMERIC_TEXTS.items():  # (a model certificate's numeric section has texts of its own)
                if num.get(k) != text:
                    rep.add(f"numeric.{k}", "is not the fixed description")
            check_plan(num, c, cert["range"]["n_max"],
                       parse_frac(cert["construction"]["inv_tau"], "construction.inv_tau"), rep)
    srch = cert.get("search")
    if srch is None:
        return
    rng = cert["range"]
    tlist = targets(c, rng["n_min"], rng["n_max"], rng["all_n"], ("tau",) + tuple(srch.get("params") or {}))
    order = [tg.nb.node for tg in tlist]
    tgs = {tg.nb.node: tg for tg in tlist}
    rows = [r["node"] for r in srch["per_bound"]]
    if rows != [nd for nd in order if nd in rows] or len(set(rows)) != len(rows):
        rep.add("search.per_bound", f"rows for {rows}: the search makes one row per bound, in the order {order}")
    for i, r in enumerate(srch["per_bound"]):
        e, tg = r.get("empirical"), tgs.get(r["node"])
        where = f"search.per_bound[{i}].empirical"
        rounds = r["rounds"]
        if r.get("inv_tau_certified") is not None and not (isinstance(rounds, int) and 1 <= rounds <= SEARCH_TRIES):
            rep.add(f"search.per_bound[{i}].rounds", f"{rounds!r}: a found value takes 1 to {SEARCH_TRIES} rounds")
        if tg is not None:  # the search runs an empirical minimum exactly for a found τ of a head with a key
            key = c.graph.nodes[tg.nb.node].get("key") if tg.nb.node in c.graph else None
            runs = key is not None and r.get("inv_tau_certified") is not None and c.params.schedule is None
            if runs != (e is not None):
                rep.add(where, "is null, but the search measures an empirical minimum for this row" if runs else
                        "is recorded, but the search measures no empirical minimum for this row")
        if e is None or tg is None:
            continue
        n_emp = EMPIRICAL_N_CAP if rng["all_n"] else min(rng["n_max"], EMPIRICAL_N_CAP)
        if e["n"] != n_emp:
            rep.add(f"{where}.n", f"{e['n']!r}: the empirical run is at n = {n_emp}")
        if not (isinstance(e["runs"], int) and 1 <= e["runs"] <= EMPIRICAL_MAX_RUNS):
            rep.add(f"{where}.runs", f"{e['runs']!r}: the iteration takes 1 to {EMPIRICAL_MAX_RUNS} runs")
        if e["method"] != _empirical_method(tg.nb.bound):
            rep.add(f"{where}.method", "is not the fixed description for this bound's key patterns")
        if (e["inv_tau_certified_at_n"] is None) != (e["ratio_certified_to_empirical"] is None):
            rep.add(f"{where}.ratio_certified_to_empirical", "must be null exactly when inv_tau_certified_at_n is")
        if e["inv_tau_certified_at_n"] is None:
            continue
        ce = parse_frac(e["inv_tau_certified_at_n"], f"{where}.inv_tau_certified_at_n")
        if not rng["all_n"] and e.get("n") == rng["n_max"] and r.get("inv_tau_certified") != e["inv_tau_certified_at_n"]:
            # at n_max the empirical run compared against the row's own certified value (not a binding one:
            # a node whose value is below the certificate's 1/τ is checked only here)
            rep.add(f"search.per_bound[{i}].inv_tau_certified", f"is {r.get('inv_tau_certified')}, but the empirical "
                                                               f"run at n = n_max compared {e['inv_tau_certified_at_n']}")
        xe = float(e["inv_tau_empirical"])
        if not (xe > 0 and math.isclose(e["ratio_certified_to_empirical"], float(ce) / xe, rel_tol=1e-12)):
            rep.add(f"{where}.ratio_certified_to_empirical", "is not inv_tau_certified_at_n / inv_tau_empirical")
        elif float(ce) / xe < 1 - 1e-6:
            rep.add(where, f"the empirical minimum {xe} exceeds the certified {float(ce)}: the measured leak would "
                           "exceed the bound")
        cle = tg.make(ce)
        over, val = exceeds(cle.expr, cle.eta, int(e["n"]), prec=256)
        if over:
            rep.add(f"{where}.inv_tau_certified_at_n", f"{e['inv_tau_certified_at_n']} does not meet the bound at "
                                                       f"n = {e['n']} (bound = {val})")


#: the formula kind in the registry (:mod:`softhard.solver.kinds`)
FORMULA = Kind(name="formula", inputs=formula_inputs, replay=replay, check_measured=check_measured)
