"""Counting constructions (THEORY §5): uniform averages, three comparators, and parity.

The graph nodes (see :mod:`softhard.constructions.compile`) and the layers they become:

* ``uniform`` — uniform attention over ``j ≤ i`` and BOS (all scores 0).  With value ``φ(j)``
  (0 at BOS) the output at ``i`` is exactly ``C_φ(i)/(i+1)``; with the BOS indicator as value it
  is ``1/(i+1)``.  Softmax and average hard attention coincide for every τ: the node is exact.
  All uniform nodes of a layer share one head (one value column each).
* ``compare`` — ``[g(i) ≥ 0]`` for an integer ``g = Σ_k a_k C_k + c``.  The comparator reads
  ``F(i) = Σ_k a_k·C_k/(i+1) + (c + ½)·1/(i+1) = (g(i) + ½)/(i+1)``, a linear map of uniform
  outputs; ``F`` is never 0 and ``|F| ≥ 1/(2(i+1)) ≥ 1/(2(n+1))``.  Three ways to turn its sign
  into a Boolean:

  - ``ln`` (THEORY §5 (a)): layer normalisation of the 2-vector ``[F, −F]`` (mean 0, variance
    ``F²``), ``y = F/√(F² + ε_LN)``, then the clean-up ``round_η((y + 1)/2)``.  Exact for
    ``ε_LN = 0``; the error ``(1 − |y|)/2`` is at most ``(1 − (1 + 4ε_LN(n+1)²)^{-1/2})/2``.
    The layer is a :class:`LayerNorm` sublayer of the block (it is not attention).
  - ``head`` (THEORY §5 (b)): one head, mask ``j ≤ i``, value ``one`` (1 at every position, 0 at
    BOS), scores ``s_ij = F(i) + σ·p_j`` for ``j ≥ 1`` and ``σ·p_i`` for BOS, with the tie-break
    ``σ·p_j = β·j/n`` (regime T) or ``j`` (regimes U, P).  The hard (AHA) output is ``[F > 0]``:
    if ``F > 0`` position ``i`` is the unique maximum, else BOS.  Gap ``|F| ≥ 1/(2(n+1))``, so
    ``1/τ = Θ(n)``; the tie-break spreads the other positions in arithmetic progression so that
    their weights sum geometrically (no ``log n``, THEORY §2 "structured rows").
  - ``pe`` (THEORY §5 (c), unbounded PE, regimes U and P): scores ``s_ij = F(i)·(j+1) − λ(i − j)``
    for ``j ≥ 1`` and 0 for BOS, with ``λ`` = :data:`PE_SLOPE`.  At ``j = i`` the score is
    ``F(i)(i+1) = g(i) + ½``, at distance ≥ ½ from BOS's 0 whatever ``n``; every other position
    is at least ``λ·(i − j)`` below the maximum.  One fixed τ serves every n.

* ``parity`` — ``[C_φ(i) even]`` with the positional embedding ``(j, j², (−1)^j)`` (regime P):
  query ``(f, b) = (C/(i+1), 1/(i+1))``, key ``(j, −j²/2)``, so ``s_ij = (C² − (j − C)²)/(2(i+1))``
  peaks at ``j = C`` (BOS is ``j = 0``) with gap ``1/(2(i+1))``; the value ``[j even]`` (from
  ``(−1)^j``) at the peak is the answer.

Numerics.  Every counting head gets an exact fast path (:meth:`CountingHead.fast`; the engine
calls it first): prefix sums for uniform heads; for the ``head`` comparator a blocked scan of the
geometric prefix sums ``Σ_{j≤i} e^{(a_j − a_i)/τ} v_j`` (the engine's structured form, without its
structure detection); for ``pe`` / ``parity`` heads (and the ``head`` comparator when the decay is
fast) a window around the row maximum outside which every weight is ``exp(z)`` with ``z < −745.2``,
i.e. exactly 0.0 in float64 (the dense path adds those zeros; the results agree up to summation
order).  The windows follow from the score structure proved above (not from the data); the tests
check every fast path against the dense path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import networkx as nx
import numpy as np

from .engine import forward
from .errors import ModelFormatError, ParameterError
from .parameters import MAX_COEFFICIENT, check_comparator_weights  # noqa: F401 - MAX_COEFFICIENT re-exported
from .simulate import HeadObservation, RunSummary, length_batches, periodic_words, short_word
from .transformer import Head, Transformer

#: λ, the slope of the ``pe`` comparator's tie-break ``−λ(i − j)``: any λ ≥ 1 is sound; a large one
#: makes the other positions' weights negligible (``e^{−λ/τ}``) and the fast path's window short
PE_SLOPE = 64
#: float64 ``exp(z)`` is exactly 0.0 for ``z < −745.2``; windows leave out scores this far (×1/τ) below
#: the row maximum, with a margin for rounding
WINDOW_CUT = 800.0


# --------------------------------------------------------------------------------------------
# heads with an exact fast path


@dataclass
class CountingHead(Head):
    """A :class:`Head` whose score structure is known by construction, with an exact fast path.

    ``shape``: ``"uniform"`` (all scores equal; mask ``past``), ``"tiebreak"`` (the ``head``
    comparator: ``s_ij = c_i + a_j`` for ``j ≥ 1`` with ``c_i = Q_i[0]``, ``a_j = K_j[1]`` strictly
    increasing, BOS ``Q_i·K_0``), ``"band"`` (the ``pe`` comparator: every key ``j`` with
    ``1 ≤ j < i`` scores at least ``slope·(i − j)`` below the row maximum) or ``"parity"`` (query
    ``(f, b)``, key ``(j, −j²/2)``: the key at distance ``k`` from ``C = f/b`` scores ``k²·b/2``
    below the maximum).  The engine
    (:func:`softhard.constructions.engine.run_head`) calls :meth:`fast` first.
    """

    shape: str = "uniform"
    slope: float = 0.0

    def fast(self, Q: np.ndarray, K: np.ndarray, V: np.ndarray, *, soft: bool, inv_tau: float | None):
        """``(soft_out, hard_out, leak, ties)`` as the dense path would compute them, or ``None``
        when the window would not be smaller than the row (then the engine's other paths run).

        Shapes: ``Q, K`` ``(B, N, k)``, ``V`` ``(B, N, dv)``; outputs ``(B, N, dv)``, ``(B, N)``.
        """
        if self.mask != "past" or self.rule != "AHA":
            return None
        if self.shape == "uniform":
            return _uniform(V, soft)
        B, N, _ = Q.shape
        if self.shape == "tiebreak":
            return _tiebreak(Q, K, V, soft, inv_tau)
        if self.shape == "band":
            K_w = 1 if not soft else int(math.ceil(WINDOW_CUT / (self.slope * inv_tau)))
            if K_w + 1 >= N:
                return None
            centre = None  # the row itself
            offsets = range(-K_w, 1)
        elif self.shape == "parity":
            K_w = 1 if not soft else int(math.ceil(math.sqrt(2.0 * N * WINDOW_CUT / inv_tau)))
            if 2 * K_w + 1 >= N:
                return None
            with np.errstate(divide="ignore", invalid="ignore"):
                c = np.rint(Q[..., 0] / Q[..., 1])
            centre = np.clip(np.nan_to_num(c), 0, np.arange(N)[None, :]).astype(np.int64)
            offsets = range(-K_w, K_w + 1)
        else:
            raise ModelFormatError(f"head {self.name}: unknown counting head shape {self.shape!r}")
        return _windowed(Q, K, V, centre, offsets, soft, inv_tau)


def _uniform(V: np.ndarray, soft: bool):
    """Uniform attention over ``j ≤ i`` plus BOS: prefix sums divided by ``i+1`` (exact sums of
    0/1 values, one rounding per division — what the dense path computes)."""
    B, N, _ = V.shape
    cnt = np.arange(1, N + 1, dtype=np.float64)
    out = np.cumsum(V, axis=1) / cnt[None, :, None]
    ties = np.broadcast_to(np.arange(1, N + 1), (B, N)).copy()
    return (out if soft else None), out.copy(), (np.zeros((B, N)) if soft else None), ties


#: block length of the tie-break scan: within a block, relative exponents stay below this
BLOCK_EXP = 600.0


def _tiebreak(Q, K, V, soft, inv_tau):
    """The ``head`` comparator, ``s_ij = c_i + a_j`` (``1 ≤ j ≤ i``, ``a`` increasing) and BOS
    ``s_iB``: the row maximum is at ``j = i`` or BOS, and the positions' weights relative to
    ``j = i`` form the prefix sums ``H_i(v) = Σ_{j≤i} e^{(a_j − a_i)/τ} v_j``, computed by a blocked
    scan (exponents inside a block below :data:`BLOCK_EXP`; block sums carried with
    ``e^{(a_s − a_i)/τ}``).  Returns ``None`` if the scores do not have this form (checked) or the
    decay is so fast that blocks would be tiny (then the band window is used instead)."""
    B, N, dv = V.shape
    if N < 3 or Q.shape[-1] != 3:
        return None
    if not (np.all(K[:, 1:, 0] == 1.0) and np.all(K[:, 1:, 2] == 0.0) and np.all(Q[:, 1:, 1] == 1.0)):
        return None
    a = K[0, :, 1]
    if not (np.all(K[:, :, 1] == a[None, :]) and np.all(np.diff(a[1:]) > 0)):
        return None
    c = Q[..., 0]
    top = c + a[None, :]  # score of j = i in row i
    s_bos = np.einsum("bnk,bk->bn", Q, K[:, 0])
    pos_wins = top >= s_bos
    bos_wins = s_bos >= top
    ties = pos_wins.astype(np.int64) + bos_wins
    ties[:, 0] = 1  # the BOS row attends BOS only
    pos_wins[:, 0] = False
    bos_wins[:, 0] = True
    hard = (np.where(pos_wins[..., None], V, 0.0) + np.where(bos_wins[..., None], V[:, :1], 0.0)) / ties[..., None]
    if not soft:
        return None, hard, None, ties
    span = (a[-1] - a[1]) * inv_tau
    if span / BLOCK_EXP > 64:  # fast decay: only a short band of keys matters
        step = float(np.min(np.diff(a[1:])))
        K_w = int(math.ceil(WINDOW_CUT / (step * inv_tau)))
        if K_w + 1 >= N:
            return None
        return _windowed(Q, K, V, None, range(-K_w, 1), soft, inv_tau)
    # H_i(v) for v = (V, 1): blocked scan over positions 1..N-1
    vv = np.concatenate([V, np.ones((B, N, 1))], axis=-1)
    H = np.zeros((B, N, dv + 1))
    carry = np.zeros((B, dv + 1))
    a_prev = None
    s0 = 1
    while s0 < N:
        e0 = s0 + 1
        while e0 < N and (a[e0] - a[s0]) * inv_tau <= BLOCK_EXP:
            e0 += 1
        rel = (a[s0:e0] - a[s0]) * inv_tau  # 0 .. ≤ BLOCK_EXP
        part = np.cumsum(np.exp(rel)[None, :, None] * vv[:, s0:e0], axis=1)
        back = np.exp(-rel)[None, :, None]
        H[:, s0:e0] = part * back
        if a_prev is not None:
            H[:, s0:e0] += carry[:, None, :] * np.exp((a_prev - a[s0:e0]) * inv_tau)[None, :, None]
        carry = H[:, e0 - 1]
        a_prev = a[e0 - 1]
        s0 = e0
    with np.errstate(over="ignore", under="ignore"):
        smax = np.maximum(top, s_bos)
        w_top = np.exp((top - smax) * inv_tau)  # weight of j = i; the others are w_top·e^{(a_j − a_i)/τ}
        w_bos = np.exp((s_bos - smax) * inv_tau)
    w_top[:, 0] = 0.0
    w_bos[:, 0] = 1.0
    num = w_top[..., None] * H[..., :dv] + w_bos[..., None] * V[:, :1]
    # the weight outside the argmax from its parts (a tiny leak is resolved, not 1 − (1 − leak)):
    # Hx_i = Σ_{j<i} e^{(a_j − a_i)/τ} = e^{(a_{i−1} − a_i)/τ}·H_{i−1}
    Hx = np.zeros((B, N))
    with np.errstate(under="ignore"):
        Hx[:, 2:] = H[:, 1:-1, dv] * np.exp((a[1:-1] - a[2:]) * inv_tau)[None, :]
    rest = np.where(pos_wins, w_top * Hx, w_top * H[..., dv]) + np.where(bos_wins, 0.0, w_bos)
    tot = ties + rest
    return num / tot[..., None], hard, rest / tot, ties


#: below this exponent ``exp`` is exactly 0.0 in float64 (the true value is under 2^-1096, far below
#: half the least subnormal 2^-1075), so :func:`_windowed` writes 0.0 without calling ``exp``
#: there: the same bits, without libm's slow path for arguments below −708 (ISSUE 16)
EXP_ZERO = -760.0


def _windowed(Q, K, V, centre, offsets, soft, inv_tau):
    """Softmax and AHA over BOS and the keys ``centre + t`` (``t`` in ``offsets``; ``centre=None``:
    the row ``i`` itself) with ``1 ≤ j ≤ i`` (mask past), in two passes of ``O(B·N·(k + dv))`` per
    offset.

    A score is ``einsum("bnk,bnk->bn")`` of the query and the key (for ``k = 2`` formed from the key's
    gathered columns); a score outside the mask is ``−inf``."""
    B, N, dv = V.shape
    k = Q.shape[-1]
    rows = np.arange(N)[None, :]
    base = (np.arange(B) * N)[:, None]  # flat row offsets for gathers
    Kf, Vf = K.reshape(B * N, -1), V.reshape(B * N, -1)
    s_bos = np.einsum("bnk,bk->bn", Q, K[:, 0])
    # two key dimensions (the parity and pe heads): Q_i0·K_j0 + Q_i1·K_j1 from gathered key columns,
    # the two products and one sum einsum("bnk,bnk->bn") forms (checked bit for bit on the language
    # tests' words: benchmarks/engine_identity.py); other k: einsum itself
    Qc = [np.ascontiguousarray(Q[..., l]) for l in range(k)] if k == 2 else []
    Kc = [np.ascontiguousarray(K[..., l]) for l in range(k)] if k == 2 else []
    Kflat = [x.reshape(-1) for x in Kc]
    prod = np.empty((B, N)) if k == 2 else None

    band = centre is None  # key i + t for row i: shifted slices instead of gathers

    def shifted(A, t):  # A[:, i + t] at row i (t ≤ 0), zeros where i + t < 0
        out = np.zeros_like(A)
        out[:, -t:] = A[:, :N + t]
        return out

    def dot(q, kk, out):  # Σ_l q_l·k_l in order of l, into out
        np.multiply(q[0], kk[0], out=out)
        for l in range(1, k):
            np.multiply(q[l], kk[l], out=prod[:, :out.shape[1]])
            out += prod[:, :out.shape[1]]
        return out

    cache = {} if B * N * len(offsets) <= 2 * 10**7 else None  # pass-1 scores, reused by pass 2

    def at(t, values=False):
        if cache is not None and t in cache:
            s, valid, flat = cache.pop(t)
        elif band:
            valid = np.broadcast_to(np.arange(N) + t >= 1, (B, N))
            if k != 2:
                s = np.where(valid, np.einsum("bnk,bnk->bn", Q, shifted(K, t)), -np.inf)
            else:
                lo = max(1 - t, 0)  # rows i with key i + t ≥ 1; the others are outside the mask
                s = np.full((B, N), -np.inf)
                if lo < N:
                    with np.errstate(over="ignore", invalid="ignore"):  # (as einsum: no warnings)
                        dot([q[:, lo:] for q in Qc], [x[:, lo + t:N + t] for x in Kc], s[:, lo:])
            flat = None
        else:
            j = centre + t
            valid = (j >= 1) & (j <= rows)
            flat = base + np.clip(j, 0, N - 1)
            if k != 2:
                s = np.where(valid, np.einsum("bnk,bnk->bn", Q, np.take(Kf, flat, axis=0)), -np.inf)
            else:
                with np.errstate(over="ignore", invalid="ignore"):  # (as einsum: no warnings)
                    s = dot(Qc, [np.take(x, flat) for x in Kflat], np.empty((B, N)))
                np.copyto(s, -np.inf, where=~valid)
        if not values:
            if cache is not None:
                cache[t] = (s, valid, flat)
            return s, valid, None
        return s, valid, (shifted(V, t) if band else np.take(Vf, flat, axis=0))

    smax = s_bos.copy()
    for t in offsets:
        s, _, _ = at(t)
        np.maximum(smax, s, out=smax)
    ties = (s_bos == smax).astype(np.int64)
    hard = np.where((s_bos == smax)[..., None], V[:, :1], 0.0)
    if soft:
        with np.errstate(over="ignore", invalid="ignore"):
            w_bos = np.exp((s_bos - smax) * inv_tau)
        rest = np.where(s_bos == smax, 0.0, w_bos)
        num = w_bos[..., None] * V[:, :1]
        z = np.empty((B, N))
        w = np.empty((B, N))
        keep = np.empty((B, N), dtype=bool)
        tmp = np.empty((B, N, dv))
    is_max = np.empty((B, N), dtype=bool)
    for t in offsets:
        s, valid, vj = at(t, values=True)
        np.equal(s, smax, out=is_max)
        is_max &= valid
        ties += is_max
        hard += np.where(is_max[..., None], vj, 0.0)
        if soft:
            # w = exp((s − smax)/τ) where valid, else 0.0; rest += w off the argmax set (rest is a sum
            # of +0.0 and non-negative terms: adding +0.0 on the argmax set changes no bit)
            with np.errstate(over="ignore", invalid="ignore"):
                np.subtract(s, smax, out=z)
                z *= inv_tau
                np.less(z, EXP_ZERO, out=keep)
                np.logical_not(keep, out=keep)
                keep &= valid
                w[...] = 0.0
                np.exp(z, out=w, where=keep)
            np.logical_not(is_max, out=keep)
            np.add(rest, w, out=rest, where=keep)
            np.multiply(w[..., None], vj, out=tmp)
            num += tmp
    hard = hard / ties[..., None]
    if not soft:
        return None, hard, None, ties
    tot = ties + rest
    return num / tot[..., None], hard, rest / tot, ties


# --------------------------------------------------------------------------------------------
# layer normalisation


@dataclass
class LayerNorm:
    """Layer normalisation of ``[F_k, −F_k]`` for each column ``k`` of ``W``, added to coordinate
    ``outs[k]`` of the residual (a sublayer of a block, placed among its MLPs).

    ``F = x W`` (``W``: ``(d, m)``); ``LN([F, −F]) = ([F, −F] − mean)/√(var + ε)`` with mean 0 and
    variance ``F²`` (no gain or bias), so the first component is ``y = F/√(F² + ε)``.
    ``eps`` is ε_LN as a float, ``eps_exact`` the exact value the bounds use.  The layer norm is not
    attention, so the hard and the soft transformer share it (with this ε): its error against the
    exact sign has its own claim, and :func:`observe_layernorms` observes it directly.  THEORY §5 (a).
    """

    name: str
    W: np.ndarray
    outs: np.ndarray
    eps: float
    eps_exact: Fraction = Fraction(0)
    nodes: tuple[str, ...] = ()

    def validate(self, d: int, where: str) -> None:
        if not isinstance(self.W, np.ndarray) or self.W.ndim != 2 or self.W.shape[0] != d:
            raise ModelFormatError(f"{where}.W: expected an array of shape ({d}, m)")
        if not np.all(np.isfinite(self.W)):
            raise ModelFormatError(f"{where}.W: contains NaN or infinite entries")
        if self.outs.shape != (self.W.shape[1],) or np.any(self.outs < 0) or np.any(self.outs >= d):
            raise ModelFormatError(f"{where}.outs: expected {self.W.shape[1]} residual indices below {d}")
        if not (np.isfinite(self.eps) and self.eps >= 0):
            raise ModelFormatError(f"{where}.eps: epsilon must be finite and >= 0, got {self.eps!r}")

    def normalise(self, x: np.ndarray) -> np.ndarray:
        """``y`` of shape ``(B, N, m)`` for the residual ``x`` ``(B, N, d)``."""
        F = x @ self.W
        v = np.stack([F, -F], axis=-1)
        mu = v.mean(axis=-1, keepdims=True)
        var = ((v - mu) ** 2).mean(axis=-1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            y = (v - mu) / np.sqrt(var + self.eps)
        return y[..., 0]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        out = x.copy()
        out[..., self.outs] += self.normalise(x)
        return out

    def reads(self) -> list[int]:
        """Residual coordinates the layer reads (rows of ``W`` with a nonzero entry)."""
        return [int(r) for r in np.flatnonzero(np.any(self.W != 0, axis=1))]

    def column_updates(self, get) -> dict[int, np.ndarray]:
        """Engine protocol for non-MLP sublayers: ``{coordinate: update (B, N)}`` given ``get(c)``,
        the residual column ``c``.  Computes ``y = F/√(F² + ε)`` exactly as :meth:`normalise`
        does (there the mean of ``[F, −F]`` is exactly 0 and the variance exactly ``F²``)."""
        out: dict[int, np.ndarray] = {}
        rows = self.reads()
        for k in range(self.W.shape[1]):
            F = None
            for r in rows:
                w = float(self.W[r, k])
                if w == 0.0:
                    continue
                term = get(r) * w
                F = term if F is None else F + term
            if F is None:
                continue
            with np.errstate(divide="ignore", invalid="ignore"):
                y = F / np.sqrt(F * F + self.eps)
            c = int(self.outs[k])
            out[c] = out[c] + y if c in out else y
        return out


def layernorm_error(F: np.ndarray, eps: float) -> np.ndarray:
    """``(1 − |F|/√(F² + ε))/2`` — the LN comparator's error at input ``F`` — evaluated without
    cancellation as ``ε/(2R(R + |F|))``, ``R = √(F² + ε)`` (relative rounding ≤ 8u)."""
    a = np.abs(F)
    R = np.sqrt(F * F + eps)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = eps / (2 * R * (R + a))
    return np.where(eps == 0, 0.0, e)


def layernorms(model: Transformer) -> list[LayerNorm]:
    """The :class:`LayerNorm` sublayers of ``model``."""
    return [m for blk in model.blocks for m in blk.mlps if isinstance(m, LayerNorm)]


def layernorm_errors(model: Transformer, x: np.ndarray) -> dict[str, np.ndarray]:
    """Per LN comparator node: its error ``(B, N)`` on the residual stream ``x`` ``(B, N, d)``
    (the final residual of a forward pass: the LN inputs are never overwritten)."""
    out = {}
    for ln in layernorms(model):
        F = x @ ln.W
        for k, v in enumerate(ln.nodes):
            out[v] = layernorm_error(F[..., k], ln.eps)
    return out


def observe_layernorms(model: Transformer, words, inv_tau, *, batch: int = 512):
    """Numeric observation of the LN comparators (the engine observes attention heads only):
    a :class:`softhard.constructions.simulate.RunSummary` whose ``heads`` hold, per LN node and
    length, the largest error (:func:`layernorm_error`) over the words of that length.

    ``inv_tau``: number or function of n (used only by the attention heads of the forward pass).
    The float64 rounding of the error itself is covered by the node bound's ``rounding`` allowance.
    """
    summary = RunSummary()
    if not layernorms(model):
        return summary
    for n, chunk in length_batches(words, batch):  # lazily, O(chunk) memory
        it = float(inv_tau(n) if callable(inv_tau) else inv_tau)
        x = forward(model, model.encode(chunk), mode="soft", inv_tau=it).x
        part = RunSummary()
        for v, e in layernorm_errors(model, x).items():
            e = e[:, 1:]
            bi, ri = np.unravel_index(int(np.argmax(e)), e.shape)
            part.heads[v] = {n: HeadObservation(
                node=v, n=n, inv_tau=it, inputs=len(chunk), leak=float(e[bi, ri]), word=short_word(chunk[bi]),
                row=int(ri) + 1, output_error=float(e[bi, ri]), allowance_rel=0.0, path="layernorm")}
        summary.merge(part)
    return summary


def adversarial_layernorm_words(model: Transformer, n: int, *, max_period: int = 3) -> dict[str, tuple[str, ...]]:
    """Per LN comparator node, the periodic word of length ``n`` (see
    :func:`softhard.constructions.simulate.periodic_words`) with the largest LN error — the
    counterpart, for layer norms, of :func:`softhard.constructions.simulate.adversarial_words`
    (which searches by attention leak).  Periodic words such as ``(ab)^k`` keep the count difference
    in {0, ±1}: the worst case ``g(n) ∈ {0, −1}``.  Returns ``{node: word}`` (empty without LNs)."""
    if not layernorms(model):
        return {}
    cands = periodic_words(model.alphabet, n, max_period)
    x = forward(model, model.encode(cands), mode="soft", inv_tau=1.0).x
    return {v: cands[int(np.argmax(e[:, 1:].max(axis=1)))] for v, e in layernorm_errors(model, x).items()}


# --------------------------------------------------------------------------------------------
# weights


def parity_regime_error(where: str, regime: str) -> ParameterError:
    """The error of an even()/odd() (``where``: the formula's test, or a graph node) in a regime
    other than P (THEORY §5: parity heads need the positional embedding (j, j², (−1)^j))."""
    return ParameterError(f"{where}: even()/odd() needs the positional embedding (j, j^2, (-1)^j): use --regime P "
                          f"(THEORY §5), not {regime}")


def check_graph(g: nx.DiGraph, regime: str) -> None:
    """Raise :class:`ParameterError` if the counting nodes of ``g`` need a positional embedding
    that ``regime`` does not have (parity needs regime P, the ``pe`` comparator U or P), or a
    comparator's coefficient or constant is beyond what its float64 weights hold exactly
    (:data:`MAX_COEFFICIENT`; the reference semantics compute in exact integers at any size)."""
    for v, a in g.nodes(data=True):
        if a["op"] == "compare":
            check_comparator_weights(v, a["terms"], a["const"])
        if a["op"] == "parity" and regime != "P":
            raise parity_regime_error(f"node {v!r}", regime)
        if a["op"] == "compare" and a["method"] == "pe" and regime not in ("U", "P"):
            raise ParameterError(f"node {v!r}: comparator 'pe' needs an unbounded positional embedding: use "
                                 f"--regime U (or P), or --comparator head|ln, not regime {regime}")


def input_weights(g: nx.DiGraph, v: str, ix: dict[str, int], d: int) -> np.ndarray:
    """The column ``w`` (``(d,)``) with ``x_i·w = F(i) = Σ_k a_k C_k/(i+1) + (c + ½)/(i+1)`` for the
    comparator node ``v``."""
    a = g.nodes[v]
    w = np.zeros(d)
    for u, c in a["terms"]:
        w[ix[u]] += float(c)
    w[ix[a["bos"]]] += float(a["const"]) + 0.5
    return w


def counting_heads(g: nx.DiGraph, ix: dict[str, int], regime: str, beta: Fraction) -> list[tuple[int, Head]]:
    """``(layer, head)`` for the counting attention nodes of ``g`` (module docstring): one shared
    uniform head per layer, one head per ``head``/``pe`` comparator and per parity node.

    ``ix`` maps residual labels to indices.  Raises :class:`ParameterError` (via
    :func:`check_graph`) for a node the regime cannot build.
    """
    check_graph(g, regime)
    d = len(ix)
    out: list[tuple[int, Head]] = []
    order = list(nx.topological_sort(g))
    by_layer: dict[int, list[str]] = {}
    for v in order:
        if g.nodes[v]["op"] == "uniform":
            by_layer.setdefault(g.nodes[v]["layer"], []).append(v)
    for layer, us in sorted(by_layer.items()):
        WV = np.zeros((d, len(us)))
        WO = np.zeros((len(us), d))
        for k, u in enumerate(us):
            val = g.nodes[u]["value"]
            WV[ix["bos"] if val is None else ix[val], k] = 1.0
            WO[k, ix[u]] = 1.0
        out.append((layer, CountingHead(name=f"uniform@{layer}", W_Q=np.zeros((d, 1)), W_K=np.zeros((d, 1)),
                                        W_V=WV, W_O=WO, mask="past", rule="AHA", node=None, shape="uniform")))
    for v in order:
        a = g.nodes[v]
        if a["op"] not in ("compare", "parity") or a["kind"] != "attn":
            continue
        WO = np.zeros((1, d))
        WO[0, ix[f"raw:{v}"]] = 1.0
        if a["op"] == "compare":
            WV = np.zeros((d, 1))
            WV[ix["one"], 0] = 1.0
            WQ = np.zeros((d, 3))
            WQ[:, 0] = input_weights(g, v, ix, d)
            WK = np.zeros((d, 3))
            if a["method"] == "head":
                slope = float(beta) if regime == "T" else 1.0
                WQ[ix["one"], 1] = 1.0
                WQ[ix["pos"], 2] = 1.0
                WK[ix["one"], 0] = 1.0
                WK[ix["pos"], 1] = slope
                WK[ix["bos"], 2] = slope
                head: Head = CountingHead(name=v, W_Q=WQ, W_K=WK, W_V=WV, W_O=WO, mask="past", rule="AHA",
                                          node=v, shape="tiebreak")
            else:  # pe: F(i)(j+1) − λ(i − j)
                WQ[ix["one"], 1] = 1.0
                WQ[ix["pos"], 2] = -1.0
                WK[ix["pos"], 0] = 1.0
                WK[ix["one"], 0] = 1.0
                WK[ix["pos"], 1] = float(PE_SLOPE)
                WK[ix["one"], 2] = float(PE_SLOPE)
                head = CountingHead(name=v, W_Q=WQ, W_K=WK, W_V=WV, W_O=WO, mask="past", rule="AHA", node=v,
                                    shape="band", slope=float(PE_SLOPE))
        else:  # parity: f·j − b·j²/2, value [j even]
            WQ = np.zeros((d, 2))
            WQ[ix[a["count"]], 0] = 1.0
            WQ[ix[a["bos"]], 1] = 1.0
            WK = np.zeros((d, 2))
            WK[ix["pos"], 0] = 1.0
            WK[ix["pos2"], 1] = -0.5
            WV = np.zeros((d, 1))
            WV[ix["sgn"], 0] = 0.5
            WV[ix["one"], 0] = 0.5
            WV[ix["bos"], 0] = 1.0
            head = CountingHead(name=v, W_Q=WQ, W_K=WK, W_V=WV, W_O=WO, mask="past", rule="AHA", node=v,
                                shape="parity")
        out.append((a["layer"], head))
    return out


def layernorm_sublayer(g: nx.DiGraph, nodes: list[str], ix: dict[str, int], eps: Fraction, name: str) -> LayerNorm:
    """One :class:`LayerNorm` sublayer computing ``y`` for each ``ln`` comparator in ``nodes``
    into its ``raw:<node>`` coordinate."""
    d = len(ix)
    W = np.stack([input_weights(g, v, ix, d) for v in nodes], axis=1)
    outs = np.array([ix[f"raw:{v}"] for v in nodes], dtype=np.int64)
    return LayerNorm(name=name, W=W, outs=outs, eps=float(eps), eps_exact=eps, nodes=tuple(nodes))


@dataclass
class CleanupSpec:
    """The clean-up ``round_η(a·raw + b)`` of one node (``b`` multiplies the ``one`` coordinate, so
    the result is 0 at BOS): ``a, b = 1, 0`` for heads, ``½, ½`` for layer norm (``y ∈ [−1, 1]``)."""

    node: str
    step: int
    a: float = 1.0
    b: float = 0.0


def cleanup_spec(g: nx.DiGraph, v: str) -> CleanupSpec:
    """Where and how the raw output of the cleaned node ``v`` is rounded (see :class:`CleanupSpec`)."""
    a = g.nodes[v]
    if a["kind"] == "layernorm":
        return CleanupSpec(node=v, step=a["step"], a=0.5, b=0.5)
    return CleanupSpec(node=v, step=1)
