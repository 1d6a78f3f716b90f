"""The values ``softhard certify``'s formula summary computes from a certificate with SymPy
(:func:`formula_extras`), apart from the printers (:mod:`.certificates`, which load no SymPy): a
certify from an artefact (:mod:`softhard.solver.certify_memo`) prints the recorded values."""

from __future__ import annotations

import mpmath
import sympy as sp

from ....bounds.derive import evaluate


def formula_extras(cert: dict) -> dict:
    """``{"bounds_at_n_max": bounds_at_n_max(cert)}``: what
    :func:`~.certificates.print_formula_certificate` needs besides the certificate (JSON-able)."""
    return {"bounds_at_n_max": bounds_at_n_max(cert)}


def bounds_at_n_max(cert: dict) -> dict[str, str]:
    """Per claim id, its bound (parameters substituted) evaluated at n_max, 8 digits, 3 when the
    exponent is long (``7.95e-1204121``: at most 14 characters, one table cell; display only)."""
    n_max = cert["range"]["n_max"]
    out = {}
    for cl in cert["claims"]:
        try:
            k = n_max if cl["n_hi"] is None else min(n_max, cl["n_hi"])
            with sp.evaluate(False):  # display only: the value, not SymPy's re-simplification of Max (ISSUE 16)
                e = sp.sympify(cl["expr_srepr"])
            v = evaluate(e, n_value=max(k, cl["n_lo"]), inv_tau=1)
            text = mpmath.nstr(v, 8)
            out[cl["id"]] = text if len(text) <= 14 else mpmath.nstr(v, 3)
        except (TypeError, ValueError, ZeroDivisionError, SyntaxError):
            out[cl["id"]] = "?"
    return out
