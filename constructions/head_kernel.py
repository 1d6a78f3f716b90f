"""Fused compiled (numba) kernel for a whole structured soft-selection head at large n (ISSUE 16).

The NumPy structured path (:func:`softhard.constructions.structured_attention._structured_eval_order`)
stays the reference; it makes ~40 passes over ``(B, N)`` arrays (candidate scores, row maximum,
argmax masks, tie counts, hard output, ``exp`` factors, the group scan, gathers at each query's best
member, the soft accumulation).  :func:`fused_eval` computes the same four results — soft output
``(dv, B, N)``, hard output ``(dv, B, N)``, leak ``(B, N)``, tie counts ``(B, N)`` — in one
sequential pass per batch row and value column (two for mask ``none``): it walks the real
positions in the accumulation order, keeps per group the state of its latest member (score ``a``,
value, position, and the relative tail weights ``E``, ``F`` of the members before it), and
evaluates each query when the members it sees have been taken in (before position ``i`` for the
strict masks, after it for the inclusive ones, after all for ``none``).  A selection head has one
value column; with more, the scores, ties and leak are recomputed per column (the same numbers).

Speed (numbers and commands: benchmarks/README.md, ISSUE 16 "third pass: kernel"): two choices
matter most — no helper calls inside the loop (numba passes arrays to a non-inlined call with
reference counts) and LLVM's loop vectoriser off for this kernel (every inner loop runs over the
few groups of a head; vectorised versions of such loops cost more than the loops).

Rounding (re-checked for this order; THEORY §7, :func:`softhard.constructions.simulate.leak_rounding_allowance`):

* the group tails follow the recurrence ``E_t = c_t·E_{t−1} + c_t``, ``F_t = c_t·F_{t−1} + c_t·v_{t−1}``
  with ``c_t = exp_flush((a_t − a_{t−1})·(−1/τ))`` — the same difference, product and flush as the
  reference, purely sequentially (no recursion levels): the coefficient of a member ``s`` in a
  query's tail is ``Π_{r=s+1..t} c_r`` formed with one ``exp`` (≤ 8u granted; libm's measured ≤ 0.506 ulp), one
  multiplication and one addition per factor, i.e. within the ``10u`` per factor of the allowance's
  ``(10N + 64)u`` (the reference's blocked scan spends up to two more roundings per level, also
  inside the ``64u``).  The exponent arguments are the reference's (differences of neighbouring
  members, telescoping: the ``4.02u·X`` term);
* every query then combines its ≤ ``max_groups + 1`` candidates in the reference's order (groups in
  ``st.groups`` order, then BOS): ``num += (v + F)·w``, ``rest += (E + [not argmax])·w``,
  ``tot = rest + ties``, ``soft = num/tot``, ``leak = rest/tot`` with ``w = exp_flush((s − s*)/τ)``
  — operation for operation the reference's, hence inside its constant ``64u`` (a candidate whose
  weight flushes to 0 is skipped: the reference adds 0);
* ``exp`` is the platform libm's (measured ≤ 0.506 ulp, THEORY §7; the allowance grants 8u);
* no contraction to FMA (numba's default ``fastmath=False``), no reassociation.

So the allowance bounds the kernel's error against the exact softmax exactly as it bounds the
reference's, and the two differ by at most twice the allowance (relative);
tests/constructions/test_head_kernel.py checks both against an 80-bit brute-force softmax and
against each other.  The hard output and tie counts involve no rounding beyond the scores'
(identical on both paths) and are equal.

Used for words of at least :data:`MIN_POSITIONS` positions (``N = n + 1``; importing numba and
loading the cached kernel costs ~0.5 s CPU once per process, so a certify's numeric confirmation,
capped at n = 10^5, never loads it) and when numba imports; ``SOFTHARD_NUMBA=0`` forces the NumPy
path.  ``cache=True``: numba writes its cache files under a temporary name and renames them into
place, so two xdist workers compiling at once each leave a complete file.
"""

from __future__ import annotations

import numpy as np

from .scan_kernel import MIN_MEMBERS, load_numba
from .softmax import EXP_FLUSH

#: smallest word (positions ``N = n + 1``, BOS included) for which :func:`fused_eval` is used
MIN_POSITIONS = MIN_MEMBERS

#: mask kinds as the kernel sees them
_MASK = {"strict_past": 0, "strict_future": 0, "past": 1, "future": 1, "none": 2}
#: hard-attention rules as the kernel sees them
_RULE = {"AHA": 0, "UHA-leftmost": 1, "UHA-rightmost": 2}
#: a group code larger than this is not mapped through a lookup table (NumPy path instead)
_MAX_CODE = 1 << 16

_state: dict = {"kernel": None}


#: the kernel's argument types (compiled eagerly, see :func:`_build`)
_SIGNATURE = ("b1(f8[:, ::1], i4[:, ::1], b1, i8[::1], f8[::1], i8[::1], f8[:, :, ::1], f8[:, ::1], f8[:, ::1], "
              "i8, b1, i8, f8, b1, f8[:, ::1], f8[:, ::1], f8[:, ::1], i8[:, ::1])")


def _build(numba):
    """Compile (or load from numba's cache) the fused kernel, eagerly, with LLVM's loop vectoriser
    off: every inner loop runs over the few groups of a head, and vectorised versions of such loops
    (runtime trip counts, alias checks, AVX-512 spills) cost more than the loops themselves."""
    flush = EXP_FLUSH  # the only closure variable: a float pickles the same in every process, so
    # numba's cache key (which hashes closure cells) is stable — a closed-over jitted helper is not
    saved = numba.config.LOOP_VECTORIZE
    numba.config.LOOP_VECTORIZE = 0
    try:
        @numba.njit(_SIGNATURE, cache=True, nogil=True, fastmath=False)
        def fused(a, code, has_code, lut, offc, offi, offa, bos, V, mask, rev, rule, inv_tau, soft,
                  o_soft, o_hard, o_leak, o_ties):  # pragma: no cover - compiled
            # one value column V (B, N); one loop body (no helper calls: numba would pass ~20 arrays
            # per call with reference counts); the state of each group's latest member in small
            # per-group arrays: has, score a, value, position, tails E and F
            B, N = V.shape
            G = offc.shape[0]
            has = np.zeros(G, np.bool_)
            alast = np.zeros(G)
            E = np.zeros(G)
            F = np.zeros(G)
            vlast = np.zeros(G)
            plast = np.zeros(G, np.int64)
            s = np.empty(G)
            M = N - 1
            left = rule == 1
            step = -1 if rev else 1  # the accumulation order: positions p0, p0 + step, …
            p0 = N - 1 if rev else 1
            shift = step if mask == 0 else 0  # a strict mask takes the previous position in
            for b in range(B):
                for g in range(G):
                    has[g] = False
                v0 = V[b, 0]
                # iteration −1 evaluates query 0 (BOS only); every later one takes in at most one
                # member (tp, in the accumulation order), then evaluates at most one query (qp): a
                # strict mask takes the previous position in before query p, an inclusive one p
                # itself; mask none takes every member in (M iterations) before every query (M more)
                for it in range(-1, 2 * M if mask == 2 else M + 1):
                    if it < 0:
                        tp, qp = -1, 0
                    elif mask == 2:
                        tp = p0 + it * step if it < M else -1
                        qp = it - M + 1 if it >= M else -1
                    else:  # it = M: a strict mask's last member (no query sees it; the check of a's order)
                        qp = p0 + it * step if it < M else -1
                        tp = p0 + it * step - shift
                        if tp == 0 or tp == N:  # before the first or after the last position
                            tp = -1
                    if tp >= 0:
                        g = lut[code[b, tp - 1]] if has_code else 0
                        ap = a[b, tp]
                        if has[g]:
                            dif = ap - alast[g]
                            if not dif > 0.0:
                                return False
                            if soft:  # E_t = c_t·E_{t−1} + c_t, F_t = c_t·F_{t−1} + c_t·v_{t−1}
                                d = dif * -inv_tau
                                c = 0.0 if d < flush else np.exp(d)  # exp_flush
                                E[g] = c * E[g] + c
                                F[g] = c * F[g] + c * vlast[g]
                        else:
                            has[g] = True
                            E[g] = 0.0
                            F[g] = 0.0
                        alast[g] = ap
                        vlast[g] = V[b, tp]
                        plast[g] = tp
                    if qp < 0:
                        continue
                    i = qp
                    sb = bos[b, i]
                    smax = sb
                    for g in range(G):
                        if has[g]:
                            sg = alast[g] + (offc[g] if offi[g] < 0 else offa[offi[g], b, i])
                            s[g] = sg
                            if sg > smax:
                                smax = sg
                    # one pass over the groups in the reference's order: ties, hard output, soft sums
                    ties = 0
                    h = 0.0
                    pick = -1
                    pg = -1
                    num = 0.0
                    rest = 0.0
                    for g in range(G):
                        if not has[g]:
                            continue
                        top = s[g] == smax
                        if top:
                            ties += 1
                            if rule == 0:
                                h += vlast[g]
                            elif pick < 0 or (plast[g] < pick if left else plast[g] > pick):
                                pick = plast[g]
                                pg = g
                        if soft:
                            d = (s[g] - smax) * inv_tau  # exp_flush; exp(0) = 1 exactly
                            w = 0.0 if d < flush else (1.0 if d == 0.0 else np.exp(d))
                            if w != 0.0:
                                num += (vlast[g] + F[g]) * w
                                rest += (E[g] + (0.0 if top else 1.0)) * w
                    if sb == smax:  # BOS last (position 0: the leftmost)
                        ties += 1
                        if rule == 0:
                            h += v0
                        elif left or pick < 0:
                            pg = -1
                    o_ties[b, i] = ties
                    if rule == 0:  # AHA: the mean over the argmax candidates
                        o_hard[b, i] = h / ties
                    else:  # UHA: the leftmost / rightmost argmax position
                        o_hard[b, i] = v0 if pg < 0 else vlast[pg]
                    if not soft:
                        continue
                    d = (sb - smax) * inv_tau
                    w = 0.0 if d < flush else (1.0 if d == 0.0 else np.exp(d))
                    if w != 0.0:
                        num += w * v0
                        rest += (0.0 if sb == smax else 1.0) * w
                    tot = rest + ties
                    o_soft[b, i] = num / tot
                    o_leak[b, i] = rest / tot
            return True
    finally:
        numba.config.LOOP_VECTORIZE = saved
    return fused


def _kernel():
    """The jitted fused kernel, or None when numba is missing or turned off."""
    if _state["kernel"] is None:
        numba = load_numba()
        if numba is None:
            return None
        _state["kernel"] = _build(numba)
    return _state["kernel"]


def applies(st, rule: str, N: int) -> bool:
    """Whether :func:`fused_eval` takes this structured head: a word of ``N ≥ MIN_POSITIONS``
    positions, a score part ``a`` present (``a ≡ 0`` is :func:`_tied_eval`'s or has no strict
    order), group codes below ``2^16``, a known rule, and numba available."""
    if N < MIN_POSITIONS or st.a is None or rule not in _RULE:
        return False
    if st.code is not None and max(int(u) for u, _ in st.groups) >= _MAX_CODE:
        return False
    return _kernel() is not None


def fused_eval(st, V: np.ndarray, mask: str, rule: str, inv_tau, soft: bool, rev: bool):
    """``(soft | None, hard, leak | None, ties)`` of a structured head in one compiled pass per row;
    ``None`` when ``a`` is not strictly increasing within a group in the accumulation order.

    ``st``: the :class:`~softhard.constructions.structured_attention._Struct` of the batch (``a``
    ``(B, N)``, group codes ``(B, N−1)`` or None, groups ``[(code, offset)]`` with offsets floats or
    ``(B, N)`` arrays, BOS scores ``(B, N)``); ``V`` ``(dv, B, N)`` values; ``mask`` one of
    strict_past | past | strict_future | future | none; ``rule`` AHA | UHA-leftmost |
    UHA-rightmost; ``inv_tau`` 1/τ (unused unless ``soft``); ``rev``: accumulate from the last
    position towards the first (the future masks).  Results as the NumPy reference's: soft and hard
    ``(dv, B, N)`` float64, leak ``(B, N)`` float64, ties ``(B, N)`` int64.  Call only when
    :func:`applies`; raises ``RuntimeError`` if the kernel is unavailable.  Source: THEORY §4
    (structured selections), §7 (rounding; module docstring).
    """
    kernel = _kernel()
    if kernel is None:
        raise RuntimeError("the compiled head kernel is unavailable")
    dv, B, N = V.shape
    CW = ["C", "W"]  # the kernel's argument types: C order, writable (copies only when not already)
    V = np.require(V, dtype=np.float64, requirements=CW)
    a = np.require(st.a, dtype=np.float64, requirements=CW)
    bos = st.bos if st.bos.shape == (B, N) else np.broadcast_to(st.bos, (B, N))
    bos = np.require(bos, dtype=np.float64, requirements=CW)
    if st.code is None:
        code, has_code, lut = np.zeros((1, 1), dtype=np.int32), False, np.zeros(1, dtype=np.int64)
    else:
        code, has_code = np.require(st.code, dtype=np.int32, requirements=CW), True
        lut = np.full(max(int(u) for u, _ in st.groups) + 1, -1, dtype=np.int64)
        for gi, (u, _) in enumerate(st.groups):
            lut[int(u)] = gi
    G = len(st.groups)
    offc = np.zeros(G)
    offi = np.full(G, -1, dtype=np.int64)
    arrs = []
    for gi, (_, off) in enumerate(st.groups):
        if isinstance(off, np.ndarray) and off.ndim > 0:
            offi[gi] = len(arrs)
            arrs.append(np.broadcast_to(off, (B, N)))
        else:
            offc[gi] = float(off)
    offa = np.ascontiguousarray(np.stack(arrs), dtype=np.float64) if arrs else np.zeros((0, 1, 1))
    cols = max(dv, 1)  # no value column: one call on a zero column for the ties and the leak
    Vk = V if dv else np.zeros((1, B, N))
    hard = np.empty((cols, B, N))
    ties = np.empty((B, N), dtype=np.int64)
    out_soft = np.empty((cols, B, N)) if soft else np.empty((cols, 1, 1))
    leak = np.empty((B, N)) if soft else np.empty((1, 1))
    # one call per value column (dv is 1 for a selection head): the scores, ties and leak it
    # recomputes are the same numbers each time
    ok = True
    for l in range(cols):
        ok = ok and kernel(a, code, has_code, lut, offc, offi, offa, bos, Vk[l], _MASK[mask], bool(rev), _RULE[rule],
                           float(inv_tau) if soft else 1.0, bool(soft), out_soft[l], hard[l], leak, ties)
    if not ok:
        return None
    return (out_soft[:dv], hard[:dv], leak, ties) if soft else (None, hard[:dv], None, ties)
