"""The precision section of a formula certificate: where float formats stop separating positions,
the float64 rounding allowance of the leak at n_max, and the float64 premise — whether a float64
run of the construction at the certified tau is covered by the exact claims (THEORY §7; issue 15)."""

from __future__ import annotations

import math
from fractions import Fraction


from ..constructions.gap_report import U64, GapReport
from ..constructions.hard_model import HardModel
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
    if c.params.schedule is not None:  # THEORY §9: the run at n_max uses 1/τ(n_max) = S·g(n_max)
        inv_tau = Fraction(c.params.inv_tau_at(n_chk, inv_tau))
    worst = max((float(nb.value(n_chk, inv_tau, c.beta, c.eta)) for nb in c.bounds.values()), default=0.0)
    if all_n and c.params.schedule is None:
        worst = max([worst] + [float(c.params.substitute(c.bounds[v].bound.all_n, inv_tau=inv_tau))
                               for v in c.bounds if c.bounds[v].bound.all_n is not None])
    worst_json = worst if math.isfinite(worst) else None
    sep = fmts["float64"]["adjacent_positions_separable_up_to_n"]
    reasons = []
    allow = None
    if n_chk <= sep:  # (beyond it n_max may exceed every float: no scale is formed there)
        scale = 1 + float(beta) + 0.5 if c.regime == "T" else 2.0 * (n_chk + 1)  # Σ|q_c k_c| ≤ i + j
        allow = leak_rounding_allowance(scale, 2, float(inv_tau), n_chk + 1)
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


def model_float64_premise(hm: HardModel, rep: GapReport, inv_tau: Fraction) -> dict:
    """The float64 premise of a model certificate (issue 15), over **every analysed row** with a
    competitor — every query row of every word the gap analysis enumerated (or, searched, tried):

    * a score ``s_ij = scale·(x_i W_Q)·(x_j W_K)`` computed in float64 from the exact residual is
      within ``c·A_i`` of the exact one, ``A_i = scale·(|x_i||W_Q|)·max_j(|x_j||W_K|)`` and
      ``c = 1.01·(2d + k + 5)·2^-53`` (:func:`~softhard.constructions.gap_report.float64_rounding_constant`);
      a row whose exact gap (argmax to nearest competitor) is ``≤ 2c·A_i`` — separation
      ``gap_i/(2c·A_i) ≤ 1`` — may have its two scores rounded together (or swapped): the float64
      transformer may not pick the hard argmax there.  The gap analysis computes the separation of
      every row in the same enumeration (no second one; :class:`~softhard.constructions.gap_report.HeadGap`
      ``f64_*``), decided exactly near 1;
    * at the certified ``1/τ``: a head whose gap γ has ``γ/τ ≤ 2^-52`` is not separated by float64's
      ``exp`` at all (``exp(−γ/τ)`` rounds to 1).

    Exact rationals throughout.  Returns ``{"status": "holds" | "holds on the searched rows" |
    "fails" | "not checked", "reasons": [...], "rows_checked": k, "meaning"}``, naming each failing
    head with the worst row; re-derived by replay (models.assemble)."""
    meaning = ("whether float64 score arithmetic separates each head's argmax from its nearest competitor on every "
               "analysed row, and float64's exp separates the gap at the certified 1/tau (the claims themselves are "
               "about exact arithmetic)")
    if hm.has_layernorm:  # the residuals after a layer norm are not rationals: no exact scores to compare with
        return {"status": "not checked", "rows_checked": 0, "meaning": meaning,
                "reasons": ["the model has layer norms: its scores are known only as balls (exact_balls), so the "
                            "float64 rounding of its rows is not checked"]}
    reasons, checked = [], 0
    for hg in rep.heads.values():
        checked += hg.rows_unique + hg.rows_tied
        if hg.f64_fail and hg.f64_word is not None:
            reasons.append(f"head {hg.name}: {hg.f64_fail} analysed row(s) whose score gap is within twice the float64 "
                           f"rounding error of the scores, worst at {' '.join(hg.f64_word)!r} (row {hg.f64_row}: "
                           f"gap / (2 x rounding error) = {float(hg.f64_sep):.3g}): the float64 transformer may not "
                           "pick the hard argmax")
        if hg.gap and hg.gap * inv_tau <= 2 * U64:
            reasons.append(f"head {hg.name}: gap {float(hg.gap):.3g} times 1/tau = {float(inv_tau):.6g} is "
                           f"{float(hg.gap * inv_tau):.3g}, below what float64's exp separates (2^-52)")
    status = "fails" if reasons else ("holds" if rep.exhaustive else "holds on the searched rows")
    return {"status": status, "reasons": reasons, "rows_checked": int(checked), "meaning": meaning}
