"""constructions/dense_attention.py: a block of batch rows stays within its documented memory."""

from __future__ import annotations

import tracemalloc

import numpy as np

from softhard.constructions.dense_attention import BATCH_SCORES, dense_eval


def test_a_block_of_wide_short_rows_holds_no_more_than_the_bound():
    """Wide heads on short words (k = dv = 64, N = 1): the rows' copies of Q, K, V in a block are
    bounded like its scores (review13b F1: 2^16 scores per block let a block copy 2^16 rows, ~50 MiB
    here).  Peak traced memory besides the outputs: within a few blocks of 2^16 float64s."""
    rng = np.random.default_rng(5)
    k = dv = 64
    B, N = 8000, 1
    Q, K, V = rng.normal(size=(k, B, N)), rng.normal(size=(k, B, N)), rng.normal(size=(dv, B, N))
    tracemalloc.start()
    try:
        out = dense_eval(Q, K, V, "strict_past", "AHA", 2.0, True, None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    outputs = sum(a.nbytes for a in out if a is not None)
    assert peak - outputs <= 4 * BATCH_SCORES * 8, (peak - outputs) / 2**20
    # the values: row b alone gives the same bytes
    for b in (0, 4321, B - 1):
        one = dense_eval(Q[:, b:b + 1], K[:, b:b + 1], V[:, b:b + 1], "strict_past", "AHA", 2.0, True, None)
        for got, want in zip(out, one):
            assert np.ascontiguousarray(got[..., b:b + 1, :] if got.ndim == 3 else got[b:b + 1]).tobytes() \
                == np.ascontiguousarray(want).tobytes()
