"""The compiled scan kernel (constructions/scan_kernel.py) against the NumPy reference and an
80-bit sequential reference, within the rounding allowance of THEORY §7 (ISSUE 16).  numba is in
the [test] extra: without it these tests fail (they do not skip)."""

from __future__ import annotations

import numpy as np
import pytest

from softhard.constructions import scan_kernel, structured_attention
from softhard.constructions.engine import run_head
from softhard.constructions.simulate import leak_rounding_allowance
from softhard.constructions.structured_attention import affine_scan

U = 2.0 ** -53


def longdouble_scan(alpha, vals):
    """E and F by the recurrence in 80-bit extended precision (x86 long double), sequentially."""
    a = alpha.astype(np.longdouble)
    out = []
    e = np.longdouble(0)
    E = np.empty(len(a), dtype=np.longdouble)
    for t in range(len(a)):
        e = a[t] * (e + 1)
        E[t] = e
    out.append(E)
    for v in vals:
        vv = v.astype(np.longdouble)
        z = np.longdouble(0)
        F = np.empty(len(a), dtype=np.longdouble)
        F[0] = 0
        for t in range(1, len(a)):
            z = a[t] * (z + vv[t - 1])
            F[t] = z
        out.append(F)
    return out


def test_numba_is_installed_and_used_for_large_groups():
    assert scan_kernel.available(scan_kernel.MIN_MEMBERS)
    assert not scan_kernel.available(scan_kernel.MIN_MEMBERS - 1)


@pytest.mark.parametrize("m, seed", [(1000, 0), (40_000, 1)])
def test_kernel_and_numpy_scan_within_allowance_of_80_bit_reference(m, seed):
    rng = np.random.default_rng(seed)
    # factors exp(−gap/τ) as the structured path forms them: gaps > 0, many near 1, some flushed
    gaps = rng.exponential(1e-3, size=m)
    alpha = np.exp(-gaps * rng.choice([1.0, 1e3, 1e6], size=m))
    alpha[0] = 0.0
    alpha[rng.integers(1, m, size=5)] = 0.0  # batch-row breaks
    vals = [rng.random(m), (rng.random(m) < 0.5).astype(float)]
    kern = scan_kernel.group_scan(alpha, vals)
    betas = [alpha] + [np.concatenate([[0.0], alpha[1:] * v[:-1]]) for v in vals]
    ref_np = affine_scan(alpha, betas)
    exact = longdouble_scan(alpha, vals)
    # every coefficient: ≤ m multiplications and additions (+ two per recursion level, ≤ 64): the
    # (10N + 64)u term of leak_rounding_allowance with N = m, for sums of non-negative terms
    tol = (10 * m + 64) * U
    for k, r, x in zip(kern, ref_np, exact):
        x = x.astype(np.float64)
        scale = np.maximum(np.abs(x), 1e-300)
        assert np.max(np.abs(k - x) / scale) <= tol
        assert np.max(np.abs(r - x) / scale) <= tol
        assert np.all(k >= 0)


def test_head_on_kernel_path_matches_numpy_path_within_leak_allowance(monkeypatch, s_head_input):
    # the `!a S b` head on one random word long enough for the kernel
    n = 30_000
    monkeypatch.setattr(scan_kernel, "MIN_MEMBERS", 1000)  # the kernel path for this length
    calls = []
    monkeypatch.setattr(structured_attention, "group_scan",
                        lambda *a: calls.append(len(a[0])) or scan_kernel.group_scan(*a))
    head, x = s_head_input(n, 3)
    inv_tau = 4.0 * n
    fast = run_head(head, x, soft=True, inv_tau=inv_tau, path="structured")
    assert calls and max(calls) >= 1000  # the compiled scan ran
    monkeypatch.setattr(scan_kernel, "MIN_MEMBERS", 10**12)  # the NumPy reference path
    ref = run_head(head, x, soft=True, inv_tau=inv_tau, path="structured")
    assert fast.path == ref.path == "structured"
    allow = leak_rounding_allowance(ref.score_scale, ref.key_dim, inv_tau, n + 1,
                                    rounding_terms=ref.rounding_terms or None)
    assert 0 < allow < 1e-6
    assert np.array_equal(fast.hard, ref.hard)
    assert np.all(np.abs(fast.leak - ref.leak) <= 2 * allow * np.abs(ref.leak) + 1e-300)
    assert np.all(np.abs(fast.soft - ref.soft) <= 2 * allow * np.maximum(np.abs(ref.soft), 1.0))
    assert float(np.max(ref.leak)) > 0  # a leak was computed, not only zeros
