"""The hard forward pass of a model with layer norms, in rigorous ball arithmetic (THEORY §6).

A layer norm divides by ``√(v + eps)``, which is irrational for most rational inputs, so the
exact engine's integer-over-common-denominator arithmetic (:mod:`softhard.constructions.exact`)
cannot hold its output.  :class:`BallEngine` keeps every array as a *ball*: an exact rational
centre (an :class:`~softhard.constructions.exact.RArr`) and an exact rational radius per entry
(``None`` while every value is exact, as it is up to the first layer norm):

* a layer norm computes the centre's mean and variance exactly, ``1/√(v + eps)`` to
  ``2^-PREC`` from below with an integer square root, rounds the result down to the grid
  ``2^-PREC`` and adds both errors to the radius; an input radius ``R`` (ℓ2 norm ≤ Σ_a r_a)
  moves the output by at most ``|γ_b|·R/σ_lo`` (the map ``u ↦ u/√(|u|²/m + eps)`` is
  ``1/σ``-Lipschitz in ℓ2 where ``σ ≥ σ_lo`` on the segment: ``σ_lo² = v/4 + eps`` when
  ``R ≤ √(m v)/2``, else ``eps``);
* linear maps, sums and ReLU propagate radii exactly (``r ↦ r·|W|``; ReLU is 1-Lipschitz);
* every coordinate of every position carries a *class* (:class:`Classes`, per word): equal
  classes mean provably equal hard values — an exact entry's (radius 0) class is its value, and a
  coordinate a sublayer writes gets the class of what it is computed from (a layer norm: its input
  coordinates; an MLP: the coordinates it reads; a head: the query's classes and the key and value
  classes of the positions it sees, as a multiset for AHA, in order for UHA);
* a score ``s_ij`` lies in ``[S − rS, S + rS]``.  A query row's argmax set is *decided* when one
  key's ball lies above every other key's, or when the keys whose balls reach the highest lower
  end all have radius 0 and equal centres or equal classes on every coordinate the key reads (an
  exact tie).  Otherwise the row is **ambiguous**:
  its gap is reported as 0 (the premise cannot be established at this precision) and the
  row is marked in :attr:`HeadRows.ambiguous`.  The gap of a decided row is the rigorous lower
  bound ``min_{i∈A}(S_i − rS_i) − max_{j∉A}(S_j + rS_j)``.

Each layer norm also records a rigorous lower bound on the variance of its input over the batch
(``ExactRun.ln_var``): the premise of the composed bound's local Lipschitz constant
(:mod:`softhard.bounds.composed`).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .exact import ExactEngine, ExactRun, HeadRows, RArr, add, attend_matrix, matmul, normalize
from .hard_model import CanonHead, HardModel, LNSpec

#: bits of the grid a layer norm's output is rounded to (radius about 2^-PREC per norm)
PREC = 96


def exact_engine(hm: HardModel) -> ExactEngine:
    """The exact hard engine for ``hm``: :class:`BallEngine` when it has layer norms, else
    :class:`~softhard.constructions.exact.ExactEngine`."""
    return BallEngine(hm) if hm.has_layernorm else ExactEngine(hm)


def _abs(r: RArr) -> RArr:
    return RArr(np.abs(r.num), r.den)


def _neg(r: RArr) -> RArr:
    return RArr(-r.num, r.den)


def _obj(a: np.ndarray) -> np.ndarray:
    return a if a.dtype == object else a.astype(object)


def _radd(a: RArr | None, b: RArr | None) -> RArr | None:
    if a is None:
        return b
    if b is None:
        return a
    return normalize(add(a, b))


def _rmat(r: RArr | None, W: RArr) -> RArr | None:
    return None if r is None else normalize(matmul(r, _abs(W)))


def _zero(r: RArr | None) -> bool:
    return r is None or not np.any(r.num)


def _inv_sqrt_floor(num: int, den: int) -> int:
    """``floor(2^PREC / √(num/den))`` rounded to an integer s with ``s ≤ 2^PREC/√q < s + 1``."""
    return math.isqrt((den << (2 * PREC)) // num)


def layernorm_ball(x: RArr, xr: RArr | None, ln: LNSpec) -> tuple[RArr, RArr, tuple[Fraction, int, int]]:
    """One layer norm on a ball (module docstring): returns the new centre and radius of the whole
    residual (B, N, d) and ``(v_low, b, i)``, a lower bound on the input variance over every row
    and the first row (b-major) attaining it.  Exact rational arithmetic throughout, on integer
    numerators over one denominator per quantity (Python ints in object arrays; a Fraction per
    entry was 11× slower, ISSUE 16: 2.43 → 0.22 s CPU over 44 calls, benchmarks/README.md): for
    row ``(b, i)`` with inputs
    ``x_k = X_k/D``, ``C_k = (m·X_k − ΣX)/(mD)``, ``v = ΣC_k²/m``, ``s = S/2^P ≤ 1/√(v + eps)``;
    the centre ``⌊(β_k + γ_k·C_k·s)·2^P⌋/2^P`` and radius
    ``⌈(|γ_k|·(|C_k|/2^P + lip) + 2^-P)·2^P⌉/2^P`` (tests/constructions/test_layernorm.py checks
    both against a Fraction-per-entry evaluation)."""
    B, N, d = x.num.shape
    m, P = len(ln.coords), 1 << PREC
    X = _obj(x.num[..., ln.coords])
    mD = m * x.den  # C = Cn / mD
    Cn = m * X - X.sum(axis=-1)[..., None]
    Vn = (Cn * Cn).sum(axis=-1)  # v = Vn / (m·mD²)
    vden = m * mD * mD
    eps = Fraction(ln.eps)
    Rn = None if xr is None else _obj(xr.num[..., ln.coords]).sum(axis=-1)  # R = Rn / xr.den ≥ ℓ2 norm of the input error
    S = np.empty((B, N), dtype=object)  # s = S / 2^P
    Ln = np.zeros((B, N), dtype=object)  # lip·2^P = Ln / Ld
    Ld = 1 if xr is None else xr.den
    vbest = None
    for b in range(B):
        for i in range(N):
            v = Fraction(int(Vn[b, i]), vden)
            q = v + eps
            S[b, i] = _inv_sqrt_floor(q.numerator, q.denominator)
            vlow = v
            if Rn is not None and Rn[b, i]:
                r = Fraction(int(Rn[b, i]), Ld)
                slo2 = v / 4 + eps if 4 * r * r <= m * v else eps
                Ln[b, i] = (_inv_sqrt_floor(slo2.numerator, slo2.denominator) + 1) * int(Rn[b, i])
                vlow = max(Fraction(0), v - r * (m * v + 1) / m)
            if vbest is None or vlow < vbest[0]:
                vbest = (vlow, b, i)
    yc = np.empty((B, N, m), dtype=object)
    yr = np.empty((B, N, m), dtype=object)
    aC = np.abs(Cn)
    for k in range(m):
        g, be = (Fraction(int(f.numerator), int(f.denominator))  # Python ints, whatever type γ and β hold
                 for f in (Fraction(ln.gamma[k]), Fraction(ln.beta[k])))
        # ⌊(β + γ·C·S/2^P)·2^P⌋ = ⌊(β_n·γ_d·mD·2^P + γ_n·β_d·C_n·S) / (β_d·γ_d·mD)⌋
        yc[..., k] = (be.numerator * g.denominator * mD * P + g.numerator * be.denominator * Cn[..., k] * S) \
            // (be.denominator * g.denominator * mD)
        # ⌈|γ|·(|C|·Ld + Ln·mD) / (γ_d·mD·Ld)⌉ + 1   (|γ|·|C|/2^P·2^P, |γ|·lip·2^P, 2^-P·2^P)
        den = g.denominator * mD * Ld
        yr[..., k] = -((-abs(g.numerator) * (aC[..., k] * Ld + Ln * mD)) // den) + 1
    yc, yr = normalize(RArr(yc, P)), normalize(RArr(yr, P))
    # assemble the full residual: target columns replaced
    den = x.den * yc.den // math.gcd(x.den, yc.den)
    num = _obj(x.num) * (den // x.den)
    num[..., ln.target] = _obj(yc.num) * (den // yc.den)
    rad_old = xr if xr is not None else RArr(np.zeros(x.num.shape, dtype=np.int64), 1)
    rden = rad_old.den * yr.den // math.gcd(rad_old.den, yr.den)
    rnum = _obj(rad_old.num) * (rden // rad_old.den)
    rnum[..., ln.target] = _obj(yr.num) * (rden // yr.den)
    return normalize(RArr(num, den)), normalize(RArr(rnum, rden)), vbest


class BallEngine(ExactEngine):
    """:class:`~softhard.constructions.exact.ExactEngine` for models with layer norms (module
    docstring): same interface, results as balls (``ExactRun.xr``, ``HeadRows.ambiguous``)."""

    def run(self, tokens: np.ndarray, *, keep_residuals: bool = False, only_layers: int | None = None,
            keep_written: bool = False, f64_scale: bool = True) -> ExactRun:
        """As :meth:`ExactEngine.run`; ``x`` is the centre and ``xr`` the radius of the result."""
        tokens = np.asarray(tokens, dtype=np.int64)
        hm = self.hm
        x, xr = self.embed(tokens), None
        cls = Classes(x)
        res = ExactRun(x=x)
        L = len(self.heads) if only_layers is None else min(only_layers, len(self.heads))

        def norms(li: int, point: str):
            nonlocal x, xr
            for ln in hm.lns_at(li, point):
                x, xr, vb = layernorm_ball(x, xr, ln)
                cls.layernorm(ln)
                cls.exact(x, xr)
                res.ln_var[ln.name] = vb

        for li in range(L):
            if keep_residuals:
                res.residuals.append(x)
            norms(li, "before_heads")
            upd, updr = None, None
            for h, WQ, WK, WV, WO in self.heads[li]:
                rows, out, outr = self._ball_head(h, x, xr, WQ, WK, WV, cls, f64_scale)
                res.heads[h.name] = rows
                w = matmul(out, WO)
                wr = _rmat(outr, WO)
                if keep_written:
                    res.written[h.name] = normalize(w)
                upd = w if upd is None else add(upd, w)
                updr = _radd(updr, wr)
            if upd is not None:
                x = normalize(add(x, upd))
                xr = _radd(xr, updr)
                cls.heads(self.heads[li])
                cls.exact(x, xr)
            norms(li, "after_heads")
            for m, W1, b1, W2, b2 in self.mlps[li]:
                pre = add(matmul(x, W1), b1)
                act = normalize(RArr(np.where(pre.num > 0, pre.num, 0).astype(pre.num.dtype), pre.den))
                actr = _rmat(xr, W1)  # relu is 1-Lipschitz
                x = normalize(add(x, add(matmul(act, W2), b2)))
                xr = _radd(xr, _rmat(actr, W2))
                cls.mlp(m, _support_rows(W1), [int(c) for c in np.flatnonzero(np.any(W2.num != 0, axis=0) | (b2.num != 0))])
                cls.exact(x, xr)
            norms(li, "after_mlps")
        res.x, res.xr = x, xr
        return res

    def _ball_head(self, h: CanonHead, x: RArr, xr: RArr | None, WQ: RArr, WK: RArr, WV: RArr, cls: Classes,
                   f64_scale: bool = True):
        if _zero(xr):
            rows, out = self._head(h, x, WQ, WK, WV, f64=f64_scale)
            return rows, out, None
        B, N, _ = x.num.shape
        Q, K, V = matmul(x, WQ), matmul(x, WK), normalize(matmul(x, WV))
        rQ, rK, rV = _rmat(xr, WQ), _rmat(xr, WK), _rmat(xr, WV)

        def T(a: RArr) -> RArr:
            return RArr(np.swapaxes(a.num, 1, 2), a.den)

        S = normalize(matmul(Q, T(K)))
        rS = normalize(add(add(matmul(_abs(Q), T(rK)), matmul(rQ, T(_abs(K)))), matmul(rQ, T(rK))))
        U, Lo = add(S, rS), add(S, _neg(rS))  # one denominator
        Sx = add(S, RArr(np.zeros_like(rS.num), rS.den))  # S on that denominator too
        att = attend_matrix(h.mask, N)
        ks = _support_rows(WK)
        Un, Ln, Sn, rz = _obj(U.num), _obj(Lo.num), _obj(Sx.num), rS.num == 0
        gap = np.zeros((B, N), dtype=object)
        has = np.zeros((B, N), dtype=bool)
        ties = np.zeros((B, N), dtype=np.int64)
        amb = np.zeros((B, N), dtype=bool)
        A = np.zeros((B, N, N), dtype=bool)
        for b in range(B):
            for i in range(N):
                keys = np.flatnonzero(att[i])
                lmax = max(Ln[b, i, j] for j in keys)
                cand = [j for j in keys if Un[b, i, j] >= lmax]
                if len(cand) > 1 and not (all(rz[b, i, j] for j in cand) and len({Sn[b, i, j] for j in cand}) == 1
                                          or len({cls.sig(b, j, ks) for j in cand}) == 1):
                    amb[b, i] = True
                A[b, i, cand] = True
                ties[b, i] = len(cand)
                rest = [j for j in keys if j not in cand]
                if rest:
                    has[b, i] = True
                    gap[b, i] = 0 if amb[b, i] else (min(Ln[b, i, j] for j in cand) - max(Un[b, i, j] for j in rest))
        rows = HeadRows(gap_num=gap, has_rest=has, den=U.den, scale=h.scale, ties=ties, rule=h.rule, ambiguous=amb)
        for b, i in zip(*np.nonzero(amb)):
            if not has[b, i]:  # no competitor outside the candidates: the tie inside them is the doubt
                has[b, i], gap[b, i] = True, 0
        if h.rule == "AHA":
            cnt = A.astype(np.int64)
            Lm = math.lcm(*[int(t) for t in np.unique(ties)])
            mult = (Lm // ties).astype(object)
            out = RArr(_obj(matmul(RArr(cnt, 1), V).num) * mult[..., None], V.den * Lm)
            outr = RArr(_obj(matmul(RArr(cnt, 1), rV).num) * mult[..., None], rV.den * Lm)
        else:
            js = np.argmax(A, axis=-1) if h.rule == "UHA-leftmost" else N - 1 - np.argmax(A[..., ::-1], axis=-1)
            out = RArr(np.take_along_axis(V.num, js[..., None], axis=1), V.den)
            outr = RArr(np.take_along_axis(rV.num, js[..., None], axis=1), rV.den)
        return rows, normalize(out), normalize(outr)


class Classes:
    """Per word, position and coordinate, a class id: equal ids (in one word and coordinate) mean
    provably equal hard values (module docstring).  ``cls``: (B, N, d) object array of ints."""

    def __init__(self, x: RArr):
        self.ids: dict = {}
        self.cls = np.vectorize(lambda v: self.intern(("v", int(v))), otypes=[object])(x.num)

    def intern(self, key) -> int:
        return self.ids.setdefault(key, len(self.ids))

    def exact(self, x: RArr, xr: RArr | None) -> None:
        """Entries with radius 0 are exact: their class becomes their value (equal values, one
        class, however they were computed)."""
        ex = np.ones(x.num.shape, dtype=bool) if xr is None else (xr.num == 0)
        for b, i, a in zip(*np.nonzero(ex)):
            self.cls[b, i, a] = self.intern(("v", Fraction(int(x.num[b, i, a]), x.den)))

    def sig(self, b: int, i: int, coords) -> tuple:
        return tuple(self.cls[b, i, a] for a in coords)

    def layernorm(self, ln: LNSpec) -> None:
        B, N, _ = self.cls.shape
        for b in range(B):
            for i in range(N):
                src = self.sig(b, i, ln.coords)
                for k, t in enumerate(ln.target):
                    self.cls[b, i, t] = self.intern(("ln", ln.name, k, src))

    def mlp(self, m, reads, writes) -> None:
        B, N, _ = self.cls.shape
        for b in range(B):
            for i in range(N):
                src = self.sig(b, i, reads)
                for t in writes:
                    self.cls[b, i, t] = self.intern(("mlp", m.name, t, self.cls[b, i, t], src))

    def heads(self, heads) -> None:
        """After an attention layer: a written coordinate's class is its old class and, per head
        writing it, the query's classes and the (key, value) classes of the keys it sees
        (multiset for AHA, sequence for UHA)."""
        B, N, _ = self.cls.shape
        new = self.cls.copy()
        for h, WQ, WK, WV, WO in heads:
            qs, ks, vs = (_support_rows(W) for W in (WQ, WK, WV))
            writes = [int(c) for c in np.flatnonzero(np.any(WO.num != 0, axis=0))]
            att = attend_matrix(h.mask, N)
            for b in range(B):
                kv = [(self.sig(b, j, ks), self.sig(b, j, vs)) for j in range(N)]
                for i in range(N):
                    seen = [kv[j] for j in np.flatnonzero(att[i])]
                    sig = (h.name, self.sig(b, i, qs), tuple(sorted(seen)) if h.rule == "AHA" else tuple(seen))
                    for t in writes:
                        new[b, i, t] = self.intern(("head", new[b, i, t], sig))
        self.cls = new


def _support_rows(W: RArr) -> list[int]:
    return [int(a) for a in np.flatnonzero(np.any(W.num != 0, axis=1))]


def margin_at(o, run: ExactRun, b: int, row: int) -> Fraction:
    """Rigorous lower bound on the rounding margin of output ``o`` (boolean: ``|y − threshold|``;
    categorical: half the distance between the top two coordinates) at word ``b``, ``row`` of a run
    (exact when ``run.xr`` is None; 0 when the ball cannot decide the rounded value)."""
    vals = [Fraction(int(run.x.num[b, row, k]), run.x.den) for k in o.coords]
    rads = [Fraction(0)] * len(vals) if run.xr is None else \
        [Fraction(int(run.xr.num[b, row, k]), run.xr.den) for k in o.coords]
    if o.type == "boolean":
        return max(Fraction(0), abs(vals[0] - o.threshold) - rads[0])
    order = sorted(range(len(vals)), key=lambda k: vals[k])
    t = order[-1]
    return max(Fraction(0), (vals[t] - rads[t] - max(vals[k] + rads[k] for k in order[:-1])) / 2)
