"""Exact hard-attention forward pass in rational arithmetic (for gap analysis; THEORY §0, §2, §6).

The gap premise of the composed bound (THEORY §6: "gap ≥ γ on all inputs of length ≤ N") can only
be *established* by evaluating every score exactly: an exact tie (AHA averages over it) and a gap
of 1e−17 (a near-tie: not simulable this way) are indistinguishable in float64.  So the hard model
is run here on exact rationals: every array is a matrix of integer numerators over one common
denominator (:class:`RArr`), so comparisons inside a score row are comparisons of integers.
Numerators are ``int64`` while a bound on their magnitude proves no overflow (fast, vectorised);
otherwise Python integers in object arrays (exact, slower).  Common factors are cancelled after
every sublayer.

Score of a head: ``s_ij = scale · (x_i W_Q)(x_j W_K)ᵀ`` with ``scale > 0`` kept outside, so the
argmax sets and ties do not depend on it and gaps are multiplied by it at the end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

import numpy as np

from .hard_model import CanonHead, HardModel

LIM = 1 << 62
_MIN64 = np.iinfo(np.int64).min


@dataclass
class RArr:
    """Exact rational array ``num / den``: ``num`` int64 or object (Python ints), ``den`` > 0."""

    num: np.ndarray
    den: int

    def fraction(self, *idx) -> Fraction:
        return Fraction(int(self.num[idx]), self.den)


def _maxabs(a: np.ndarray) -> int:
    if a.size == 0:
        return 0
    if a.dtype == object:
        return max(abs(int(x)) for x in a.flat)
    return max(int(a.max()), -int(a.min()))  # no |a| temporary (and no overflow at the int64 minimum)


def _obj(a: np.ndarray) -> np.ndarray:
    return a if a.dtype == object else a.astype(object)


def _shrink(a: np.ndarray) -> np.ndarray:
    """Back to int64 when every entry fits (with headroom)."""
    if a.dtype == object and _maxabs(a) < LIM:
        return a.astype(np.int64)
    return a


def from_fractions(a: np.ndarray) -> RArr:
    """:class:`RArr` of an object array of Fractions (exact)."""
    flat = list(np.asarray(a, dtype=object).ravel())
    den = 1
    for x in flat:
        den = den * x.denominator // math.gcd(den, x.denominator)
    num = np.array([int(x * den) for x in flat] or [0], dtype=object)[: len(flat)].reshape(np.shape(a))
    return RArr(_shrink(num), den)


def normalize(r: RArr) -> RArr:
    """Cancel the common factor of all numerators and the denominator."""
    if r.num.size == 0:
        return RArr(r.num, 1)
    g = np.gcd.reduce(r.num.ravel())
    g = math.gcd(int(g), r.den)
    if g > 1:
        return RArr(_shrink((r.num if g < LIM else _obj(r.num)) // g), r.den // g)
    return RArr(_shrink(r.num), r.den)


def scale_num(a: np.ndarray, m: int) -> np.ndarray:
    """``a * m`` exactly (object fallback on possible overflow)."""
    if m == 1:
        return a
    if a.dtype != object and m < LIM and _maxabs(a) * m < LIM:
        return a * np.int64(m)
    return _obj(a) * m


def add(a: RArr, b: RArr) -> RArr:
    """Exact ``a + b`` (broadcasting)."""
    den = a.den * b.den // math.gcd(a.den, b.den)
    ma, mb = den // a.den, den // b.den
    if (a.num.dtype != object and b.num.dtype != object and max(ma, mb) < LIM
            and _maxabs(a.num) * ma + _maxabs(b.num) * mb < LIM):
        return RArr(a.num * np.int64(ma) + b.num * np.int64(mb), den)
    return RArr(_obj(a.num) * ma + _obj(b.num) * mb, den)


#: below this bound on every partial sum's magnitude, integer products and sums in float64 are exact
F64_EXACT = 1 << 53


def matmul(a: RArr, b: RArr) -> RArr:
    """Exact ``a @ b`` (numpy matmul semantics).  Integer numerators whose every partial sum is
    below 2^53 in magnitude (``max|a| · max|b| · inner``) are multiplied in float64 (BLAS): every
    product and every partial sum is an integer of at most 53 bits, so each is exact whatever the
    summation order, and the result converts back to int64 exactly (ISSUE 16: NumPy's integer
    matmul has no BLAS; tested against the int64 and object paths)."""
    inner = a.num.shape[-1]
    if a.num.dtype != object and b.num.dtype != object:
        bound = _maxabs(a.num) * _maxabs(b.num) * max(inner, 1)
        if bound < F64_EXACT:
            return RArr(np.matmul(a.num.astype(np.float64), b.num.astype(np.float64)).astype(np.int64),
                        a.den * b.den)
        if bound < LIM:
            return RArr(np.matmul(a.num, b.num), a.den * b.den)
    return RArr(np.matmul(_obj(a.num), _obj(b.num)), a.den * b.den)


@lru_cache(maxsize=64)
def attend_matrix(mask: str, N: int) -> np.ndarray:
    """Boolean (N, N) attendability (row i = query, column j = key); BOS (column 0) always;
    the BOS query row (0) attends to BOS only (as :func:`softhard.constructions.engine.forward`)."""
    i = np.arange(N)[:, None]
    j = np.arange(N)[None, :]
    m = {"strict_past": j < i, "past": j <= i, "strict_future": j > i, "future": j >= i}.get(mask)
    if m is None:
        m = np.ones((N, N), dtype=bool)
    m = m.copy()
    m[0, :] = False
    m[:, 0] = True
    m.setflags(write=False)
    return m


@dataclass
class HeadRows:
    """Per word and query row of one head (arrays ``(B, N)``), exact.

    ``gap_num``: ``s* − max{s_j : j ∉ A}`` in units of ``1/den`` (times ``scale``), valid where
    ``has_rest``; ``ties``: ``|A|``; ``uha_gap_zero``: a UHA row whose argmax set has ≥ 2 elements
    (its UHA gap is 0).  ``scale``: the head's exact score scale.  ``f64_num`` (exact engine only):
    per row an upper bound on the magnitudes float64 score arithmetic multiplies, in the units of
    ``gap_num``: ``(|x_i| |W_Q|) · max_j (|x_j| |W_K|)`` (max over the word's positions, entrywise),
    the ``A_i`` of :func:`softhard.solver.precision.model_float64_premise`.
    """

    gap_num: np.ndarray
    has_rest: np.ndarray
    den: int
    scale: Fraction
    ties: np.ndarray
    rule: str
    smax_num: np.ndarray | None = None
    ambiguous: np.ndarray | None = None
    f64_num: np.ndarray | None = None

    def gap(self, b: int, i: int) -> Fraction | None:
        """Exact gap of word ``b`` at row ``i`` (None: no competitor; 0: UHA tie)."""
        if self.rule != "AHA" and self.ties[b, i] >= 2:
            return Fraction(0)
        if not self.has_rest[b, i]:
            return None
        return self.scale * Fraction(int(self.gap_num[b, i]), self.den)

    def min_per_word(self, uha_ties_as_zero: bool = True) -> list[tuple[Fraction | None, int]]:
        """Per word: (min gap over rows, the row attaining it); UHA ties count as gap 0."""
        out = []
        B, N = self.ties.shape
        big = None
        for b in range(B):
            best, row = big, -1
            for i in range(1, N):
                g = self.gap(b, i) if uha_ties_as_zero else self.aha_gap(b, i)
                if g is None:
                    continue
                if best is None or g < best:
                    best, row = g, i
            out.append((best, row))
        return out

    def aha_gap(self, b: int, i: int) -> Fraction | None:
        """Gap to the positions *outside* the argmax set (ties ignored), exact."""
        if not self.has_rest[b, i]:
            return None
        return self.scale * Fraction(int(self.gap_num[b, i]), self.den)


@dataclass
class ExactRun:
    """Result of :func:`run_exact` on a batch of words of one length ``n``.

    ``x``: final residual (B, n+1, d) exact; ``heads``: name → :class:`HeadRows`;
    ``residuals``: the residual entering each layer (if requested).  For a model with layer norms
    (:mod:`softhard.constructions.exact_balls`) ``x`` is the centre of a ball and ``xr`` (same
    shape, ≥ 0) its radius: the hard model's value is within ``xr`` of ``x``; ``ln_var``: per
    layer norm, ``(v, b, i)``: a lower bound on the variance of its input over the batch and the
    word/row attaining it.  ``xr`` is None when every value is exact.
    """

    x: RArr
    heads: dict[str, HeadRows] = field(default_factory=dict)
    residuals: list[RArr] = field(default_factory=list)
    written: dict[str, RArr] = field(default_factory=dict)
    xr: RArr | None = None
    ln_var: dict[str, tuple] = field(default_factory=dict)


class ExactEngine:
    """Exact hard forward of a :class:`HardModel` (module docstring).  Build once per model; a
    model with layer norms needs :class:`softhard.constructions.exact_balls.BallEngine` (use
    :func:`softhard.constructions.exact_balls.exact_engine`, which picks)."""

    def __init__(self, hm: HardModel):
        self.hm = hm
        self.E = from_fractions(hm.token_embedding)
        self.heads = [[(h, from_fractions(h.W_Q), from_fractions(h.W_K), from_fractions(h.W_V),
                        from_fractions(h.W_O)) for h in hs] for hs in hm.heads]
        self.mlps = [[(m, from_fractions(m.W1), from_fractions(m.b1), from_fractions(m.W2), from_fractions(m.b2))
                      for m in ms] for ms in hm.mlps]
        self._pe: dict[int, RArr] = {}

    def pe(self, n: int) -> RArr:
        if n not in self._pe:
            if len(self._pe) > 64:
                self._pe.clear()
            self._pe[n] = from_fractions(self.hm.positional_exact(n))
        return self._pe[n]

    def embed(self, tokens: np.ndarray) -> RArr:
        B, n = tokens.shape
        ids = np.concatenate([np.zeros((B, 1), dtype=np.int64), tokens], axis=1)
        emb = RArr(self.E.num[ids], self.E.den)
        return normalize(add(emb, self.pe(n)))

    def run(self, tokens: np.ndarray, *, keep_residuals: bool = False, only_layers: int | None = None,
            keep_written: bool = False, f64_scale: bool = True) -> ExactRun:
        """Run the hard model on token ids ``(B, n)`` (1-based symbols, all words of one length).

        ``only_layers``: stop after that many layers (heads of later layers are not evaluated);
        ``keep_written``: keep each head's written update ``out·W_O`` (B, n+1, d) in ``written``;
        ``f64_scale=False``: skip the heads' float64 rounding scales (``HeadRows.f64_num`` None).
        Returns an :class:`ExactRun`.  Raises :class:`ModelFormatError` if ``n`` exceeds a
        positional table.
        """
        tokens = np.asarray(tokens, dtype=np.int64)
        x = self.embed(tokens)
        res = ExactRun(x=x)
        L = len(self.heads) if only_layers is None else min(only_layers, len(self.heads))
        for li in range(L):
            if keep_residuals:
                res.residuals.append(x)
            upd = None
            for h, WQ, WK, WV, WO in self.heads[li]:
                rows, out = self._head(h, x, WQ, WK, WV, f64=f64_scale)
                res.heads[h.name] = rows
                w = matmul(out, WO)
                if keep_written:
                    res.written[h.name] = normalize(w)
                upd = w if upd is None else add(upd, w)
            if upd is not None:
                x = normalize(add(x, upd))
            for m, W1, b1, W2, b2 in self.mlps[li]:
                pre = add(matmul(x, W1), b1)
                act = RArr(np.maximum(pre.num, 0) if pre.num.dtype != object else
                           np.where(pre.num > 0, pre.num, 0).astype(object), pre.den)
                act = normalize(act)
                x = normalize(add(x, add(matmul(act, W2), b2)))
        res.x = x
        return res

    def _head(self, h: CanonHead, x: RArr, WQ: RArr, WK: RArr, WV: RArr, *, scores: RArr | None = None,
              f64: bool = True):
        """One head on ``x`` (B, N, d): its :class:`HeadRows` and hard output (B, N, d_v), exact.
        ``scores``: the head's exact scores ``(xW_Q)(xW_K)ᵀ`` when the caller has them (not
        recomputed); ``f64=False``: no float64 rounding scale (``HeadRows.f64_num`` None)."""
        B, N, _ = x.num.shape
        V = normalize(matmul(x, WV))
        if scores is None:
            Q = matmul(x, WQ)
            K = matmul(x, WK)
            S = matmul(Q, RArr(np.swapaxes(K.num, 1, 2), K.den))  # (B, N, N), denominator S.den (scale outside)
        else:
            S = scores
        att = attend_matrix(h.mask, N)[None]
        if S.num.dtype == object:
            sent = float("-inf")
            Sm = np.where(att, S.num, sent)
        else:
            sent = _MIN64
            Sm = np.where(att, S.num, sent)
        smax = Sm.max(axis=-1)
        A = (Sm == smax[..., None]) & att
        ties = A.sum(axis=-1)
        others = att & ~A
        has = others.any(axis=-1)
        rest = np.where(others, S.num, sent).max(axis=-1)
        gap = np.zeros(smax.shape, dtype=S.num.dtype if S.num.dtype != object else object)
        if S.num.dtype == object:
            gap = np.where(has, smax, 0) - np.where(has, rest, 0)
        else:
            gap[has] = smax[has] - rest[has]
        if f64:  # float64 rounding scale per row: |x_i||W_Q| · max_j |x_j||W_K| on S's denominator (Q.den·K.den)
            Qa = matmul(RArr(np.abs(x.num), x.den), RArr(np.abs(WQ.num), WQ.den))
            Ka = matmul(RArr(np.abs(x.num), x.den), RArr(np.abs(WK.num), WK.den))
            f64 = matmul(Qa, RArr(Ka.num.max(axis=1)[..., None], Ka.den)).num[..., 0]
        else:
            f64 = None
        rows = HeadRows(gap_num=gap, has_rest=has, den=S.den, scale=h.scale, ties=ties, rule=h.rule, smax_num=smax,
                        f64_num=f64)
        if h.rule == "AHA":
            cnt = A.astype(np.int64)
            summ = matmul(RArr(cnt, 1), V)  # (B, N, dv): Σ_{j∈A} v_j
            L = 1
            for a in np.unique(ties):
                L = L * int(a) // math.gcd(L, int(a))
            # L = lcm of the tie counts exceeds int64 from 43 positions on (lcm(1..43) > 2^63)
            mult = (L // ties).astype(np.int64) if L < LIM else L // ties.astype(object)
            out = RArr(scale_num_rows(summ.num, mult), V.den * L)
        else:
            if h.rule == "UHA-leftmost":
                js = np.argmax(A, axis=-1)
            else:
                js = N - 1 - np.argmax(A[..., ::-1], axis=-1)
            out = RArr(np.take_along_axis(V.num, js[..., None], axis=1), V.den)
        return rows, normalize(out)


def scale_num_rows(a: np.ndarray, mult: np.ndarray) -> np.ndarray:
    """``a[b, i, :] * mult[b, i]`` exactly."""
    m = int(mult.max()) if mult.size else 1
    if a.dtype != object and _maxabs(a) * m < LIM:
        return a * mult[..., None]
    return _obj(a) * mult.astype(object)[..., None]


def output_values(hm: HardModel, x: RArr, coords: list[int]) -> np.ndarray:
    """Exact output coordinates as Fractions: object array (B, N, len(coords))."""
    sub = x.num[..., coords]
    f = np.vectorize(lambda v: Fraction(int(v), x.den), otypes=[object])
    return f(sub)


def to_float(r: RArr) -> np.ndarray:
    """Nearest-double values of an :class:`RArr` (each entry within a few ulps; for numerics only)."""
    if r.den < (1 << 1000) and (r.num.dtype != object or _maxabs(r.num) < (1 << 1000)):
        return r.num.astype(np.float64) / float(r.den)
    f = np.vectorize(lambda v: float(Fraction(int(v), r.den)), otypes=[np.float64])
    return f(r.num)
