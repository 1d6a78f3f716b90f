"""The dense attention path: scores ``Q Kᵀ`` for a block of batch rows × a chunk of queries at a
time against only the keys the mask can reach, memory besides the outputs ``O(max(chunk · n,
n · (2k + dv), 2^16))`` floats (a block's scores and its rows' copies of Q, K, V); the
result does not depend on ``chunk`` (nor on how many batch rows share a block).  It is the
reference the structured path (:mod:`softhard.constructions.structured_attention`) is tested
against, and the fallback of :func:`softhard.constructions.engine.run_head`.

Batching (ISSUE 16, dense13): every NumPy call works on a whole ``(G, chunk, keys)`` block of ``G``
batch rows, and computes each entry with the same floating-point operations, in the same order, as
a call on one row's ``(chunk, keys)`` block — elementwise operations entry by entry, the reductions
(row maximum, argmax-set sum, the leak's pairwise sum) along the same contiguous last axis of the
same length, and the matrix products as a stack of the same BLAS calls (same shapes, same strides
within each matrix) — so the outputs are bit-for-bit those of one row at a time
(``benchmarks/dense_identity.py`` compares them with the revision before).
"""

from __future__ import annotations

import numpy as np

from .errors import ParameterError
from .softmax import exp_flush

#: scores per dense block (batch rows × query rows × keys): about 2^20 (8 MiB of float64)
BLOCK_SCORES = 1 << 20


def _auto_chunk(N: int) -> int:
    """Query rows per dense chunk: about 2^20 score entries (8 MiB) per chunk."""
    return int(max(16, min(1024, BLOCK_SCORES // max(N, 1))))


#: scores per block of several batch rows: 2^16 (512 KiB of float64, cache-sized: a block of 2^19
#: scores made 16 rows × 200 positions 1.2× slower than one row at a time)
BATCH_SCORES = 1 << 16


def _block_rows(C: int, N: int, width: int) -> int:
    """Batch rows per block: as many as keep ``rows · N · max(min(C, N), width)`` within ``2^16``
    floats, at least 1 — both a block's scores (``min(C, N)·N`` per row) and its rows' copies of
    Q, K, V (``N·width`` per row, ``width = 2k + dv``) — so a block holds no more than one row's
    chunk and copies did (≤ ``max(2^16, N·max(min(C, N), width))`` of each) (review13b F1)."""
    return max(1, BATCH_SCORES // max(1, N * max(min(C, N), width)))


def _rows(A, b0: int, b1: int) -> np.ndarray:
    """``A`` ``(m, B, N)`` → the C-contiguous ``(b1 − b0, N, m)`` block of batch rows ``[b0, b1)``."""
    return np.ascontiguousarray(A[:, b0:b1, :].transpose(1, 2, 0))


def dense_eval(Q, K, V, mask, rule, inv_tau, soft, chunk):
    """Dense attention for one head.  ``Q``, ``K``: ``(k, B, N)``; ``V``: ``(dv, B, N)``.

    Per block of batch rows and chunk of query rows ``[c0, c1)``, only the keys the mask can reach
    are scored (past masks: ``j < c1``; future masks: BOS and ``j ≥ c0``), and the mask is applied
    elementwise only to the keys in ``[c0, c1]`` (everything else is visible to every row of the
    chunk).  A block holds at most ``max(min(chunk, N)·N, 2^16)`` scores and its rows' copies of Q,
    K, V at most ``max(N·(2k + dv), 2^16)`` floats (:func:`_block_rows`).
    Returns ``(soft (dv,B,N) | None, hard (dv,B,N), leak (B,N) | None, ties (B,N))``; raises
    :class:`ParameterError` for a chunk < 1.
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
    G = _block_rows(C, N, 2 * k + dv)
    for b0 in range(0, B, G):
        b1 = min(B, b0 + G)
        Qg, Kg, Vg = _rows(Q, b0, b1), _rows(K, b0, b1), _rows(V, b0, b1)  # (g, N, k), (g, N, k), (g, N, dv)
        for c0 in range(0, N, C):
            c1 = min(N, c0 + C)
            rows = np.arange(c0, c1)
            if past:
                hi = max(1, c1 - 1 if strict else c1)
                jpos = np.arange(hi)
                Kc, Vc = Kg[:, :hi], Vg[:, :hi]
            elif future:
                lo = c0 + 1 if strict else c0
                if lo <= 1:
                    jpos = np.arange(N)
                    Kc, Vc = Kg, Vg
                else:
                    jpos = np.concatenate([[0], np.arange(lo, N)])
                    Kc, Vc = np.take(Kg, jpos, axis=1), np.take(Vg, jpos, axis=1)  # C-contiguous, as Kb[jpos] was
            else:
                jpos = np.arange(N)
                Kc, Vc = Kg, Vg
            Qc = Qg[:, c0:c1]  # (g, c, k); Kc: (g, J, k); Vc: (g, J, dv)
            # sc: C-contiguous (g, c, J), as one row's (c, J) block was: the products below and
            # the row sums then see each row's block with the strides they saw before
            if k <= 2:
                sc = np.multiply(Qc[:, :, 0:1], Kc[:, None, :, 0], order="C")
                for l in range(1, k):
                    sc += Qc[:, :, l:l + 1] * Kc[:, None, :, l]
            else:
                sc = np.ascontiguousarray(Qc @ Kc.transpose(0, 2, 1))  # per row the 2-D Qc_b @ Kc_bᵀ
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
                    sub = sc[:, :, q0:q1]
                    np.copyto(sub, -np.inf, where=inval[None])
            if c0 == 0:
                sc[:, 0, 1:] = -np.inf  # the BOS query row attends to BOS only
            smax = sc.max(axis=2)
            amax = sc == smax[:, :, None]
            t = np.count_nonzero(amax, axis=2)  # (g, c)
            ties[b0:b1, c0:c1] = t
            if rule == "AHA":
                hard[:, b0:b1, c0:c1] = (np.einsum("bcn,bnk->kbc", amax, Vc) / t[None])
            else:
                # the first True of each row of the Boolean argmax set (argmax on bool stops at the
                # first True); rightmost differs only on tied rows, which are re-picked alone
                pick = np.argmax(amax, axis=2)
                if rule == "UHA-rightmost":
                    tied = np.nonzero(t > 1)
                    if tied[0].size:
                        pick[tied] = sc.shape[2] - 1 - np.argmax(amax[tied][:, ::-1], axis=1)
                hard[:, b0:b1, c0:c1] = np.take_along_axis(Vc, pick[:, :, None], axis=1).transpose(2, 0, 1)
            if soft:
                np.subtract(sc, smax[:, :, None], out=sc)
                np.multiply(sc, inv_tau, out=sc)
                exp_flush(sc, out=sc)  # masked: exp(-inf) = 0; argmax set: exp(0) = 1 exactly
                num = sc @ Vc  # (g, c, dv): per row the 2-D product sc_b @ Vc_b
                np.copyto(sc, 0.0, where=amax)
                rest = sc.sum(axis=2)
                tot = t + rest
                soft_o[:, b0:b1, c0:c1] = (num / tot[:, :, None]).transpose(2, 0, 1)
                leak[b0:b1, c0:c1] = rest / tot
    return soft_o, hard, leak, ties
