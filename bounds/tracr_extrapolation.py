"""Extrapolating the bounds of compiled Tracr models beyond the analysed lengths (THEORY §3, §6).

The premises of :mod:`softhard.bounds.tracr` come from an exhaustive analysis of the lengths
``≤ N`` (:mod:`softhard.constructions.tracr_gaps`).  Here: which residual coordinates are
functions of a row's token alone (:func:`token_determined`), the hard contexts of an MLP fed by a
SelectorWidth head for every length (:func:`selector_width_contexts`), Tracr's ``key_size`` as a
function of ``max_seq_len`` (:func:`key_size_rule`), and the SelectorWidth count decoder a
recompilation for another ``max_seq_len`` would produce (:func:`discretising_rule`,
:func:`selector_width_decoder`, :func:`max_sw_count`).
"""

from __future__ import annotations

from fractions import Fraction

from ..constructions.hard_model import HardModel
from ..constructions.tracr_gaps import HeadStats, MLPStats
from .tracr import LogitTable, fs


def token_determined(hm: HardModel, positional: list[int]) -> set[int]:
    """Coordinates whose value at a non-BOS row is a function of that row's token alone: written
    by the token embedding (not by the positional table), or by MLPs reading only such
    coordinates, and never by an attention head."""
    pos = set(positional)
    td = {a for a in range(hm.d) if a not in pos}
    for hs, ms in zip(hm.heads, hm.mlps):
        for h in hs:
            VO = h.vo()
            for b in range(hm.d):
                if any(VO[a, b] != 0 for a in range(hm.d)):
                    td.discard(b)
        for m in ms:
            ins = {a for a in range(hm.d) if any(x != 0 for x in m.W1[a])}
            outs = {b for b in range(hm.d) if any(m.W2[u, b] != 0 for u in range(m.W2.shape[0])) or m.b2[b] != 0}
            if not ins <= td:
                td -= outs
    return td


def selector_width_contexts(hm: HardModel, m, st: HeadStats, t: LogitTable, mstats: MLPStats,
                            n_hi: int | None) -> tuple[dict, dict, Fraction | None, str] | None:
    """Hard contexts of MLP ``m`` for every length ≤ ``n_hi`` (None: every length) when its only
    error-carrying input is the output of a SelectorWidth-pattern head (BOS always in the argmax,
    value non-zero only at BOS): the head's hard output is ``v_BOS/a`` with ``a`` from ``a_min`` to
    ``n + 1``, and every other MLP input is token-determined (its values are those seen).

    Returns ``(contexts, z_of, z_floor, note)`` — for unbounded lengths the contexts of the
    ``a`` up to the first one below every kink (larger ``a`` only move away from the kinks, with
    the same slope: the returned ``z_floor`` is that value) — or None when the pattern does not
    apply.
    """
    h = next(x for x in hm.all_heads() if x.name == st.name)
    if t.pattern != "selector-width":
        return None
    VO = h.vo()
    written = [b for b in range(hm.d) if any(VO[a, b] != 0 for a in range(hm.d))]
    ins = [a for a in range(hm.d) if any(x != 0 for x in m.W1[a])]
    dirty = [a for a in ins if a in written]
    if len(written) != 1 or dirty != written:
        return None
    c = written[0]
    # the value written by each key state: only BOS may be non-zero
    vk = [sum((x * VO[a, c] for x, a in zip(k, st.k_coords)), Fraction(0)) for k in t.cols]
    if set(st.v_coords) - set(st.k_coords):
        return None
    if any(v != 0 for v in vk):
        return None
    vB = sum((x * VO[a, c] for x, a in zip(t.bos, st.k_coords)), Fraction(0))
    a_min = t.premise[1].a_min
    if a_min is None or vB <= 0:
        return None
    # clean parts of the MLP input seen in the data (rows' inputs minus the dirty coordinate)
    pos_c = mstats.in_coords.index(c)
    cleans = {tuple(v for k, v in enumerate(inp) if k != pos_c) for inp in mstats.inputs.values()}
    others = [a for k, a in enumerate(mstats.in_coords) if k != pos_c]
    # kinks in z for each clean part
    kinks = []
    for cl in cleans:
        for u in range(m.W1.shape[1]):
            al = m.W1[c, u]
            if al == 0:
                continue
            base = m.b1[u] + sum((x * m.W1[a, u] for x, a in zip(cl, others)), Fraction(0))
            kinks.append(-base / al)
    pos_k = [k for k in kinks if k > 0]
    if any(k <= 0 for k in kinks):
        return None  # a kink at or below 0: z = v_BOS/a approaches it as a grows (not extrapolated)
    # the dirty coordinate must hold exactly the head's output v_BOS/a (no other writer, no offset)
    for inp in mstats.inputs.values():
        q = inp[pos_c] / vB if vB else None
        if q is None or q <= 0 or (1 / q).denominator != 1 or 1 / q < a_min:
            return None
    zfloor = min(pos_k) if pos_k else None
    ctxs, z_of = {}, {}
    a = a_min
    limit = (n_hi + 1) if n_hi is not None else None
    while True:
        if limit is not None and a > limit:
            break
        z = vB / a
        for cl in cleans:
            P = tuple(m.b1[u] + z * m.W1[c, u] + sum((x * m.W1[q, u] for x, q in zip(cl, others)), Fraction(0))
                      for u in range(m.W1.shape[1]))
            ctxs.setdefault(P, [0, None])
            z_of[P] = z
        if limit is None and (zfloor is None or z < zfloor):
            break  # beyond here z only moves away from every (positive) kink, on the same linear piece
        a += 1
        if a > 10**6:
            return None
    note = (f"head {h.name} is a SelectorWidth head (BOS always in the argmax, value {fs(vB)} at BOS only): its hard "
            f"output is {fs(vB)}/a with a in [{a_min}, n+1]")
    return ctxs, z_of, zfloor, note
