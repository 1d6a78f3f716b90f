"""Tracr certificates, step 2: the claims and the four answers (THEORY §8; docs/tracr.md).

Every answer is a set of claims ``∀ n ∈ [n_lo, n_hi]: expr(n) ≤ tol`` checked by Z3 with an arb
second check (:class:`~softhard.solver.check.ProofCache`):

* **compiled** — every claim at the compiled temperature (rational ``λ⁻ ≤ λ``; the bound is
  decreasing in λ) for ``n ≤ max_seq_len``; if one is refuted, its smallest counterexample comes
  from the claim check itself and the claims on the lengths below it are proved too;
* **minimum temperature** — the smallest ``λ*`` (12 digits) at which every claim holds for
  ``n ≤ n_target``: proved at ``λ*``, the binding claim refuted at ``λ*·(1 − 10⁻⁶)``;
* **longer inputs at the compiled temperature** — the largest ``N*`` with every claim from the
  extrapolated premises proved on ``[1, N*]``, the binding one refuted at ``N* + 1``;
* **compiled at a larger max_seq_len N** (hypothetical) — the largest ``N_c`` at which the nominal
  coldness, with key_size(N), keeps every claim (proved at ``N_c``, refuted at ``N_c + 1``), or,
  for a SelectorWidth count decoder, the claims for each N up to the largest the hard decoder
  itself gets right.

``λ*``, ``N*`` and ``N_c`` (with their binding claims) are found by numeric searches
(:func:`search_values`, certify only) and recorded as *stated values* (the certificate's
``search`` section).  :func:`answers` takes them as given and proves them — every claim at the
value, the binding claim refuted just beyond — so a replay re-proves each stated value without
repeating a search; a stated value that is not minimal (or maximal) is refuted by its own claims.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import flint
import mpmath
import sympy as sp

from ..bounds.cache import subs as cached_subs
from ..bounds.core import n as n_sym
from ..bounds.core import tau
from ..bounds.derive import evaluate, required_inv_tau
from ..bounds.tracr import TracrBound, fs
from ..bounds.tracr_rules import selector_width_decoder
from ..constructions.errors import CertificateError
from ..constructions.tracr import sqrt_ratio_enclosure
from .check import ProofCache
from .claims import ClaimSpec, claim_json, parse_frac
from .search import round_up
from .tracr_analysis import DIGITS, Analysis, down_digits, epsilon_for, fd, positional_coords

#: relative step below λ* at which the binding claim must be refuted ("λ* is minimal to 6 digits")
MIN_STEP = Fraction(1, 10**6)
#: largest length searched for N* / N_c
N_CAP = 10**30
N_C_CAP = 10**7

SEARCH_METHOD = ("numeric searches at certify time (mpmath, 50 digits): min_inv_tau the largest requirement over "
                 "the claims at n_target, rounded up to 12 digits; longer_inputs.exact_up_to and recompiled.N_c the "
                 "largest length (max_seq_len) within tolerance, by doubling and bisection. Stated values: verify "
                 "does not repeat the searches, it re-proves each value with its claims (every claim at the value, "
                 "the binding claim refuted just beyond it)")


# --------------------------------------------------------------------------------------------
# claims


def claim_exprs(bound: TracrBound, eps: dict[str, Fraction]) -> list[tuple[str, sp.Expr, Fraction]]:
    """``(node, expr(n, τ), tolerance)`` of every claim of a bound: one per output (error ≤ ε) and
    one per resolution condition (``e_z ≤ r_min``)."""
    out = [(f"out:{o}", e, eps[o]) for o, e in bound.outputs.items()]
    out += [(f"mlp:{m}", e, r) for m, (e, r) in bound.conditions.items()]
    return out


def _subs(expr: sp.Expr, inv_tau: Fraction) -> sp.Expr:
    """``expr`` at ``τ = 1/inv_tau``: SymPy's ``subs``, through the derivation cache
    (:func:`softhard.bounds.cache.subs`: an expression ``==`` the live one, with the same ``srepr``).
    SymPy re-evaluates a bound's ``Max`` on each new substitution (~17% of a Tracr certify + verify);
    the disk layer serves a later process (a ``verify`` after ``certify``) without it (ISSUE 16)."""
    return cached_subs(expr, {tau: sp.Rational(inv_tau.denominator, inv_tau.numerator)})


@dataclass
class ClaimRun:
    """A claim spec with its role and temperature, and (after running) its result JSON."""

    spec: ClaimSpec
    role: str
    inv_tau: Fraction
    premise: str
    json: dict | None = None


def make_claims(bound: TracrBound, eps, inv_tau: Fraction, n_lo: int, n_hi: int | None, role: str, premise: str,
                prefix: str, only: str | None = None, tol_override: dict | None = None) -> list[ClaimRun]:
    """One :class:`ClaimRun` per claim of ``bound`` at ``inv_tau`` on ``[n_lo, n_hi]`` (``only``: a
    single node; ``tol_override``: node → tolerance)."""
    out = []
    for k, (node, e, tol) in enumerate(claim_exprs(bound, eps)):
        if only is not None and node != only:
            continue
        tol = (tol_override or {}).get(node, tol)
        spec = ClaimSpec(id=f"{prefix}{k}", expr=_subs(e, inv_tau), tolerance=tol, n_lo=n_lo, n_hi=n_hi, nodes=[node])
        out.append(ClaimRun(spec=spec, role=role, inv_tau=inv_tau, premise=premise))
    return out


class arb_precision:
    """Context manager: python-flint's working precision (bits).  The shared checkers build the
    tolerance's ball at the *current* precision (53 bits by default); a claim refuted at ``N* + 1``
    exceeds its tolerance by a relative 1/N* (10⁻¹⁷ for hist), which needs more bits to decide."""

    def __init__(self, bits: int = 256):
        self.bits = bits

    def __enter__(self):
        self.old = flint.ctx.prec
        flint.ctx.prec = max(self.old, self.bits)

    def __exit__(self, *exc):
        flint.ctx.prec = self.old


def run_claims(runs: list[ClaimRun], proofs: ProofCache, timeout_s: float, say=None, minimise: bool = False) -> None:
    """Check every claim (Z3 + arb, through ``proofs``) and store its certificate JSON."""
    for r in runs:
        if r.json is not None:
            continue
        if say:
            say(f"claim {r.spec.id} ({r.spec.nodes[0]}, n in [{r.spec.n_lo}, {r.spec.n_hi}])")
        with arb_precision():
            res = proofs.check(r.spec.claim(), timeout_s=timeout_s, minimise=minimise)
        j = claim_json(r.spec, res)
        j.update(role=r.role, premise=r.premise, inv_tau=fs(r.inv_tau), inv_tau_decimal=fd(r.inv_tau))
        r.json = j


def _all(runs: list[ClaimRun], status: str) -> bool:
    return all(r.json["status"] == status for r in runs)


def required(expr: sp.Expr, tol: Fraction, n_value: int) -> mpmath.mpf:
    """Smallest λ with ``expr(n_value, 1/λ) ≤ tol`` (numeric, mpmath bisection; the bound is
    decreasing in λ).  0 when it holds at every λ."""
    return required_inv_tau(expr, n_value=n_value, eta_value=tol)


def largest_n(expr_n: sp.Expr, tol: Fraction | Callable[[int], Fraction], cap: int = N_CAP) -> int | None:
    """Largest integer n ≥ 1 with ``expr_n(n) ≤ tol`` (expr increasing in n; numeric, 50 digits);
    ``tol`` may be a function of n, non-increasing; 0 if it fails at n = 1; None if it holds up
    to ``cap``."""
    f = sp.lambdify([n_sym], expr_n, modules="mpmath")
    with mpmath.workdps(50):
        def ok(k):
            t = tol(k) if callable(tol) else tol
            return f(mpmath.mpf(k)) <= mpmath.mpf(t.numerator) / t.denominator

        if not ok(1):
            return 0
        lo, hi = 1, 2
        while ok(hi):
            lo, hi = hi, hi * 2
            if hi > cap:
                return None
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if ok(mid):
                lo = mid
            else:
                hi = mid
        return lo


# --------------------------------------------------------------------------------------------
# stated values: shape checks (a replay reads them from the certificate)


def _none(stated, where: str) -> None:
    if stated is not None:
        raise CertificateError(f"{where}: must be null (this answer rests on no search)", path=where)


def _fields(stated, where: str, keys: tuple[str, ...]) -> dict:
    if not isinstance(stated, dict) or set(stated) != set(keys):
        raise CertificateError(f"{where}: expected an object with exactly {', '.join(keys)}", path=where)
    return stated


def _length(x, where: str) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or x < 0 or x > N_CAP:
        raise CertificateError(f"{where}: expected an integer in [0, {N_CAP}], got {x!r}", path=where)
    return x


def _node(x, nodes: list[str], where: str) -> str:
    if x not in nodes:
        raise CertificateError(f"{where}: {x!r} is not one of the claims' nodes {nodes}", path=where)
    return x


# --------------------------------------------------------------------------------------------
# 1. compiled


def answer_compiled(an: Analysis, proofs: ProofCache, timeout_s: float, say=None) -> tuple[dict, list[ClaimRun]]:
    """Every claim at the compiled temperature (rational ``λ⁻``) for n ≤ max_seq_len; if one is
    refuted, the largest n below its smallest counterexample is proved too."""
    lo, hi = an.lam
    N = an.n_table
    runs = make_claims(an.bound, an.epsilon, lo, 1, N, "compiled", "exhaustive", "c")
    run_claims(runs, proofs, timeout_s, say, minimise=True)
    bad = [r for r in runs if r.json["status"] != "proved"]
    ans = {"inv_tau": fs(lo), "inv_tau_decimal": fd(lo), "inv_tau_upper": fs(hi),
           "compiled_inv_tau_float": float(an.coldness) / math.sqrt(int(an.info["key_size"])),
           "n_range": [1, N], "claims": [r.spec.id for r in runs]}
    if not bad:
        ans.update(status="proved", exact_up_to=N,
                   limited_by=(f"the positional table (max_seq_len = {N}): the compiled model has no embedding for "
                               f"position {N + 1}" if positional_coords(an.hm) else
                               f"the analysed range (n <= max_seq_len = {N})"))
        return ans, runs
    cex = [r.json["counterexample"] for r in bad if r.json["status"] == "refuted" and r.json["counterexample"]]
    if cex and min(cex) > 1:
        m = min(cex) - 1
        more = make_claims(an.bound, an.epsilon, lo, 1, m, "compiled-largest", "exhaustive", "cl")
        run_claims(more, proofs, timeout_s, say)
        ans.update(status="refuted", exact_up_to=m if _all(more, "proved") else None, first_failure=min(cex),
                   claims_largest=[r.spec.id for r in more])
        return ans, runs + more
    ans.update(status="refuted" if cex else "unknown", exact_up_to=0 if cex else None,
               first_failure=min(cex) if cex else None)
    return ans, runs


# --------------------------------------------------------------------------------------------
# 2. minimum temperature


def _min_setting(an: Analysis, n_target: int):
    """The bound, its premise kind and the tolerance overrides for lengths up to ``n_target``."""
    if n_target > an.n_table:
        return an.bound_ext, (an.ext.kind if an.ext is not None else None), an.tolerance_at(n_target)
    return an.bound, "exhaustive", {}


def search_min_inv_tau(an: Analysis, n_target: int) -> dict | None:
    """The stated value of the minimum-temperature answer: ``λ*`` (12 digits, just above the
    largest numeric requirement at ``n_target``) and the claim that needs it; None without premises."""
    bound, _, over = _min_setting(an, n_target)
    if bound is None:
        return None
    reqs = [(required(e, over.get(node, tol), n_target), node) for node, e, tol in claim_exprs(bound, an.epsilon)]
    need, node = max(reqs, key=lambda t: t[0])
    if need == 0:
        return {"inv_tau": "0", "binding": None}
    return {"inv_tau": fs(round_up(need * (1 + mpmath.mpf("1e-9")), DIGITS)), "binding": node}


def answer_min_inv_tau(an: Analysis, n_target: int, stated, proofs: ProofCache, timeout_s: float,
                       say=None) -> tuple[dict, list[ClaimRun]]:
    """The smallest λ (12 digits) proving every claim on ``[1, n_target]`` (data premises when
    ``n_target ≤ max_seq_len``, else the extrapolated ones), refuted a relative ``10⁻⁶`` below:
    ``stated`` (:func:`search_min_inv_tau`) proved."""
    where = "search.min_inv_tau"
    bound, premise, over = _min_setting(an, n_target)
    if bound is None:
        _none(stated, where)
        return {"status": "unknown", "n": n_target, "reason": f"no premises beyond max_seq_len: {an.ext_reason}"}, []
    st = _fields(stated, where, ("inv_tau", "binding"))
    claims = {node: (e, over.get(node, tol)) for node, e, tol in claim_exprs(bound, an.epsilon)}
    if st["inv_tau"] == "0":
        _none(st["binding"], f"{where}.binding")
        if any(required(e, t, n_target) != 0 for e, t in claims.values()):
            raise CertificateError(f"{where}.inv_tau: 0, but a claim needs a positive 1/tau at n = {n_target}",
                                   path=f"{where}.inv_tau")
        return {"status": "proved", "n": n_target, "inv_tau": "0", "binding": None,
                "note": "every claim holds at any temperature for these lengths"}, []
    lam = parse_frac(st["inv_tau"], f"{where}.inv_tau")
    if lam <= 0:
        raise CertificateError(f"{where}.inv_tau: must be > 0", path=f"{where}.inv_tau")
    node = _node(st["binding"], list(claims), f"{where}.binding")
    need = required(*claims[node], n_target)
    runs = make_claims(bound, an.epsilon, lam, 1, n_target, "min-inv-tau", premise, "m", tol_override=over)
    run_claims(runs, proofs, timeout_s, say)
    below = down_digits(mpmath.mpf(lam.numerator) / lam.denominator
                        * (1 - mpmath.mpf(MIN_STEP.numerator) / MIN_STEP.denominator))
    ref = make_claims(bound, an.epsilon, below, n_target, n_target, "min-inv-tau-below", premise, "mb", only=node,
                      tol_override=over)
    run_claims(ref, proofs, timeout_s, say)
    K = int(an.info["key_size"])
    ok = _all(runs, "proved") and _all(ref, "refuted")
    c_star = mpmath.sqrt(mpmath.mpf(lam.numerator) ** 2 * K / mpmath.mpf(lam.denominator) ** 2)
    rec = None
    if an.key_size_fn is not None and n_target > an.n_table and an.key_size_fn(n_target) != K:
        Kn = an.key_size_fn(n_target)
        rec = {"key_size": Kn, "nominal_coldness": mpmath.nstr(mpmath.sqrt(mpmath.mpf(lam.numerator) ** 2 * Kn
                                                                          / mpmath.mpf(lam.denominator) ** 2), 10),
               "note": f"a model compiled for max_seq_len {n_target} has key_size {Kn}: it needs this nominal coldness"}
    return {"status": "proved" if ok else "unknown", "n": n_target, "premise": premise,
            "inv_tau": fs(lam), "inv_tau_decimal": fd(lam), "refuted_below": fs(below),
            "refuted_below_decimal": fd(below), "binding": node, "tight_numeric": float(need),
            "nominal_coldness": mpmath.nstr(c_star, 10), "key_size": K, "recompiled_for_n": rec,
            "claims": [r.spec.id for r in runs], "claims_below": [r.spec.id for r in ref]}, runs + ref


# --------------------------------------------------------------------------------------------
# 3. longer inputs


def search_longer(an: Analysis) -> dict | None:
    """The stated value of the longer-inputs answer: the largest N* within tolerance at the
    compiled λ⁻ (numeric) and its binding claim; ``all_n`` when no claim grows past the cap under
    a fixed tolerance; None without extrapolated premises."""
    if an.bound_ext is None:
        return None
    lo, _ = an.lam
    best, node = None, None
    for nd, e, tol in claim_exprs(an.bound_ext, an.epsilon):
        k = largest_n(_subs(e, lo), lambda N, nd=nd, tol=tol: an.tolerance_at(N).get(nd, tol))
        if k is not None and (best is None or k < best):
            best, node = k, nd
    return {"exact_up_to": best, "binding": node, "all_n": best is None and an.fraction_rule is None}


def answer_longer(an: Analysis, stated, proofs: ProofCache, timeout_s: float, say=None) -> tuple[dict, list[ClaimRun]]:
    """Every claim from the extrapolated premises on [1, N*] at the compiled temperature and the
    binding claim refuted at N* + 1 (with ``λ⁺``): ``stated`` (:func:`search_longer`) proved."""
    where = "search.longer_inputs"
    if an.bound_ext is None:
        _none(stated, where)
        return {"status": "unknown", "reason": an.ext_reason}, []
    st = _fields(stated, where, ("exact_up_to", "binding", "all_n"))
    if not isinstance(st["all_n"], bool):
        raise CertificateError(f"{where}.all_n: expected true or false", path=f"{where}.all_n")
    lo, hi = an.lam
    kind = an.ext.kind
    nodes = [nd for nd, _, _ in claim_exprs(an.bound_ext, an.epsilon)]
    base = {"premise": kind, "inv_tau": fs(lo), "inv_tau_upper": fs(hi), "notes": an.ext.notes,
            "meaning": ("exact for the given weights: no head or MLP reads a positional coordinate, so the positional "
                        "table can be extended" if kind == "extension" else
                        "hypothetical: a model with the same per-position structure (the same logit-table levels and "
                        "own-key pairs) at longer lengths; the given model stops at max_seq_len")}
    if st["all_n"]:
        _none(st["exact_up_to"], f"{where}.exact_up_to")
        _none(st["binding"], f"{where}.binding")
        if an.fraction_rule is not None:
            raise CertificateError(f"{where}.all_n: no claim for every n is made under a tolerance that shrinks "
                                   "with n", path=f"{where}.all_n")
        runs = make_claims(an.bound_ext, an.epsilon, lo, 1, None, "longer", kind, "x")
        run_claims(runs, proofs, timeout_s, say)
        return {**base, "status": "proved" if _all(runs, "proved") else "unknown", "exact_up_to": None,
                "all_n": True, "claims": [r.spec.id for r in runs]}, runs
    if st["exact_up_to"] is None:  # eps(n) -> 0: no positive bound holds for all n
        _none(st["binding"], f"{where}.binding")
        if an.fraction_rule is None:
            raise CertificateError(f"{where}.exact_up_to: null, but the tolerance does not shrink with n",
                                   path=f"{where}.exact_up_to")
        return {**base, "status": "unknown", "exact_up_to": None, "tolerance_rule": an.fraction_rule,
                "reason": f"within the length-dependent tolerance up to at least n = {N_CAP:.0e}; with a tolerance "
                          "that shrinks like 1/n^2 no claim for all n is made"}, []
    best = _length(st["exact_up_to"], f"{where}.exact_up_to")
    node = _node(st["binding"], nodes, f"{where}.binding")
    ref = make_claims(an.bound_ext, an.epsilon, hi, best + 1, best + 1, "longer-next", kind, "xn", only=node,
                      tol_override=an.tolerance_at(best + 1))
    if best == 0:
        run_claims(ref, proofs, timeout_s, say)
        return {**base, "status": "refuted" if _all(ref, "refuted") else "unknown", "exact_up_to": 0,
                "binding": node, "claims": [], "claims_next": [r.spec.id for r in ref]}, ref
    hvp = []
    for name, d in an.decoders.items():
        for b in d.get("given_weights_beyond_max_seq_len") or []:
            if str(b["decoded"]) != str(b["count"]):
                hvp.append(f"the hard model itself is not the program beyond max_seq_len = {an.n_table}: MLP {name} "
                           f"decodes a count of {b['count']} as {b['decoded']} (its classes stop at "
                           f"{an.hm.outputs[0].classes[-1]})")
                break
    if an.fraction_rule is not None:
        base["tolerance_rule"] = an.fraction_rule
        base["tolerance_at_exact_up_to"] = {k: fs(v) for k, v in an.tolerance_at(best).items()}
    elif an.hm.outputs[0].type == "numerical":
        hvp.append("epsilon stays the one chosen at max_seq_len; distinct hard values of a numerical output may lie "
                   "closer together at longer lengths (for a running fraction, 1/(n(n-1)) apart)")
    base["hard_vs_program"] = hvp
    runs = make_claims(an.bound_ext, an.epsilon, lo, 1, best, "longer", kind, "x", tol_override=an.tolerance_at(best))
    run_claims(runs, proofs, timeout_s, say)
    run_claims(ref, proofs, timeout_s, say)
    ok = _all(runs, "proved") and _all(ref, "refuted")
    return {**base, "status": "proved" if ok else "unknown", "exact_up_to": best, "binding": node,
            "claims": [r.spec.id for r in runs], "claims_next": [r.spec.id for r in ref]}, runs + ref


# --------------------------------------------------------------------------------------------
# 4. compiled at a larger max_seq_len


def _recompiled_decoder(an: Analysis):
    """For a model whose key_size does not grow but whose count decoder does: the largest N whose
    decoder decodes every count (Tracr's rule), the claim tolerances there (the decoder's
    r_min and 0.999·its smallest margin) and the first failure at N + 1; None without a decoder."""
    if not an.decoders or an.bound_ext is None:
        return None
    name, d = next(iter(an.decoders.items()))
    L = Fraction(d["slope"])
    Nh = d["max_count_decoded"]
    h = next((t for t in an.tables.values() if t.pattern == "selector-width"), None)
    a_min = h.premise[1].a_min if h is not None else 1
    tols = {}
    for N in range(1, Nh + 1):
        here = selector_width_decoder(L, N, a_min)
        r_min = min((r["r"] for r in here["rows"] if r["r"] is not None), default=None)
        margin = min(r["margin"] for r in here["rows"])
        tols[N] = {f"out:{an.hm.outputs[0].name}": epsilon_for(margin)}
        if r_min is not None:
            tols[N][f"mlp:{name}"] = r_min
    nxt = selector_width_decoder(L, Nh + 1, a_min)
    bad = next(r for r in nxt["rows"] if r["count"] != r["decoded"])
    return Nh, tols, {"N": Nh + 1, "count": bad["count"], "decoded": bad["decoded"]}


def _decoder_runs(an: Analysis, tols: dict, inv_tau: Fraction) -> list[ClaimRun]:
    """The claims of a recompiled count decoder: for each max_seq_len N, every claim on [1, N] with
    the decoder's tolerances at N."""
    runs = []
    for N, tol in sorted(tols.items()):
        for r in make_claims(an.bound_ext, an.epsilon, inv_tau, 1, N, "recompiled", "hypothetical", f"r{N}.",
                             tol_override=tol):
            if r.spec.nodes[0] in tol:
                runs.append(r)
    return runs


def _worst(an: Analysis) -> Callable[[int], tuple[mpmath.mpf, str]]:
    """``worst(N)``: the largest ratio bound/tolerance over the claims at n = N with the nominal
    coldness and key_size(N), and its claim's node (numeric, mpmath)."""
    c, fn = an.coldness, an.key_size_fn
    claims = claim_exprs(an.bound_ext, an.epsilon)

    def worst(N: int):
        lam = mpmath.mpf(c.numerator) / c.denominator / mpmath.sqrt(fn(N))
        over = an.tolerance_at(N)
        return max((evaluate(e, n_value=N, inv_tau=lam) / (mpmath.mpf(t.numerator) / t.denominator), node)
                   for node, e, t0 in claims for t in [over.get(node, t0)])
    return worst


def _grows(an: Analysis) -> bool:
    fn = an.key_size_fn
    return fn is not None and an.bound_ext is not None and fn(an.n_table + 1) != fn(an.n_table)


def search_recompiled(an: Analysis) -> dict | None:
    """The stated value of the recompiled answer when key_size grows with max_seq_len: the largest
    N_c at which the nominal coldness keeps every claim (numeric: the bound is increasing in N)
    and the binding claim at N_c + 1; None otherwise (that answer rests on no search)."""
    if not _grows(an):
        return None
    worst = _worst(an)
    if worst(1)[0] > 1:
        return {"N_c": 0, "binding": worst(1)[1]}
    lo_, hi_ = 1, 2
    while worst(hi_)[0] <= 1:
        lo_, hi_ = hi_, hi_ * 2
        if hi_ > N_C_CAP:
            return {"N_c": None, "binding": None}
    while hi_ - lo_ > 1:
        mid = (lo_ + hi_) // 2
        if worst(mid)[0] <= 1:
            lo_ = mid
        else:
            hi_ = mid
    return {"N_c": lo_, "binding": worst(lo_ + 1)[1]}


def answer_recompiled(an: Analysis, stated, proofs: ProofCache, timeout_s: float,
                      say=None) -> tuple[dict, list[ClaimRun]]:
    """A model compiled for max_seq_len N (hypothetical): key_size(N), λ(N) = c/√key_size(N), and
    the largest N_c at which the nominal coldness keeps every claim on [1, N] (``stated``,
    :func:`search_recompiled`: proved at N_c, refuted at N_c + 1); or the count decoders'
    claims for each N the hard decoder gets right."""
    where = "search.recompiled"
    out: dict = {"key_size_rule": an.key_size_text, "decoders": an.decoders}
    fn = an.key_size_fn
    if fn is None or an.bound_ext is None:
        _none(stated, where)
        out.update(status="unknown", reason=an.key_size_text if fn is None else an.ext_reason)
        return out, []
    c = an.coldness
    worst = _worst(an)
    rows = []
    for N in sorted({an.n_table, 16, 32, 64, 128, 256, 1024}):
        w = worst(N)[0]
        rows.append({"N": N, "key_size": fn(N), "inv_tau": float(c) / math.sqrt(fn(N)),
                     "worst_ratio_to_tolerance": float(w), "within": bool(w <= 1)})
    out["table"] = rows
    out["table_note"] = ("numeric (mpmath) values of the bound at n = N over its tolerance; the certified boundary "
                         "is N_c below")
    if not _grows(an):
        _none(stated, where)
        out.update(key_size_constant=fn(an.n_table))
        rc = _recompiled_decoder(an)
        if rc is None:
            out.update(status="same-temperature",
                       note="key_size does not grow with max_seq_len: the compiled temperature is the same, so the "
                            "length answer is that of 'longer inputs'")
            return out, []
        Nh, tols, fail = rc
        l_lo, _ = sqrt_ratio_enclosure(c, fn(Nh))
        runs = _decoder_runs(an, tols, l_lo)
        run_claims(runs, proofs, timeout_s, say)
        out.update(status="proved" if _all(runs, "proved") else "unknown", N_c=Nh, key_size_at_N_c=fn(Nh),
                   inv_tau_at_N_c=fs(l_lo), inv_tau_at_N_c_decimal=fd(l_lo), binding="hard count decoder",
                   claims=[r.spec.id for r in runs], tolerances_at_N_c={k: fs(v) for k, v in tols[Nh].items()},
                   hard_failure_next=fail, hard_model_exact_up_to=Nh,
                   note=("key_size does not grow with max_seq_len, so the temperature stays the compiled one; the count "
                         f"decoder (Tracr's rule, slope {an.decoders[next(iter(an.decoders))]['slope']}) decodes every "
                         f"count correctly only up to max_seq_len {Nh}: for every N <= {Nh} the claims hold on [1, N] "
                         f"with the decoder's margins at N, and at N = {Nh + 1} the hard model itself decodes count "
                         f"{fail['count']} as "
                         f"{fail['decoded']} (exact evaluation of the rule)"))
        return out, runs
    st = _fields(stated, where, ("N_c", "binding"))
    if st["N_c"] is None:
        _none(st["binding"], f"{where}.binding")
        out.update(status="unknown", reason=f"within tolerance beyond N = {N_C_CAP}")
        return out, []
    Nc = _length(st["N_c"], f"{where}.N_c")
    node = _node(st["binding"], [nd for nd, _, _ in claim_exprs(an.bound_ext, an.epsilon)], f"{where}.binding")
    _, l_hi = sqrt_ratio_enclosure(c, fn(Nc + 1))
    ref = make_claims(an.bound_ext, an.epsilon, l_hi, Nc + 1, Nc + 1, "recompiled-next", "hypothetical", "rn",
                      only=node, tol_override=an.tolerance_at(Nc + 1))
    if Nc == 0:
        run_claims(ref, proofs, timeout_s, say)
        out.update(status="refuted" if _all(ref, "refuted") else "unknown", N_c=0, binding=node, claims=[],
                   claims_next=[r.spec.id for r in ref])
        return out, ref
    l_lo, _ = sqrt_ratio_enclosure(c, fn(Nc))
    runs = make_claims(an.bound_ext, an.epsilon, l_lo, 1, Nc, "recompiled", "hypothetical", "r",
                       tol_override=an.tolerance_at(Nc))
    run_claims(runs, proofs, timeout_s, say)
    if an.fraction_rule is not None:
        out.update(tolerance_rule=an.fraction_rule,
                   tolerance_at_N_c={k: fs(v) for k, v in an.tolerance_at(Nc).items()})
    run_claims(ref, proofs, timeout_s, say)
    ok = _all(runs, "proved") and _all(ref, "refuted")
    out.update(status="proved" if ok else "unknown", N_c=Nc, key_size_at_N_c=fn(Nc), inv_tau_at_N_c=fs(l_lo),
               inv_tau_at_N_c_decimal=fd(l_lo), inv_tau_next_upper=fs(l_hi), binding=node,
               claims=[r.spec.id for r in runs], claims_next=[r.spec.id for r in ref],
               monotone=("the bound is decreasing in 1/tau and 1/tau(N) = c/sqrt(key_size(N)) is decreasing in N, so "
                         "the proof at N_c covers every N <= N_c"))
    hard_cap = min((d["max_count_decoded"] for d in an.decoders.values()), default=None)
    if hard_cap is not None:
        out["hard_model_exact_up_to"] = hard_cap
    return out, runs + ref


# --------------------------------------------------------------------------------------------
# all four


def search_values(an: Analysis, n_target: int) -> dict:
    """The stated values of the answers that rest on a search (certify only; module docstring)."""
    return {"min_inv_tau": search_min_inv_tau(an, n_target), "longer_inputs": search_longer(an),
            "recompiled": search_recompiled(an)}


def answers(an: Analysis, n_target: int, stated: dict, proofs: ProofCache, timeout_s: float,
            say=None) -> tuple[dict, list[ClaimRun]]:
    """The four answers with their claims, the stated values proved (module docstring).
    Deterministic in its arguments; raises :class:`CertificateError` (with the path under
    ``search``) for a stated value of the wrong shape."""
    a1, r1 = answer_compiled(an, proofs, timeout_s, say)
    a2, r2 = answer_min_inv_tau(an, n_target, stated["min_inv_tau"], proofs, timeout_s, say)
    a3, r3 = answer_longer(an, stated["longer_inputs"], proofs, timeout_s, say)
    a4, r4 = answer_recompiled(an, stated["recompiled"], proofs, timeout_s, say)
    return {"compiled": a1, "min_inv_tau": a2, "longer_inputs": a3, "recompiled": a4}, r1 + r2 + r3 + r4
