"""The inputs of a formula certificate's replay (docs/certificates.md, "verify = replay"), without
SymPy or any stage (ISSUE 16): a verify that finds a recorded replay artefact
(:mod:`softhard.solver.replay_memo`) keys it by these, without importing the formula kind's module.
"""

from __future__ import annotations


def inputs(cert: dict) -> list:
    """Every field a formula replay (:func:`softhard.solver.certificate.replay`) and its measured
    checks (:func:`softhard.solver.certificate.check_measured`) read, JSON-able: the source, the
    regime, the exact parameters and 1/τ, the range, the searched rows (node, certified value and
    their measured ``rounds`` and ``empirical``), the tuned parameters, the measured numeric section
    and the schedule.  Raises :class:`KeyError`/:class:`TypeError` for a certificate without them
    (schema-checked before)."""
    srch = cert.get("search")
    rows = None if srch is None else [{k: r.get(k) for k in ("node", "inv_tau_certified", "rounds", "empirical")}
                                      for r in srch["per_bound"]]
    return [cert["source"], cert["construction"]["regime"], cert["construction"]["params"],
            cert["construction"]["inv_tau"], cert["range"], rows, (srch or {}).get("params"), cert.get("numeric"),
            cert["construction"].get("schedule")]
