"""constructions/softmax.py: exp with flush to zero (both of its paths against the reference)."""

from __future__ import annotations

import numpy as np
import pytest

from softhard.constructions.softmax import exp_flush


def test_exp_flush():
    x = np.array([0.0, -1.0, -700.0, -705.0, -705.5, -1e6, -np.inf])
    got = exp_flush(x)
    np.testing.assert_array_equal(got[:4], np.exp(x[:4]))
    np.testing.assert_array_equal(got[4:], 0.0)


def _exp_flush_reference(x, out):
    """The general path, written out: max(x, −705) in ``out``, exp in place, zeros below −705."""
    np.maximum(x, -705.0, out=out)
    with np.errstate(over="ignore"):
        np.exp(out, out=out)
    out *= ~(x < -705.0)
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_exp_flush_no_flush_path_is_the_reference(dtype):
    """Inputs with nothing to flush take exp_flush's short path; its bytes equal the general path's
    for contiguous, reversed, strided and transposed inputs, in place and not, with −0.0, NaN
    (general path), an empty and a 0-d array (review13 F8: exp on a reversed view rounds otherwise)."""
    rng = np.random.default_rng(7)
    base = (-rng.random((64, 63)) * 700).astype(dtype)
    base[0, :3] = [-0.0, 0.0, -705.0]
    layouts = [lambda a: a, lambda a: a[::-1], lambda a: a[:, ::-1], lambda a: a[::2, ::3], lambda a: a.T,
               lambda a: a.ravel()[::-1], lambda a: a[5]]
    others = [np.array(-3.5, dtype), np.empty(0, dtype), np.where(base > -1, np.nan, base)]
    for v in [f(base) for f in layouts] + others:
        want = _exp_flush_reference(v, np.empty_like(v))
        got = exp_flush(v)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()
    for f in layouts:  # in place, on the same layout of a copy (reversed, strided, transposed views too)
        inplace, ref = f(base.copy()), f(base.copy())
        assert exp_flush(inplace, out=inplace).tobytes() == _exp_flush_reference(ref.copy(), ref).tobytes()
