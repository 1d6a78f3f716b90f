"""constructions.exact.matmul: the float64 (BLAS) path for small integer numerators gives exactly
the products of Python integers (ISSUE 16), on both sides of its 2^53 bound, and ``_maxabs``
is the largest magnitude (the int64 minimum included)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from softhard.constructions.exact import F64_EXACT, RArr, _maxabs, matmul


def _python_matmul(a: np.ndarray, b: np.ndarray) -> list:
    """(…, m, k) @ (k, p) or (…, m, k) @ (…, k, p) with Python integers, loop by loop."""
    a_l, b_l = a.tolist(), b.tolist()

    def mm(x, y):
        return [[sum(int(x[i][t]) * int(y[t][j]) for t in range(len(y))) for j in range(len(y[0]))]
                for i in range(len(x))]
    if a.ndim == 2:
        return mm(a_l, b_l)
    return [mm(x, y if b.ndim == 3 else b_l) for x, y in zip(a_l, b_l if b.ndim == 3 else [None] * len(a_l))]


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 4), st.integers(1, 5), st.integers(1, 6), st.integers(1, 4), st.booleans(),
       st.sampled_from([3, 1 << 20, 1 << 26, 1 << 31, 1 << 40]), st.integers(0, 2**32 - 1))
def test_matmul_is_exact(B, m, k, p, stacked, mag, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-mag, mag + 1, size=(B, m, k), dtype=np.int64)
    b = rng.integers(-mag, mag + 1, size=(B, k, p) if stacked else (k, p), dtype=np.int64)
    a.flat[0] = mag  # the bound attained: both paths (float64 below 2^53, int64 or object above) are hit
    got = matmul(RArr(a, 3), RArr(b, 5))
    assert got.den == 15
    assert [[[int(v) for v in row] for row in mat] for mat in got.num.tolist()] == _python_matmul(a, b)


def test_float_path_boundary():
    # the largest case the float64 path takes: every partial sum < 2^53 (checked), and one just above
    k = 4
    m = int((F64_EXACT // k) ** 0.5) - 1
    a = np.full((1, 1, k), m, dtype=np.int64)
    b = np.full((k, 1), m, dtype=np.int64)
    assert int(matmul(RArr(a, 1), RArr(b, 1)).num[0, 0, 0]) == k * m * m
    a[0, 0, 0] = m + 7  # above: the int64 path, still exact
    b[0, 0] = m + 5
    assert int(matmul(RArr(a, 1), RArr(b, 1)).num[0, 0, 0]) == (m + 7) * (m + 5) + (k - 1) * m * m
    odd = np.array([[[2**26 + 1] * 2]], dtype=np.int64)  # products need 53 bits: 2(2^26+1)^2 > 2^53
    assert int(matmul(RArr(odd, 1), RArr(odd.reshape(2, 1), 1)).num[0, 0, 0]) == 2 * (2**26 + 1) ** 2


def test_maxabs():
    assert _maxabs(np.array([3, -7, 5], dtype=np.int64)) == 7
    assert _maxabs(np.array([np.iinfo(np.int64).min, 1], dtype=np.int64)) == 2**63
    assert _maxabs(np.array([2**70, -(2**71)], dtype=object)) == 2**71
    assert _maxabs(np.zeros((0, 3), dtype=np.int64)) == 0
