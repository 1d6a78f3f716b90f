"""tracr_gaps.unique_rows equals np.unique(axis=0, return_inverse=True), and _state_table lists the
states, each row's state and the counts (ISSUE 16)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from softhard.constructions.tracr_gaps import _rows_to_states, _state_table, unique_rows


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


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 30).flatmap(lambda r: st.integers(1, 4).flatmap(
    lambda c: arrays(np.int64, (r, c), elements=st.integers(-3, 3)))), st.integers(1, 6), st.booleans())
def test_state_table_is_the_states_their_rows_and_counts(a, den, as_object):
    """_state_table: per row its state's index, the states as exact fractions (integer numerators:
    in lexicographic order; Python integers: in order of first occurrence, as _rows_to_states) and
    the rows per state — against a plain-Python count."""
    num = a.astype(object) if as_object else a
    ids, states, counts = _state_table(num, den)
    rows = [tuple(int(v) for v in r) for r in a]
    order = list(dict.fromkeys(rows)) if as_object else sorted(set(rows))
    assert states == [tuple(Fraction(v, den) for v in r) for r in order]
    assert [int(i) for i in ids] == [order.index(r) for r in rows]
    assert counts == [rows.count(r) for r in order]
    assert list(_rows_to_states(num, den)) == states  # the order the states were listed in before
