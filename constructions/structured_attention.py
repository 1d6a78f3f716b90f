"""The structured attention path: exact ``O(n)`` evaluation of heads whose scores have the form
``s_ij = a(j) + q(i)·g(j)`` with ``g`` taking a few values ("groups") and ``a`` strictly
increasing, within each group, towards the query (THEORY §4 selections have this shape; ISSUE 7).

Within a group the best visible key is the last one, and the soft weight of the others relative
to it, ``E_t = Σ_{s<t} exp((a_s − a_t)/τ)`` (and the value-weighted ``F_t``), obey the
first-order recurrence ``E_t = c_t (E_{t−1} + 1)`` with ``c_t = exp(−(a_t − a_{t−1})/τ) ≤ 1``.
:func:`affine_scan` evaluates it in O(n) work (sequential inside fixed-size blocks, vectorised
across blocks, carries by recursion on the block ends), entirely in the *relative* frame: every
stored number is a sum of weights relative to the latest member, so it lies in ``[0, n]`` and no
exponent is ever formed from an absolute score.  Exponents come from differences of neighbouring
members, whose rounding errors telescope: the computed weight of a term at relative exponent
``x`` is off by ``≤ 2u·x + O(L·u)`` relatively (``L`` = factors in its chain), never
``n·u·|a|/τ`` as with a plain ``logaddexp.accumulate`` of ``a/τ``.  :func:`detect_structure`
detects the structure from the actual residual stream and weights; the engine falls back to the
dense path when it does not hold.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .head_kernel import applies as fused_applies
from .head_kernel import fused_eval
from .residual import Columns, nonzero_rows
from .scan_kernel import available as scan_available
from .scan_kernel import group_scan
from .softmax import EXP_FLUSH, exp_flush
from .transformer import Head

@dataclass
class _Struct:
    """A structured head on one batch (see :func:`detect_structure`): ``a`` ``(B, N)`` or ``None``
    (≡ 0), ``code`` ``(B, N−1)`` group code of each real key (``None``: one group), ``groups`` a
    list of ``(code, offset)`` with offset ``q(i)·g`` a float or ``(B, N)`` array, ``bos``
    ``(B, N)`` the BOS score of every query."""

    a: np.ndarray | None
    code: np.ndarray | None
    groups: list
    bos: np.ndarray


def detect_structure(cols: Columns, head: Head, Q: np.ndarray, max_groups: int = 8,
                     max_levels: int = 4) -> _Struct | None:
    """Detect ``s_ij = a(j) + q(i)·g(j)`` on this batch; ``None`` if the scores do not have it.

    With ``w_c(i) = Σ_l Q_il W_K[c, l]`` the weight query ``i`` puts on residual coordinate ``c``,
    ``s_ij = Σ_c w_c(i)·x_jc``.  Coordinates the key reads are *discrete* (at most ``max_levels``
    distinct values over the real positions of the batch) or *continuous*; a continuous one must
    have a query-independent weight and goes into ``a(j)``; the discrete ones define the groups
    (at most ``max_groups``), each with score offset ``q(i)·g = Σ_c w_c(i)·value``.  Query row 0
    (BOS) is ignored: it attends to BOS only.
    """
    B, N = cols.B, cols.N
    if N < 2:
        return None
    k = Q.shape[0]
    Qr = Q[:, :, 1:]
    qconst: list[float | None] = []
    for l in range(k):
        v = Qr[l]
        v0 = v[0, 0]
        qconst.append(float(v0) if np.all(v == v0) else None)
    var = [l for l in range(k) if qconst[l] is None]
    WK = head.W_K
    disc, cont = [], []
    for c in nonzero_rows(WK):
        c = int(c)
        wk = WK[c]
        if all(wk[l] == 0 for l in var):
            w = 0.0
            for l in range(k):
                if wk[l] != 0:
                    w += qconst[l] * float(wk[l])
            if w == 0.0:
                continue
        else:
            w = None
            for l in range(k):
                if wk[l] != 0:
                    t = Q[l] * float(wk[l])
                    w = t if w is None else w + t
        lv = cols.levels(c, max_levels)
        if lv is None:
            if isinstance(w, np.ndarray):
                wr = w[:, 1:]
                if not np.all(wr == wr[0, 0]):
                    return None
                w = float(wr[0, 0])
            cont.append((c, w))
        else:
            disc.append((c, w, lv))
    code = None
    ncodes = 1
    for _, _, (vals, idx) in disc:
        if idx is not None:
            term = idx.astype(np.int32) * ncodes if ncodes > 1 else idx.astype(np.int32)
            code = term if code is None else code + term
        ncodes *= len(vals)
    if code is None:
        used = [0]
    else:
        if ncodes <= (1 << 20):
            used = np.flatnonzero(np.bincount(code.ravel(), minlength=ncodes))
        else:
            used = np.unique(code)
        if len(used) > max_groups:
            return None
    groups = []
    for u in used:
        rem = int(u)
        off = 0.0
        for _, w, (vals, idx) in disc:
            L = len(vals)
            val = float(vals[rem % L])
            rem //= L
            if val != 0.0:
                off = off + w * val
        groups.append((int(u), off))
    a = None
    for c, w in cont:
        x = cols.get(c)
        t = x.copy() if w == 1.0 else x * w
        if a is None:
            a = t
        else:
            a += t
    # BOS score of every query: Σ_l Q_il K_0l
    K0 = np.zeros((B, k))
    for r in nonzero_rows(WK):
        K0 += cols.get(int(r))[:, 0][:, None] * WK[r][None, :]
    bos = Q[0] * K0[:, 0][:, None]
    for l in range(1, k):
        bos = bos + Q[l] * K0[:, l][:, None]
    return _Struct(a=a, code=code, groups=groups, bos=bos)


def _to_blocks(x: np.ndarray, b: int, nb: int, fill: float, out: np.ndarray | None = None) -> np.ndarray:
    """``(b, nb)`` array whose column ``k`` is ``x[k·b:(k+1)·b]`` (padded with ``fill``); written
    into ``out`` (a ``(b, nb)`` array) when given."""
    m = len(x)
    if out is None:
        out = np.empty((b, nb))
    full = m // b
    if full:
        out[:, :full] = x[:full * b].reshape(full, b).T
    if full < nb:
        r = m - full * b
        out[:r, full] = x[full * b:]
        out[r:, full] = fill
    return out


#: :func:`affine_scan` forms the blocks' running products with one ``multiply.accumulate`` call up
#: to this many blocks (measured: 4x faster than the row loop at 79 blocks of 64, slower from ~150)
_ACCUMULATE_MAX_BLOCKS = 128


def affine_scan(alpha: np.ndarray, betas: list[np.ndarray]) -> list[np.ndarray]:
    """All ``z_t = alpha_t·z_{t−1} + beta_t`` (``z_{−1} = 0``) in O(m) work, for each ``beta``.

    ``alpha``: ``(m,)``; ``betas``: arrays ``(m,)`` sharing ``alpha``; returns one ``z`` per beta.
    Blocks of ``b`` consecutive elements are laid out as the columns of a ``(b, nb)`` array; the
    recurrence runs sequentially down the ``b`` rows, vectorised across the ``nb`` blocks (zero
    carry-in, plus each block's running product of ``alpha``); the block ends form the same
    recurrence, solved recursively, and every element then adds its block's carry-in times its
    running product.  Work ``O(m)`` per beta, ``O(b·log_b m)`` NumPy calls (all betas stacked into
    one ``(len(betas), b, nb)`` array: one call per row for all of them, each element's operations
    and their order as for one beta alone).  With
    ``0 ≤ alpha ≤ 1`` and ``beta ≥ 0`` every intermediate is a sum of non-negative terms with
    coefficients ≤ 1 (nothing overflows), and the coefficient of ``beta_s`` in ``z_t`` is formed
    with one multiplication per factor ``alpha_{s+1} … alpha_t`` plus at most two roundings per
    recursion level.
    """
    m = len(alpha)
    if m <= 48:
        al = alpha.tolist()
        outs = []
        for beta in betas:
            bl = beta.tolist()
            z = 0.0
            for t in range(m):
                z = al[t] * z + bl[t]
                bl[t] = z
            outs.append(np.array(bl, dtype=np.float64))
        return outs
    b = 64 if m >= 4096 else max(8, int(np.sqrt(m)))
    nb = -(-m // b)
    k = len(betas)
    A = _to_blocks(alpha, b, nb, 0.0)
    Y = np.empty((k, b, nb))
    for j, beta in enumerate(betas):
        if beta is alpha:  # (E's beta is alpha)
            Y[j] = A
        else:
            _to_blocks(beta, b, nb, 0.0, out=Y[j])
    tmp = np.empty((k, nb))
    # down the rows: y_p += alpha_p·y_{p−1} (one product, one sum), the rows of every beta at once
    # (Yr[p] = Y[:, p], a (k, nb) view); the rows come as views by iteration, not by indexing
    # (ISSUE 16: per-call overhead)
    Yr = Y.transpose(1, 0, 2)
    if nb <= _ACCUMULATE_MAX_BLOCKS:
        for a, y0, y1 in zip(A[1:], Yr[:-1], Yr[1:]):
            np.multiply(a, y0, out=tmp)
            np.add(y1, tmp, out=y1)
        # each block's running product alpha_0·alpha_1···alpha_p in one call: accumulate forms
        # P_p = P_{p−1}·alpha_p row after row, the product (commutative in IEEE arithmetic) the
        # loop below forms as alpha_p *= P_{p−1} — the same numbers, a third fewer calls
        np.multiply.accumulate(A, axis=0, out=A)
    else:  # many blocks: accumulate walks each column with a stride, slower than the row loop
        for a0, a, y0, y1 in zip(A[:-1], A[1:], Yr[:-1], Yr[1:]):
            np.multiply(a, y0, out=tmp)
            np.add(y1, tmp, out=y1)
            a *= a0
    zbs = affine_scan(A[b - 1].copy(), [Y[j, b - 1].copy() for j in range(k)])
    Z = np.empty((k, nb))
    for j, zb in enumerate(zbs):
        Z[j] = zb
    tmp2 = np.empty((k, b, nb - 1))
    np.multiply(A[None, :, 1:], Z[:, None, :-1], out=tmp2)
    Y[:, :, 1:] += tmp2
    A = Z = tmp = tmp2 = Yr = None  # freed before the copy below (a lower peak of fresh pages: ISSUE 16)
    out = np.ascontiguousarray(Y.transpose(0, 2, 1)).reshape(k, -1)
    return [out[j, :m] for j in range(k)]


def structured_eval(st: _Struct, V: np.ndarray, mask: str, rule: str, inv_tau, soft: bool):
    """Exact O(N·G·dv) evaluation of a structured head; ``None`` if ``a`` is not strictly
    increasing within a group in the mask's accumulation order (then use the dense path).

    Words of at least :data:`~softhard.constructions.head_kernel.MIN_POSITIONS` positions run on the
    fused compiled kernel (:func:`~softhard.constructions.head_kernel.fused_eval`) when numba is
    available; shorter ones (and ``SOFTHARD_NUMBA=0``) on the NumPy reference below."""
    if st.a is None and rule == "AHA":  # every member of a group ties (THEORY §4b average-hard heads)
        return _tied_eval(st, V, mask, inv_tau, soft)
    orders = [False, True] if mask == "none" else [mask in ("strict_future", "future")]
    # long words: the fused compiled pass (head_kernel.py), same results within the rounding allowance
    fused = fused_applies(st, rule, V.shape[2])
    for rev in orders:
        if fused:
            res = fused_eval(st, V, mask, rule, inv_tau, soft, rev)
        else:
            res = _structured_eval_order(st, V, mask, rule, inv_tau, soft, rev)
        if res is not None:
            return res
    return None


def _visible(P: np.ndarray, mask: str) -> np.ndarray:
    """From prefix sums ``P`` ``(B, N)`` (``P[:, t]`` = sum over real positions 1..t, ``P[:, 0]`` = 0)
    the sum over the positions each query row sees under ``mask`` (row 0, BOS, sees no real
    position).  Under ``past`` that is ``P`` itself (returned as is, not copied)."""
    if mask == "past":
        return P
    B, N = P.shape
    out = np.zeros_like(P)
    tot = P[:, -1:]
    if mask == "strict_past":
        out[:, 1:] = P[:, :-1]
    elif mask == "strict_future":
        out[:, 1:] = tot - P[:, 1:]
    elif mask == "future":
        out[:, 1:] = tot - P[:, :-1]
    else:  # none
        out[:, 1:] = tot
    return out


def _tied_eval(st: _Struct, V, mask, inv_tau, soft):
    """Exact O(N·G·dv) evaluation of an AHA head with ``a ≡ 0``: every group's members tie, so
    a group enters each row as one candidate with multiplicity ``c`` (its visible members, from
    prefix counts) and value sum ``Σ v`` (prefix sums): soft weight ``c·exp((s_g − s*)/τ)``, hard
    output the mean over the argmax candidates' members (BOS included when it ties)."""
    dv, B, N = V.shape
    code = st.code
    cands = []
    for u, off in st.groups:
        # prefix counts and value sums, accumulated in place (float64 holds the counts exactly);
        # one group (no code): every real position a member, the count at t is t
        mem = None if code is None else (code == u)
        P = np.zeros((B, N))
        if mem is None:
            P[:, 1:] = np.arange(1, N, dtype=np.float64)
        else:
            np.cumsum(mem, axis=1, out=P[:, 1:])
        cnt = _visible(P, mask)
        sums = []
        for l in range(dv):
            Pl = np.zeros((B, N))
            np.cumsum(V[l][:, 1:] if mem is None else np.where(mem, V[l][:, 1:], 0.0), axis=1, out=Pl[:, 1:])
            sums.append(_visible(Pl, mask))
        score = np.where(cnt > 0, np.broadcast_to(np.asarray(off, dtype=np.float64), (B, N)), -np.inf)
        cands.append((score, cnt, sums))
    bos = st.bos
    smax = bos.copy()
    for sc, _, _ in cands:
        np.maximum(smax, sc, out=smax)
    ties = (bos == smax).astype(np.int64)
    hard = np.zeros((dv, B, N))
    for l in range(dv):
        hard[l] = np.where(bos == smax, V[l][:, :1], 0.0)
    for sc, cnt, sums in cands:
        top = sc == smax
        ties += np.where(top, cnt, 0).astype(np.int64)
        for l in range(dv):
            hard[l] += np.where(top, sums[l], 0.0)
    hard /= ties[None]
    if not soft:
        return None, hard, None, ties
    wb = exp_flush((bos - smax) * inv_tau)
    rest = np.where(bos == smax, 0.0, wb)
    tot = wb.copy()
    num = np.zeros((dv, B, N))  # (a head without value columns, dv = 0, has an empty output)
    for l in range(dv):
        num[l] = wb * V[l][:, :1]
    # a candidate's score is its finite offset or −inf (no visible member); with every row maximum
    # finite, (−inf − smax)/τ is −inf already and the isfinite mask changes nothing (it does for a
    # stream with inf/NaN entries: then the masked form is kept)
    finite_max = bool(np.isfinite(smax).all())
    for sc, cnt, sums in cands:
        w = exp_flush((sc - smax) * inv_tau if finite_max else
                      np.where(np.isfinite(sc), (sc - smax) * inv_tau, -np.inf))
        cw = cnt * w
        tot += cw
        rest += np.where(sc == smax, 0.0, cw)
        for l in range(dv):
            num[l] += w * sums[l]
    return num / tot[None], hard, rest / tot, ties


def _structured_eval_order(st: _Struct, V, mask, rule, inv_tau, soft, rev):
    dv, B, N = V.shape
    M = N - 1

    def acc(arr):  # (B, N) → contiguous flat (B·M) in accumulation order (real positions only)
        return np.ascontiguousarray(arr[:, :0:-1] if rev else arr[:, 1:]).reshape(-1)

    a_acc = acc(st.a) if st.a is not None else None
    V_acc = [acc(V[l]) for l in range(dv)]
    code_acc = None if st.code is None else (st.code[:, ::-1] if rev else st.code)
    cands = []  # per group: score (B,N), [value (B,N)]*dv, members idx, li (B,N), member values, dif, brk
    for u, off in st.groups:
        # one group (no group code): every real position is a member, the members are
        # the flat positions themselves — the counts, gathers and row breaks below take their
        # closed forms (the same integers and the same float64 values, without the copies)
        full = code_acc is None
        if full:
            m = B * M
            idx = np.arange(m)
            cnt = np.arange(1, M + 1, dtype=np.int64)[None, :] + np.zeros((B, 1), dtype=np.int64)
        else:
            mem = code_acc == u
            cnt = np.cumsum(mem, axis=1, dtype=np.int64)
            idx = np.flatnonzero(mem)
            m = len(idx)
        if m == 0:
            continue
        if a_acc is None:
            am = np.zeros(m)
        else:
            am = a_acc if full else a_acc[idx]
        brk = None
        dif = None
        if m > 1:
            dif = am[1:] - am[:-1]
            ok = dif > 0
            if B > 1:
                if full:  # member k+1 starts a new batch row exactly when it is the row's first position
                    brk = np.zeros(m - 1, dtype=bool)
                    brk[M - 1::M] = True
                else:
                    row = idx // M
                    brk = row[1:] != row[:-1]
                ok |= brk
            if not ok.all():
                return None
        # li: index (into this group's members) of the last member each query sees; −1 if none
        li = np.empty((B, N), dtype=np.int64)
        if B > 1:
            start = np.zeros(B, dtype=np.int64)
            start[1:] = np.cumsum(cnt[:, -1])[:-1]
            cnt += (start - 1)[:, None]
        else:
            cnt -= 1
        li[:, 0] = -1
        if mask == "none":
            li[:, 1:] = cnt[:, -1:]
        elif not rev:
            if mask == "strict_past":
                li[:, 1] = -1
                li[:, 2:] = cnt[:, :M - 1]
            else:
                li[:, 1:] = cnt
        else:
            src = cnt[:, ::-1]
            if mask == "strict_future":
                li[:, N - 1] = -1
                li[:, 1:N - 1] = src[:, 1:N - 1]
            else:
                li[:, 1:] = src
        if B > 1:  # a row without visible members points into the previous row: mark it −1
            np.copyto(li, -1, where=li < start[:, None])
        invalid = li < 0
        has_invalid = bool(invalid.any())
        if has_invalid:
            np.maximum(li, 0, out=li)
        score = am[li]
        score += off
        if has_invalid:
            np.copyto(score, -np.inf, where=invalid)
        vm = [V_acc[l] if full else V_acc[l][idx] for l in range(dv)]
        vals = [x[li] for x in vm]
        cands.append((score, vals, idx, li, vm, dif, brk))
    # the loop's last temporaries and the accumulation-order copies are not read below: freed
    # here, they are not held through the soft pass (fewer fresh pages per head: ISSUE 16)
    cnt = mem = invalid = am = ok = row = a_acc = V_acc = code_acc = None
    bos_score = st.bos
    # (B, 1) views: every use below broadcasts them against (B, N) arrays (the values
    # np.broadcast_to would give, without its Python overhead)
    bos_vals = [V[l][:, :1] for l in range(dv)]
    scores = [c[0] for c in cands] + [bos_score]
    smax = bos_score.copy()
    for s in scores[:-1]:
        np.maximum(smax, s, out=smax)
    amax = [s == smax for s in scores]
    ties8 = np.zeros((B, N), dtype=np.uint8)  # at most max_groups + 1 candidates per row
    for x in amax:
        ties8 += x.view(np.uint8)
    allvals = [c[1] for c in cands] + [bos_vals]
    hard = np.empty((dv, B, N))
    if ties8.max() == 1:  # one candidate per row: copy its value (the masks come in long runs)
        for l in range(dv):
            hard[l] = bos_vals[l]
        for x, vs in zip(amax[:-1], allvals[:-1]):
            for l in range(dv):
                np.copyto(hard[l], vs[l], where=x)
    elif rule == "AHA":
        hard[...] = 0.0
        for x, vs in zip(amax, allvals):
            for l in range(dv):
                hard[l] += x * vs[l]
        hard /= ties8.astype(np.int64)[None]
    else:
        # unique hard attention with ties between candidates: the leftmost / rightmost position
        hard[...] = 0.0
        left = rule == "UHA-leftmost"
        pos = []
        for _, _, idx, li, _, _, _ in cands:
            t = idx[li] % M
            pos.append(N - 1 - t if rev else t + 1)
        pos.append(np.zeros((B, N), dtype=np.int64))
        none = N + 1 if left else -1
        pick = np.full((B, N), none, dtype=np.int64)
        for x, p in zip(amax, pos):
            (np.minimum if left else np.maximum)(pick, np.where(x, p, none), out=pick)
        for x, p, vs in zip(amax, pos, allvals):
            sel = x & (p == pick)
            for l in range(dv):
                hard[l] += sel * vs[l]
    if not soft:
        return None, hard, None, ties8.astype(np.int64)
    # soft: weights relative to the row maximum; candidates in the argmax set weigh exactly 1.
    # A candidate whose weight flushes to 0 on every row (EXP_FLUSH) contributes nothing, and
    # neither does its group's tail (every tail term weighs less than the group's best).
    rest = np.zeros((B, N))
    num = np.zeros((dv, B, N))
    w = np.empty((B, N))
    tmp = np.empty((B, N))
    for ci, (s, x, vs) in enumerate(zip(scores, amax, allvals)):
        np.subtract(s, smax, out=w)
        w *= inv_tau
        if not (w.max() >= EXP_FLUSH):
            continue
        exp_flush(w, out=w)  # candidates outside the mask have score −inf → weight 0
        if ci < len(cands):
            _, _, idx, li, vm, dif, brk = cands[ci]
            E, F = _group_tails(li, len(idx), vm, dif, brk, inv_tau)
            for l in range(dv):
                np.add(vs[l], F[l], out=tmp)  # the candidate's own value plus its group's tail
                tmp *= w
                num[l] += tmp
            np.logical_not(x, out=x)
            np.add(E, x, out=tmp)  # the tail always leaks; the candidate itself unless it is a max
        else:
            for l in range(dv):
                if np.any(vs[l][:, 0] != 0):
                    np.multiply(w, vs[l], out=tmp)
                    num[l] += tmp
            np.logical_not(x, out=x)
            tmp[...] = x
        tmp *= w
        rest += tmp
    tot = np.add(rest, ties8)
    num /= tot[None]
    rest /= tot
    return num, hard, rest, ties8.astype(np.int64)  # (int64 made here: not held through the soft pass)


def _group_tails(li: np.ndarray, m: int, vm: list, dif: np.ndarray | None, brk: np.ndarray | None,
                 inv_tau: float):
    """Per query, the weight of the group members before its best one, relative to the best:
    ``E = Σ_{s<t} exp((a_s − a_t)/τ)`` and ``F_l = Σ_{s<t} exp((a_s − a_t)/τ)·v_l(s)`` at ``t = li``.
    ``m``: the group's member count; ``vm``: one ``(m,)`` array per value column (none for a head
    without value columns: then only ``E``).

    Recurrence ``E_t = c_t·(E_{t−1} + 1)``, ``F_t = c_t·(F_{t−1} + v_{t−1})`` with
    ``c_t = exp(−(a_t − a_{t−1})/τ)`` (0 across a batch-row break), solved by :func:`affine_scan`.
    """
    alpha = np.zeros(m)
    if m > 1:
        t = np.multiply(dif, -inv_tau)
        exp_flush(t, out=alpha[1:])
        t = None  # not held through the scan
        if brk is not None:
            alpha[1:][brk] = 0.0
    if not alpha.any() and all(np.isfinite(v).all() and not np.signbit(v).any() for v in vm):
        # every factor flushed to +0 (a cold temperature: the members' score gaps over τ exceed
        # −EXP_FLUSH) and every value finite (+0·inf would be NaN) without a sign bit: then every β
        # is +0 and every product and sum of affine_scan is +0, so E and F are +0 exactly — the
        # scan's result without running it (most groups of a certify's short batches: ISSUE 16)
        zero = np.zeros(li.shape)
        return zero, [zero for _ in vm]
    return scan_tails(li, alpha, vm)


def scan_tails(li: np.ndarray, alpha: np.ndarray, vm: list):
    """The tails ``E``, ``F_l`` of :func:`_group_tails` at the queries' best members ``li`` by the
    scan over the group's factors ``alpha`` (``(m,)``, ``alpha[0]`` = 0) and value columns ``vm``:
    ``(E (li.shape), [F_l (li.shape)])``.  The compiled kernel for long words only: a group pools
    the members of a batch's words, and a certify's batches of short words (n <= 10^5) would
    otherwise load numba (~0.65 s) for scans it saves far less on (ISSUE 16: python -X importtime)."""
    m = alpha.shape[0]
    if scan_available(min(m, li.shape[1])):  # one compiled pass (scan_kernel.py); same roundings, fewer
        zs = group_scan(alpha, vm)
    else:
        betas = [alpha]
        for v in vm:
            bl = np.zeros(m)
            np.multiply(alpha[1:], v[:-1], out=bl[1:])
            betas.append(bl)
        zs = affine_scan(alpha, betas)
        betas = bl = None  # not held through the gathers below
    return zs[0][li], [z[li] for z in zs[1:]]
