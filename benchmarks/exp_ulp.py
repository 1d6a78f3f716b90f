"""Largest error, in ulp, of the float64 ``exp`` the fused head kernel uses (numba → the platform
libm) and of NumPy's, against an 80-bit (x86 long double) reference (ISSUE 16; THEORY §7).

The rounding allowance (``simulate.leak_rounding_allowance``) grants every ``exp`` 8u (4 ulp);
this script shows how much of that each implementation uses on 10^6 uniform arguments in
[−705, 0] (``EXP_FLUSH`` to 0) and 10^6 small ones (−Exp(10^-3): the factors near 1 of a long
group chain).  An 80-bit ``exp`` is within ~2^-64 relative, far below one float64 ulp.

    python benchmarks/exp_ulp.py
"""

from __future__ import annotations

import numba
import numpy as np


numba.config.LOOP_VECTORIZE = 0  # compiled as constructions/head_kernel.py compiles its kernel


@numba.njit("f8[:](f8[:])", fastmath=False)
def _exp_kernel(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = np.exp(x[i])
    return out


def max_ulp(y: np.ndarray, ref: np.ndarray) -> float:
    """max |y − ref| / ulp(ref) (``ref`` long double, ``y`` float64)."""
    ulp = np.spacing(np.abs(ref.astype(np.float64))).astype(np.longdouble)
    return float(np.max(np.abs(y.astype(np.longdouble) - ref) / ulp))


def main() -> None:
    if np.finfo(np.longdouble).nmant < 63:
        raise SystemExit("needs an 80-bit long double (x86): this platform's has fewer digits")
    rng = np.random.default_rng(0)
    x = np.concatenate([-rng.uniform(0, 705, 10**6), -rng.exponential(1e-3, 10**6)])
    ref = np.exp(x.astype(np.longdouble))
    print(f"numba (libm) exp: max error {max_ulp(_exp_kernel(x), ref):.3f} ulp over {len(x)} arguments")
    print(f"NumPy exp:        max error {max_ulp(np.exp(x), ref):.3f} ulp")


if __name__ == "__main__":
    main()
