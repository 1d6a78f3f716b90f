"""The dense attention path: scores ``Q Kᵀ`` for a chunk of queries at a time against only the
keys the mask can reach, memory ``O(chunk · n)``; the result does not depend on ``chunk``.  It is
the reference the structured path (:mod:`softhard.constructions.structured_attention`) is
tested against, and the fallback of :func:`softhard.constructions.engine.run_head`.
"""

from __future__ import annotations

import numpy as np

from .errors import ParameterError
from .softmax import exp_flush


def _auto_chunk(N: int) -> int:
    """Query rows per dense chunk: about 2^20 score entries (8 MiB) per chunk."""
    return int(max(16, min(1024, (1 << 20) // max(N, 1))))


def dense_eval(Q, K, V, mask, rule, inv_tau, soft, chunk):
    """Dense attention for one head.  ``Q``, ``K``: ``(k, B, N)``; ``V``: ``(dv, B, N)``.

    Per batch row and chunk of query rows ``[c0, c1)``, only the keys the mask can reach are
    scored (past masks: ``j < c1``; future masks: BOS and ``j ≥ c0``), and the mask is applied
    elementwise only to the keys in ``[c0, c1]`` (everything else is visible to every row of the
    chunk).  Returns ``(soft (dv,B,N) | None, hard (dv,B,N), leak (B,N) | None, ties (B,N))``.
    """
    k, B, N = Q.shape
    dv = V.shape[0]
    C = int(chunk) if chunk else _auto_chunk(N)
    if C < 1:
        raise ParameterError(f"chunk must be a positive number of query rows, got {chunk!r}")
    hard = np.empty((dv, B, N))
    ties = np.empty((B, N), dtype=np.int64)
    soft_o = np.empty((dv, B, N)) if soft else None
    leak = np.empty((B, N)) if soft else None
    past = mask in ("strict_past", "past")
    future = mask in ("strict_future", "future")
    strict = mask in ("strict_past", "strict_future")
    for b in range(B):
        Qb = np.ascontiguousarray(Q[:, b, :].T)  # (N, k)
        Kb = np.ascontiguousarray(K[:, b, :].T)
        Vb = np.ascontiguousarray(V[:, b, :].T)  # (N, dv)
        for c0 in range(0, N, C):
            c1 = min(N, c0 + C)
            rows = np.arange(c0, c1)
            if past:
                hi = max(1, c1 - 1 if strict else c1)
                jpos = np.arange(hi)
                Kc, Vc = Kb[:hi], Vb[:hi]
            elif future:
                lo = c0 + 1 if strict else c0
                if lo <= 1:
                    jpos = np.arange(N)
                    Kc, Vc = Kb, Vb
                else:
                    jpos = np.concatenate([[0], np.arange(lo, N)])
                    Kc, Vc = Kb[jpos], Vb[jpos]
            else:
                jpos = np.arange(N)
                Kc, Vc = Kb, Vb
            Qc = Qb[c0:c1]
            if k <= 2:
                sc = Qc[:, 0:1] * Kc[:, 0][None, :]
                for l in range(1, k):
                    sc += Qc[:, l:l + 1] * Kc[:, l][None, :]
            else:
                sc = Qc @ Kc.T
            # mask: only keys with positions in [c0, c1] can be invisible to some row of the chunk
            if mask != "none":
                q0 = max(1, int(np.searchsorted(jpos, c0)))
                q1 = int(np.searchsorted(jpos, c1, side="right"))
                if q1 > q0:
                    jj = jpos[q0:q1][None, :]
                    ii = rows[:, None]
                    if mask == "strict_past":
                        inval = jj >= ii
                    elif mask == "past":
                        inval = jj > ii
                    elif mask == "strict_future":
                        inval = jj <= ii
                    else:
                        inval = jj < ii
                    sub = sc[:, q0:q1]
                    np.copyto(sub, -np.inf, where=inval)
            if c0 == 0:
                sc[0, 1:] = -np.inf  # the BOS query row attends to BOS only
            smax = sc.max(axis=1)
            amax = sc == smax[:, None]
            t = np.count_nonzero(amax, axis=1)
            ties[b, c0:c1] = t
            if rule == "AHA":
                hard[:, b, c0:c1] = (np.einsum("cn,nk->kc", amax, Vc) / t[None, :])
            else:
                # the first True of each row of the Boolean argmax set (argmax on bool stops at the
                # first True); rightmost differs only on tied rows, which are re-picked alone
                pick = np.argmax(amax, axis=1)
                if rule == "UHA-rightmost":
                    tied = np.flatnonzero(t > 1)
                    if tied.size:
                        pick[tied] = sc.shape[1] - 1 - np.argmax(amax[tied, ::-1], axis=1)
                hard[:, b, c0:c1] = Vc[pick].T
            if soft:
                np.subtract(sc, smax[:, None], out=sc)
                np.multiply(sc, inv_tau, out=sc)
                exp_flush(sc, out=sc)  # masked: exp(-inf) = 0; argmax set: exp(0) = 1 exactly
                num = sc @ Vc
                np.copyto(sc, 0.0, where=amax)
                rest = sc.sum(axis=1)
                tot = t + rest
                soft_o[:, b, c0:c1] = (num / tot[:, None]).T
                leak[b, c0:c1] = rest / tot
    return soft_o, hard, leak, ties
