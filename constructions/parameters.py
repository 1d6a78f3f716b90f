"""Exact parsing of numeric parameters (β, η, ε_LN, τ, ε, …) given by users, CLIs and files.

Shared by the constructions (:mod:`softhard.constructions.weights`,
:mod:`softhard.constructions.counting`) and the command line; it sits below both.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .errors import ParameterError


def to_fraction(x, what: str = "value") -> Fraction:
    """Parse ``x`` (int, Fraction, or a string like ``"1/4"``, ``"0.25"``, ``"1e-3"``) exactly.

    Floats are accepted only through their decimal string (``0.1`` means 1/10), never their binary
    value.  Raises :class:`ParameterError` for NaN, infinities and unparsable text, naming ``what``.
    """
    if isinstance(x, Fraction):
        return x
    if isinstance(x, bool):
        raise ParameterError(f"{what}: expected a number, got {x!r}")
    if isinstance(x, int):
        return Fraction(x)
    if isinstance(x, float):
        if not np.isfinite(x):
            raise ParameterError(f"{what} must be a finite number, got {x!r}")
        x = repr(x)
    if hasattr(x, "p") and hasattr(x, "q"):  # sympy Rational
        return Fraction(int(x.p), int(x.q))
    s = str(x).strip()
    try:
        v = Fraction(s)
    except (ValueError, ZeroDivisionError):
        raise ParameterError(f"{what}: {s!r} is not a finite number (use e.g. 1/4, 0.25 or 2e-3)") from None
    return v
