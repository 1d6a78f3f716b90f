"""Positional families of the model format: a family's exact value at position ``j`` of a word of
length ``n``, its range over bounded lengths, and :class:`PEFeature` (a family times a direction
of the residual stream).  The format itself is described in :mod:`softhard.constructions.modelfile`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

@dataclass(frozen=True)
class Family:
    """A positional family: ``bounded`` (entries bounded independently of n; THEORY §1 regime T)
    and its exact range over ``1 ≤ j ≤ n ≤ N`` (``N=None``: every n)."""

    name: str
    bounded: bool
    doc: str


PE_FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("j", False, "position j"),
    Family("j/n", True, "relative position j/n"),
    Family("j^2", False, "squared position j²"),
    Family("(-1)^j", True, "parity (−1)^j"),
    Family("n+1-j", False, "reversed position n+1−j"),
    Family("(n+1-j)/n", True, "reversed relative position (n+1−j)/n"),
    Family("1", True, "constant 1 at every real position (0 at BOS)"),
    Family("sinusoidal", True, "fn(omega·j) or fn(omega·j/n), fn in {sin, cos}, as the nearest float64"),
)}


def _sinusoid_value(fn: str, omega: Fraction, j: int, n: int, over_n: bool) -> Fraction:
    return _sinusoid_cached(fn, omega.numerator, omega.denominator, j, n if over_n else 0)


@lru_cache(maxsize=200_000)
def _sinusoid_cached(fn: str, p: int, q: int, j: int, n: int) -> Fraction:
    import mpmath
    with mpmath.workdps(40):
        arg = mpmath.mpf(p) / q * j
        if n:
            arg = arg / n
        v = mpmath.sin(arg) if fn == "sin" else mpmath.cos(arg)
        return Fraction(float(v))  # float(mpf) rounds to nearest: a platform-independent definition


def family_value(feat: "PEFeature", j: int, n: int) -> Fraction:
    """Exact value of feature ``feat`` at position ``j`` (1..n) of a word of length ``n``."""
    f = feat.family
    if f == "j":
        return Fraction(j)
    if f == "j/n":
        return Fraction(j, n)
    if f == "j^2":
        return Fraction(j * j)
    if f == "(-1)^j":
        return Fraction(-1 if j % 2 else 1)
    if f == "n+1-j":
        return Fraction(n + 1 - j)
    if f == "(n+1-j)/n":
        return Fraction(n + 1 - j, n)
    if f == "1":
        return Fraction(1)
    return _sinusoid_value(feat.fn, feat.omega, j, n, feat.over_n)


def family_range(feat: "PEFeature", n_max: int | None) -> tuple[Fraction, Fraction]:
    """Exact ``[lo, hi]`` containing the feature's value at every ``1 ≤ j ≤ n ≤ n_max``
    (``n_max=None``: every n; only for bounded families).  Raises ``ValueError`` for an unbounded
    family with ``n_max=None``."""
    f = feat.family
    N = n_max
    if N is None and not PE_FAMILIES[f].bounded:
        raise ValueError(f"family {f} is unbounded")
    if f == "j":
        return Fraction(1), Fraction(N)
    if f == "j/n" or f == "(n+1-j)/n":
        return (Fraction(0) if N is None else Fraction(1, N)), Fraction(1)
    if f == "j^2":
        return Fraction(1), Fraction(N * N)
    if f == "(-1)^j":
        return Fraction(-1), Fraction(1 if (N is None or N >= 2) else -1)
    if f == "n+1-j":
        return Fraction(1), Fraction(N)
    if f == "1":
        return Fraction(1), Fraction(1)
    return Fraction(-1), Fraction(1)


@dataclass
class PEFeature:
    """One positional feature: ``family`` value times the exact direction ``vector`` (d,)."""

    family: str
    vector: np.ndarray  # object array of Fractions, shape (d,)
    fn: str = ""
    omega: Fraction = Fraction(0)
    over_n: bool = False

    @property
    def bounded(self) -> bool:
        return PE_FAMILIES[self.family].bounded

    def describe(self) -> str:
        if self.family == "sinusoidal":
            arg = "omega*j/n" if self.over_n else "omega*j"
            return f"{self.fn}({arg}), omega={self.omega}"
        return self.family
