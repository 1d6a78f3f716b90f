"""The precision section of a formula certificate: where float formats stop separating positions,
the float64 rounding allowance of the leak at n_max, and the float64 premise — whether a float64
run of the construction at the certified tau is covered by the exact claims (THEORY §7; issue 15)."""

from __future__ import annotations

import math
from fractions import Fraction

from ..constructions.simulate import leak_rounding_allowance
from .pipeline import Construction

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
    if c.kind != "formula" or c.regime not in ("T", "U"):
        return {"note": "no finite-precision analysis for this kind of construction"}
    beta = c.beta
    fmts = {}
    for name, m in FORMATS.items():
        limit = separable_up_to(c.regime, beta, m)
        rule = "n < ceil(8/9 * beta * 2^m)" if c.regime == "T" else "n <= 2^m (integer scores up to 2n exact)"
        fmts[name] = {"fraction_bits": m, "adjacent_positions_separable_up_to_n": limit, "rule": rule,
                      "covers_n_max": (not all_n) and n_max <= limit}
    n_chk = n_max
    worst = max((float(nb.value(n_chk, inv_tau, c.beta, c.eta)) for nb in c.bounds.values()), default=0.0)
    if all_n:
        worst = max([worst] + [float(c.params.substitute(c.bounds[v].bound.all_n, inv_tau=inv_tau))
                               for v in c.bounds if c.bounds[v].bound.all_n is not None])
    worst_json = worst if math.isfinite(worst) else None
    sep = fmts["float64"]["adjacent_positions_separable_up_to_n"]
    scale = 1 + float(beta) + 0.5 if c.regime == "T" else 2.0 * (n_chk + 1)  # Σ|q_c k_c| ≤ i + j
    reasons = []
    allow = leak_rounding_allowance(scale, 2, float(inv_tau), n_chk + 1) if n_chk <= sep else None
    if allow is not None and math.isfinite(allow) and worst_json is not None:
        within = worst * (1 + allow) <= float(c.eta)
        f64 = {"n": n_chk, "worst_bound": worst, "rounding_allowance_rel": allow,
               "worst_float64_leak": worst * (1 + allow), "within_eta": within}
        if not within:
            reasons.append(f"at n = {n_chk} and 1/tau = {float(inv_tau):.6g} the float64 rounding allowance of the "
                           f"leak (relative {allow:.3g}) lets a float64 run exceed eta")
    elif allow is not None:  # the allowance overflows: 1/tau times the scores is beyond float64's resolution
        f64 = {"n": n_chk, "worst_bound": worst_json, "rounding_allowance_rel": None, "worst_float64_leak": None,
               "within_eta": False, "note": "1/tau times the scores is beyond what float64 separates: the float64 "
                                            "rounding error of the leak is unbounded"}
        reasons.append(f"1/tau = {float(inv_tau):.6g} times scores up to {scale:.3g} is beyond what float64 "
                       "separates (the rounding error of the leak is unbounded)")
    else:  # no rounding allowance exists (it overflows from n ≈ 6e17): no float64 run represents the construction
        f64 = {"n": n_chk, "worst_bound": worst_json, "rounding_allowance_rel": None, "worst_float64_leak": None,
               "within_eta": False, "note": "float64 does not separate adjacent positions at n_max: no float64 "
                                            "run represents the construction there"}
        reasons.append(f"float64 separates adjacent positions only up to n = {sep}, below n_max = {n_chk}")
    if reasons:
        status = "fails"
    elif all_n:
        status = f"holds for n <= {sep}"
        reasons.append(f"the claims are for all n; float64 separates adjacent positions only up to n = {sep}")
    else:
        status = "holds"
    return {
        "formats": fmts,
        "float64_at_n_max": f64,
        "float64_premise": {"status": status, "reasons": reasons,
                            "meaning": "whether a float64 run of the construction at the certified tau is covered "
                                       "by the exact claims (the claims themselves are about exact arithmetic)"},
        "source": "THEORY §7; notebook 06_finite_precision (collision interval [8/9, 1]·β·2^m)",
    }


def separable_up_to(regime: str, beta: Fraction, m: int) -> int:
    """Largest length at which a float format with ``m`` fraction bits still gives adjacent
    positions distinct scores (see :func:`precision_section`)."""
    if regime == "T":
        return -(-(8 * beta.numerator * 2**m) // (9 * beta.denominator)) - 1  # n < ceil(8/9·β·2^m)
    return 2**m
