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

import math
from fractions import Fraction

from ..constructions.hard_model import HardModel
from ..constructions.tracr_gaps import HeadStats, MLPStats
from .tracr import Discretisation, LogitTable, fs


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


def key_size_rule(modules: list, blocks_pos: set[str], key_size: int, n_ref: int):
    """Tracr's key_size as a function of max_seq_len N: the max over heads of the sizes of their
    query, key, value and output label lists, where a positional block (``indices``) has N labels.
    Returns ``(fn, text)`` with ``fn(N) -> int``, or ``(None, reason)`` when the module
    descriptions are missing or do not reproduce ``key_size`` at ``n_ref``."""
    heads = [h for mo in modules if isinstance(mo, dict) and mo.get("type") == "attn" for h in mo.get("heads", [])]
    if not heads:
        return None, "the export has no module descriptions (modules[].heads[].query_labels ...)"
    sizes = []
    for h in heads:
        for k in ("query_labels", "key_labels", "value_labels", "output_labels"):
            labs = h.get(k) or []
            npos = sum(1 for lab in labs if str(lab).split(":", 1)[0] in blocks_pos)
            sizes.append((len(labs) - npos, 1 if npos else 0))

    def fn(N: int) -> int:
        return max(c + p * N for c, p in sizes)

    if fn(n_ref) != key_size:
        return None, f"the label counts give key_size {fn(n_ref)}, not config.key_size = {key_size}"
    c1 = max((c for c, p in sizes if p), default=None)
    c0 = max((c for c, p in sizes if not p), default=0)
    if c1 is None:
        txt = f"key_size(N) = {key_size} for every N (no head reads a positional block)"
    elif c1 + 1 >= c0:
        txt = f"key_size(N) = N + {c1} (a head reads the positional block: its label count grows with N)"
    else:
        txt = f"key_size(N) = max(N + {c1}, {c0})"
    return fn, txt


def discretising_rule(disc: Discretisation, values: list[Fraction]) -> dict | None:
    """Recognise Tracr's numerical-to-categorical MLP: every unit reads z with the same slope L, and
    its kinks (``z − P_u/L`` at each hard context) come in pairs ``(μ − 1/L, μ)`` with ``μ`` the
    midpoint of two consecutive values of ``values`` (the sop's value set as z).  Returns
    ``{"slope": L, "max_kink_error": …, "kinks": …}`` when every midpoint has its pair (within
    float32 rounding of the compiled biases, 10⁻⁵), else None."""
    al = {a for _, a in disc.units}
    if len(al) != 1 or len(disc.direction) != 1 or not disc.contexts:
        return None
    L = next(iter(al)) * next(iter(disc.direction.values()))
    if L <= 0:
        return None
    ks = set()
    for c in disc.contexts:
        for u, a in disc.units:
            ks.add(c["z"] - c["pre"][u] / a)
    ks = sorted(ks)
    if len(ks) != len(disc.units):
        return None  # the kinks move with the context: not a fixed discretisation of z
    zs = sorted(set(values))
    mids = [(a + b) / 2 for a, b in zip(zs, zs[1:])]
    want = sorted(mids + [mu - 1 / L for mu in mids])
    if len(want) != len(ks):
        return None
    err = max(abs(k - w) for k, w in zip(ks, want))
    if err > Fraction(1, 10**5):
        return None
    return {"slope": L, "max_kink_error": err, "kinks": ks}


def selector_width_decoder(L: Fraction, N: int, a_min: int = 2) -> dict:
    """The hard behaviour of a SelectorWidth count decoder compiled for max_seq_len N with ramp slope
    L (Tracr's rule, checked against the given weights by :func:`discretising_rule`): the attention
    output ``z = 1/(w+1)`` for count w; step ``T_k(z) = clamp(L(z − μ_k) + 1, 0, 1)`` at the
    midpoint ``μ_k`` of ``1/(k+1)`` and ``1/(k+2)``; class scores ``o_0 = T_0``, ``o_k = T_k −
    T_{k−1}``, ``o_N = 1 − T_{N−1}``.  Exact.  Returns per count w ≥ a_min − 1: the decoded class,
    whether it is one-hot, its categorical margin, the distance r to the nearest kink and the slope
    there; plus ``correct_up_to`` (largest w with every count ≤ w decoded right) and the closed
    form of the condition (``w(w+1) < L``: the ramp between 1/(w+1) and 1/w is narrower than their
    distance)."""
    zs = [Fraction(1, w + 1) for w in range(N + 1)]
    mu = [(zs[k] + zs[k + 1]) / 2 for k in range(N)]
    kinks = sorted(set(mu + [x - 1 / L for x in mu]))

    def T(k, z):
        return min(Fraction(1), max(Fraction(0), L * (z - mu[k]) + 1))

    rows = []
    correct_up_to = None
    ok = True
    for w in range(max(a_min - 1, 0), N + 1):
        z = zs[w]
        o = [T(0, z)] + [T(k, z) - T(k - 1, z) for k in range(1, N)] + [1 - T(N - 1, z)] if N >= 1 else [Fraction(1)]
        top = max(range(len(o)), key=lambda k: o[k])
        srt = sorted(o)
        margin = (srt[-1] - srt[-2]) / 2 if len(o) > 1 else Fraction(1, 2)
        r = min(abs(z - k) for k in kinks) if kinks else None
        inside = any(mu[k] - 1 / L < z < mu[k] for k in range(N))
        rows.append({"count": w, "z": z, "decoded": top, "one_hot": all(v in (0, 1) for v in o), "outputs": o,
                     "margin": margin, "r": r, "slope": L if inside else Fraction(0)})
        ok = ok and top == w and srt[-1] > srt[-2]
        if ok:
            correct_up_to = w
    return {"N": N, "slope": L, "rows": rows, "correct_up_to": correct_up_to,
            "all_correct": correct_up_to == N,
            "condition": "count w is decoded correctly iff w(w+1) < L (the ramp of width 1/L between 1/(w+1) and "
                         "1/w fits into their distance 1/(w(w+1))); one-hot iff 2w(w+1) <= L"}


def max_sw_count(L: Fraction) -> int:
    """Largest w with ``w(w+1) < L`` (every count up to it is decoded correctly)."""
    w = int(math.isqrt(int(L))) + 2
    while w > 0 and w * (w + 1) >= L:
        w -= 1
    return w
