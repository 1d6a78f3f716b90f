"""Tracr's compiler rules, as exact functions (docs/tracr.md "compiled at a larger max_seq_len"):

* **key_size** as a function of max_seq_len N — the widest head's label list, where a positional
  block (``indices``) has N labels: :func:`key_size_terms` reduces the export's module
  descriptions to the two numbers of ``key_size(N) = max(N + per_position, constant)``,
  :func:`key_size_from_terms` turns them into the function (checked at the compiled N);
* the **numerical-to-categorical MLP** (:func:`discretising_rule`): ramps of slope L ending at the
  midpoints of consecutive values, recognised on the given weights;
* the **SelectorWidth count decoder** at any max_seq_len (:func:`selector_width_decoder`,
  :func:`max_sw_count`): which counts Tracr's rule decodes correctly (``w(w+1) < L``).
"""

from __future__ import annotations

import math
from fractions import Fraction

from .tracr import Discretisation


def key_size_terms(modules: list, blocks_pos: set[str]) -> dict:
    """What Tracr's key_size rule needs from the export's module descriptions: per head and label
    list (query, key, value, output), ``c + p·N`` labels with ``p`` 1 when the list holds a
    positional block (``indices``, N labels at max_seq_len N).  Reduced to the two numbers that
    fix ``key_size(N) = max(N + per_position, constant)``: ``{"per_position": max c over lists
    with a positional block (None: no such list), "constant": max c over the others}``, or
    ``{"unavailable": reason}`` when the export has no module descriptions."""
    heads = [h for mo in modules if isinstance(mo, dict) and mo.get("type") == "attn" for h in mo.get("heads", [])]
    if not heads:
        return {"unavailable": "the export has no module descriptions (modules[].heads[].query_labels ...)"}
    sizes = []
    for h in heads:
        for k in ("query_labels", "key_labels", "value_labels", "output_labels"):
            labs = h.get(k) or []
            npos = sum(1 for lab in labs if str(lab).split(":", 1)[0] in blocks_pos)
            sizes.append((len(labs) - npos, 1 if npos else 0))
    return {"per_position": max((c for c, p in sizes if p), default=None),
            "constant": max((c for c, p in sizes if not p), default=0)}


def key_size_from_terms(terms: dict, key_size: int, n_ref: int):
    """``(fn, text)`` with ``fn(N) -> int`` Tracr's key_size at max_seq_len N from
    :func:`key_size_terms`, or ``(None, reason)`` when the terms are unavailable or do not
    reproduce ``key_size`` at ``n_ref``.  The text names both terms."""
    if "unavailable" in terms:
        return None, str(terms["unavailable"])
    c1, c0 = terms["per_position"], terms["constant"]
    if isinstance(c0, bool) or not isinstance(c0, int) or c0 < 0 or (
            c1 is not None and (isinstance(c1, bool) or not isinstance(c1, int) or c1 < 0)):
        return None, f"malformed key_size terms {terms}"

    def fn(N: int) -> int:
        return c0 if c1 is None else max(N + c1, c0)

    if fn(n_ref) != key_size:
        return None, f"the label counts give key_size {fn(n_ref)}, not config.key_size = {key_size}"
    if c1 is None:
        return fn, f"key_size(N) = {c0} for every N (no head reads a positional block)"
    if c1 + 1 >= c0:
        return fn, (f"key_size(N) = max(N + {c1}, {c0}) = N + {c1} (a head reads the positional block: its label "
                    "count grows with N)")
    return fn, f"key_size(N) = max(N + {c1}, {c0})"


def key_size_rule(modules: list, blocks_pos: set[str], key_size: int, n_ref: int):
    """Tracr's key_size as a function of max_seq_len N: the max over heads of the sizes of their
    query, key, value and output label lists, where a positional block (``indices``) has N labels.
    Returns ``(fn, text)`` with ``fn(N) -> int``, or ``(None, reason)`` when the module
    descriptions are missing or do not reproduce ``key_size`` at ``n_ref``."""
    return key_size_from_terms(key_size_terms(modules, blocks_pos), key_size, n_ref)


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

