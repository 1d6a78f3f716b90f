"""tracr_gaps.unique_rows equals np.unique(axis=0, return_inverse=True) (ISSUE 16)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from softhard.constructions.tracr_gaps import unique_rows


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 40).flatmap(lambda r: st.integers(0, 5).flatmap(
    lambda c: arrays(np.int64, (r, c), elements=st.integers(-3, 3)))))
def test_equals_numpy_unique_axis0(a):
    u, inv = unique_rows(a)
    if a.shape[0] == 0:
        assert u.shape[0] == 0 and inv.shape == (0,)
        return
    u_np, inv_np = np.unique(a, axis=0, return_inverse=True)
    assert np.array_equal(u, u_np)
    assert np.array_equal(inv, inv_np.reshape(-1))
    assert np.array_equal(u[inv], a)  # every row maps back to itself
