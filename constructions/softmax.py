"""Softmax weights in float64: ``exp`` with flush to zero, and the inverse-temperature check."""

from __future__ import annotations

import numpy as np

from .errors import ParameterError

#: arguments of exp below this are flushed to weight 0: SVML's exp takes a slow path (5-35 ns
#: instead of 1 ns per element) for results that are not normal numbers, and e^-705 < 2^-1016
#: is far below anything a leak comparison can resolve (see simulate.leak_rounding_allowance).
EXP_FLUSH = -705.0


def exp_flush(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``exp(x)`` for ``x ≤ 0`` with every ``x < EXP_FLUSH`` (including ``−inf``) mapped to 0.

    :param x: float array, any shape and layout (float64 in the engine).
    :param out: where to write (``x`` itself for in place); a new array of ``x``'s shape if None.
    :returns: ``out``.  The values are those of ``np.exp`` applied to ``max(x, EXP_FLUSH)`` held in
        ``out``, then zeroed where ``x < EXP_FLUSH`` — whichever path runs (tests/constructions/
        test_engine.py checks the no-flush path against that reference for several layouts)."""
    if out is None:
        out = np.empty_like(x)
    if x.size and x.min() >= EXP_FLUSH:  # nothing to flush (a NaN minimum takes the general path):
        # max(x, EXP_FLUSH) is x itself and no entry is zeroed — the same values in two passes
        # instead of five (ISSUE 16, lang12: most calls of a test's short batches).  exp runs on
        # ``out`` as the general path's does: NumPy picks its exp loop by the operand's layout, and
        # on a strided or reversed ``x`` another loop can round differently (1 ulp; review13 F8)
        if out is not x:
            np.copyto(out, x)
        with np.errstate(over="ignore"):
            np.exp(out, out=out)
        return out
    low = x < EXP_FLUSH
    np.maximum(x, EXP_FLUSH, out=out)
    with np.errstate(over="ignore"):  # positive arguments only occur where the caller zeroes them
        np.exp(out, out=out)
    if low.any():
        out *= ~low
    return out


def check_inv_tau(inv_tau) -> None:
    """Raise :class:`ParameterError` unless ``inv_tau`` is a finite positive number."""
    try:
        v = float(inv_tau)
    except (TypeError, ValueError):
        raise ParameterError(f"inverse temperature must be a number, got {inv_tau!r}") from None
    if not np.isfinite(v) or v <= 0:
        raise ParameterError(f"inverse temperature 1/tau must be finite and > 0 (tau > 0), got {inv_tau!r}")
