"""Compiled (numba) kernel for the O(n) soft-selection scan of the structured path (ISSUE 16).

The structured path (:mod:`softhard.constructions.structured_attention`) needs, per group of keys,
the weights of the members before each query's best one, relative to it:
``E_t = c_t·(E_{t−1} + 1)`` and ``F_t = c_t·(F_{t−1} + v_{t−1})`` (``c_t ≤ 1``).  The NumPy
reference, :func:`~softhard.constructions.structured_attention.affine_scan`, solves this first-order
recurrence blockwise (O(m) work in O(b·log_b m) NumPy calls, several passes over memory);
:func:`group_scan` here runs it in one sequential pass, all value columns at once.

Rounding (re-checked for this order; THEORY §7, :func:`softhard.constructions.simulate.leak_rounding_allowance`):
the kernel forms ``β_t = c_t·v_{t−1}`` and ``z_t = c_t·z_{t−1} + β_t`` exactly as the reference's
innermost level does — one multiplication and one addition per member in a term's chain, no
contraction to FMA (numba's default, ``fastmath=False``) — and has no recursion levels, so every
coefficient carries at most the roundings the allowance's ``(10N + 64)u`` already grants the
blocked scan (one multiplication, one addition per factor, plus two per level).  The factors
``c_t`` themselves are computed by the caller with NumPy's ``exp`` and the flush to zero, as on the
reference path.  tests/constructions/test_scan_kernel.py compares both paths with an 80-bit
reference and with each other within that allowance.

Since the fused head kernel (:mod:`softhard.constructions.head_kernel`) evaluates whole heads on
words of at least ``MIN_MEMBERS`` positions, this scan serves the NumPy reference path at such
lengths only where the fused kernel does not apply (a rule or group code it does not take).
Used only for groups of at least :data:`MIN_MEMBERS` members (below that, importing numba and
loading the compiled kernel would cost more than it saves) and when numba imports; set
``SOFTHARD_NUMBA=0`` to use the NumPy path always.  Without numba the NumPy path runs, with one
note on stderr the first time a large scan would have used the kernel.
"""

from __future__ import annotations

import os
import sys

import numpy as np

#: smallest group (number of members, and word length: structured_attention passes
#: ``min(members, n + 1)``, a group pools the members of a batch's words) for which the kernel is used.  Importing numba and loading
#: the cached kernel costs ~0.5 s CPU once per process, the kernel saves ~15 ns per member per
#: call: only runs at n ≳ 2.6·10^5 (``softhard confirm`` at large n, confirm_1e6.py) use it, never
#: a certify's numeric confirmation (capped at n = 10^5)
MIN_MEMBERS = 1 << 18

_state: dict = {"tried": False, "numba": None, "kernel": None}


def load_numba():
    """The ``numba`` module, or None when it is missing or turned off (``SOFTHARD_NUMBA=0``); imported
    once per process, on the first large scan (one note on stderr when it is missing).  Shared by
    this module and :mod:`softhard.constructions.head_kernel`."""
    if _state["tried"]:
        return _state["numba"]
    _state["tried"] = True
    if os.environ.get("SOFTHARD_NUMBA", "1") == "0":
        return None
    try:
        import numba  # optional third-party: loaded on the first large scan only
    except ImportError:
        print("softhard: numba is not installed; the O(n) attention scan runs on the NumPy path "
              "(pip install numba for the compiled kernel)", file=sys.stderr)
        return None
    _state["numba"] = numba
    return numba


def _compile():
    """The jitted kernel, or None when numba is missing or turned off."""
    if _state["kernel"] is not None:
        return _state["kernel"]
    numba = load_numba()
    if numba is None:
        return None

    @numba.njit(cache=True, nogil=True, fastmath=False)
    def kernel(alpha, vals, out):  # pragma: no cover - compiled
        k, m = vals.shape
        e = 0.0
        for t in range(m):
            c = alpha[t]
            e = c * e + c
            out[0, t] = e
        for j in range(k):
            z = 0.0
            out[j + 1, 0] = 0.0
            for t in range(1, m):
                c = alpha[t]
                z = c * z + c * vals[j, t - 1]
                out[j + 1, t] = z

    _state["kernel"] = kernel
    return kernel


def available(m: int) -> bool:
    """Whether :func:`group_scan` will run compiled for a group of ``m`` members."""
    return m >= MIN_MEMBERS and _compile() is not None


def group_scan(alpha: np.ndarray, vals: list[np.ndarray]) -> list[np.ndarray]:
    """``[E, F_1, …, F_k]`` for one group: ``E_t = α_t(E_{t−1} + 1)``, ``F_t = α_t(F_{t−1} + v_{t−1})``
    (``E_{−1} = F_{−1} = 0``, ``α_0 = 0``), each ``(m,)`` float64.

    ``alpha``: ``(m,)`` factors in ``[0, 1]``; ``vals``: ``k`` arrays ``(m,)`` (the members'
    values).  Raises ``RuntimeError`` when the kernel is unavailable (call :func:`available`)."""
    kernel = _compile()
    if kernel is None:
        raise RuntimeError("the compiled scan is unavailable")
    m = len(alpha)
    v = np.empty((len(vals), m)) if vals else np.empty((0, m))
    for j, x in enumerate(vals):
        v[j] = x
    out = np.empty((len(vals) + 1, m))
    kernel(np.ascontiguousarray(alpha, dtype=np.float64), v, out)
    return list(out)
