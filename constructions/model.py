"""Explicit transformers as NumPy arrays, run with hard (AHA/UHA) or soft (softmax) attention.

This is the one numeric representation every construction compiles to (temporal logic, counting,
hand-written and compiled models): token and positional embeddings, blocks of attention heads
followed by residual ReLU MLPs, and a readout.  Position 0 is BOS and is always attendable
(THEORY §0).

The forward pass is batched (``tokens`` has shape ``(B, n)``).  Internally the residual stream is
kept coordinate-major (``(d, B, n+1)``) and weights are applied by their non-zero entries, so a
compiled model (a few non-zeros per column) costs O(non-zeros) passes per position; dense weights
go through BLAS.  Attention has two paths behind one interface (:func:`run_head`):

* **dense** — scores ``Q Kᵀ`` for a chunk of queries at a time against only the keys the mask can
  reach, memory ``O(chunk · n)``; the result does not depend on ``chunk``.
* **structured** — exact ``O(n)`` evaluation for heads whose scores have the form
  ``s_ij = a(j) + q(i)·g(j)`` with ``g`` taking a few values ("groups") and ``a`` strictly
  increasing, within each group, towards the query (THEORY §4 selections have this shape;
  ISSUE 7).  Within a group the best visible key is the last one, and the soft weight of the
  others relative to it, ``E_t = Σ_{s<t} exp((a_s − a_t)/τ)`` (and the value-weighted ``F_t``), obey
  the first-order recurrence ``E_t = c_t (E_{t−1} + 1)`` with ``c_t = exp(−(a_t − a_{t−1})/τ) ≤ 1``.
  :func:`_affine_scan` evaluates it in O(n) work (sequential inside fixed-size blocks, vectorised
  across blocks, carries by recursion on the block ends), entirely in the *relative* frame: every
  stored number is a sum of weights relative to the latest member, so it lies in ``[0, n]`` and
  no exponent is ever formed from an absolute score.  Exponents come from differences of
  neighbouring members, whose rounding errors telescope: the computed weight of a term at
  relative exponent ``x`` is off by ``≤ 2u·x + O(L·u)`` relatively (``L`` = factors in its chain),
  never ``n·u·|a|/τ`` as with a plain ``logaddexp.accumulate`` of ``a/τ``.  The engine detects the
  structure from the actual residual stream and weights and falls back to dense when it does
  not hold.

Both paths compute, per head and query row, the soft output, the hard (AHA/UHA) output on the
*same* residual stream, and the leak ``δ_i = Σ_{j∉A_i} α_ij`` (THEORY §0, §2) as ``S/(a+S)`` with
``S`` summed relative to the row maximum, so a leak of 1e-300 is resolved, not rounded to 0.
:func:`forward_pair` runs the hard and the soft model together, sharing all work while their
residual streams agree (they differ only in the raw attention coordinates before a clean-up).
"""

from __future__ import annotations

import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from .errors import ModelFormatError, ParameterError

MASKS = ("strict_past", "past", "strict_future", "future", "none")
RULES = ("AHA", "UHA-leftmost", "UHA-rightmost")


@dataclass
class Head:
    """One attention head.

    Shapes: ``W_Q``, ``W_K``: ``(d, k)``; ``W_V``: ``(d, dv)``; ``W_O``: ``(dv, d)``.
    Score ``s_ij = <x_i W_Q, x_j W_K>`` (no extra scaling: fold any 1/√k into ``W_Q``).
    ``mask`` is one of :data:`MASKS` (BOS, position 0, is always attendable); ``rule`` is the
    hard-attention rule, one of :data:`RULES`.  ``node`` names the computation-graph node the
    head implements (or ``None``).
    """

    name: str
    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray
    mask: str = "strict_past"
    rule: str = "AHA"
    node: str | None = None

    def validate(self, d: int, where: str) -> None:
        for nm in ("W_Q", "W_K", "W_V", "W_O"):
            a = getattr(self, nm)
            if not isinstance(a, np.ndarray) or a.ndim != 2:
                raise ModelFormatError(f"{where}.{nm}: expected a 2-d array")
            if not np.all(np.isfinite(a)):
                raise ModelFormatError(f"{where}.{nm}: contains NaN or infinite entries")
        if self.W_Q.shape[0] != d or self.W_K.shape[0] != d or self.W_V.shape[0] != d:
            raise ModelFormatError(f"{where}: W_Q/W_K/W_V must have {d} rows (d_model)")
        if self.W_Q.shape[1] != self.W_K.shape[1]:
            raise ModelFormatError(f"{where}: W_Q has {self.W_Q.shape[1]} columns, W_K {self.W_K.shape[1]}")
        if self.W_O.shape != (self.W_V.shape[1], d):
            raise ModelFormatError(f"{where}.W_O: expected shape {(self.W_V.shape[1], d)}, got {self.W_O.shape}")
        if self.mask not in MASKS:
            raise ModelFormatError(f"{where}.mask: {self.mask!r} is not one of {', '.join(MASKS)}")
        if self.rule not in RULES:
            raise ModelFormatError(f"{where}.rule: {self.rule!r} is not one of {', '.join(RULES)}")


@dataclass
class MLP:
    """Residual ReLU MLP: ``x ← x + relu(x W1 + b1) W2 + b2``.

    Shapes: ``W1 (d, h)``, ``b1 (h,)``, ``W2 (h, d)``, ``b2 (d,)``.
    """

    name: str
    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray
    nodes: tuple[str, ...] = ()

    def validate(self, d: int, where: str) -> None:
        for nm in ("W1", "b1", "W2", "b2"):
            a = getattr(self, nm)
            if not isinstance(a, np.ndarray):
                raise ModelFormatError(f"{where}.{nm}: expected an array")
            if not np.all(np.isfinite(a)):
                raise ModelFormatError(f"{where}.{nm}: contains NaN or infinite entries")
        h = self.W1.shape[1] if self.W1.ndim == 2 else -1
        if self.W1.shape != (d, h) or self.b1.shape != (h,) or self.W2.shape != (h, d) or self.b2.shape != (d,):
            raise ModelFormatError(
                f"{where}: shapes W1 {self.W1.shape}, b1 {self.b1.shape}, W2 {self.W2.shape}, "
                f"b2 {self.b2.shape} do not fit d_model={d}")

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return x + np.maximum(x @ self.W1 + self.b1, 0.0) @ self.W2 + self.b2


@dataclass
class Block:
    """Attention heads (run in parallel on the same input) followed by MLPs (in sequence)."""

    heads: list[Head] = field(default_factory=list)
    mlps: list[MLP] = field(default_factory=list)


PositionalFn = Callable[[int], np.ndarray]


@dataclass
class Transformer:
    """An explicit transformer.

    * ``alphabet``: the input symbols; token id ``t+1`` is ``alphabet[t]``, id 0 is BOS.
    * ``token_embedding``: ``(|alphabet|+1, d)``, row 0 the BOS embedding.
    * ``positional(n)``: ``(n+1, d)`` positional embedding for a word of length ``n`` (row 0 for
      BOS); ``positional_name`` documents the family (e.g. ``"j/n"``), ``bounded`` says whether its
      entries are bounded independently of ``n`` (THEORY §1: regime T vs regime U).
    * ``blocks``: applied in order.
    * ``labels``: one name per residual coordinate.
    * ``outputs``: residual coordinates read out (by label).
    """

    alphabet: tuple[str, ...]
    token_embedding: np.ndarray
    positional: PositionalFn
    blocks: list[Block]
    labels: list[str]
    outputs: list[str]
    positional_name: str = "custom"
    bounded: bool = True
    meta: dict = field(default_factory=dict)

    @property
    def d(self) -> int:
        return self.token_embedding.shape[1]

    def index(self, label: str) -> int:
        try:
            return self.labels.index(label)
        except ValueError:
            raise ModelFormatError(f"no residual coordinate labelled {label!r}") from None

    def validate(self) -> None:
        d = self.d
        if self.token_embedding.shape != (len(self.alphabet) + 1, d):
            raise ModelFormatError(
                f"token_embedding: expected shape {(len(self.alphabet) + 1, d)}, got {self.token_embedding.shape}")
        if len(self.labels) != d:
            raise ModelFormatError(f"labels: {len(self.labels)} labels for d_model={d}")
        for li, blk in enumerate(self.blocks):
            for hi, h in enumerate(blk.heads):
                h.validate(d, f"block {li} head {hi} ({h.name})")
            for mi, m in enumerate(blk.mlps):
                m.validate(d, f"block {li} mlp {mi} ({m.name})")

    def encode(self, words: Sequence[Sequence[str]]) -> np.ndarray:
        """Token ids ``(B, n)`` for words of equal length ``n`` (ids start at 1; 0 is BOS).

        A word may be any sequence of alphabet symbols (a tuple, a list, or a ``str`` when every
        symbol is one character).  Raises :class:`ParameterError` for unequal lengths or a symbol
        outside the alphabet.
        """
        words = list(words)
        lookup = {s: k + 1 for k, s in enumerate(self.alphabet)}
        lengths = {len(w) for w in words}
        if len(lengths) != 1:
            raise ParameterError("encode: all words in a batch must have the same length")
        n = lengths.pop()
        fast = _encode_single_chars(self.alphabet, words, n)
        if fast is not None:
            return fast
        try:
            return np.array([[lookup[s] for s in w] for w in words], dtype=np.int64).reshape(len(words), -1)
        except KeyError as e:
            raise ParameterError(f"symbol {e.args[0]!r} is not in the alphabet {list(self.alphabet)}") from None

    def embed(self, tokens: np.ndarray, dtype=np.float64) -> np.ndarray:
        """Residual stream after embedding: ``(B, n+1, d)``."""
        B, n = tokens.shape
        if n < 1:
            raise ParameterError("n < 1: a word must have at least one symbol")
        ids = np.concatenate([np.zeros((B, 1), dtype=np.int64), tokens], axis=1)
        pe = np.asarray(self.positional(n), dtype=np.float64)
        if pe.shape != (n + 1, self.d):
            raise ModelFormatError(f"positional({n}) returned shape {pe.shape}, expected {(n + 1, self.d)}")
        x = self.token_embedding[ids] + pe[None, :, :]
        return x.astype(dtype, copy=False)


# --------------------------------------------------------------------------------------------
# encoding and embedding helpers


def _encode_single_chars(alphabet: Sequence[str], words: list, n: int) -> np.ndarray | None:
    """Vectorised :meth:`Transformer.encode` when every symbol is one character (else ``None``).

    Each word becomes one ``str`` (``"".join``) whose code points are mapped through a lookup
    table, so a word of 10^6 symbols costs milliseconds instead of a Python loop per symbol.
    """
    if not words or n == 0 or not all(isinstance(s, str) and len(s) == 1 for s in alphabet):
        return None
    cps = np.array([ord(s) for s in alphabet], dtype=np.int64)
    lut = np.zeros(int(cps.max()) + 2, dtype=np.int64)  # 0 = not in the alphabet
    lut[cps] = np.arange(1, len(alphabet) + 1)
    out = np.empty((len(words), n), dtype=np.int64)
    for b, w in enumerate(words):
        try:
            s = w if isinstance(w, str) else "".join(w)
        except TypeError:
            return None
        if len(s) != n:  # some element was not a single character: let the general path report it
            return None
        cp = np.frombuffer(s.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
        np.minimum(cp, len(lut) - 1, out=cp)
        ids = lut[cp]
        if not ids.all():
            bad = s[int(np.flatnonzero(ids == 0)[0])]
            raise ParameterError(f"symbol {bad!r} is not in the alphabet {list(alphabet)}")
        out[b] = ids
    return out


_PE_CACHE: "OrderedDict[tuple[int, int], tuple[object, dict[int, np.ndarray]]]" = OrderedDict()
_PE_LOCK = threading.Lock()
_PE_CACHE_SIZE = 4


def _pe_columns(model: Transformer, n: int) -> dict[int, np.ndarray]:
    """Non-zero columns of ``model.positional(n)`` as ``{c: (n+1,) array}`` (cached per function, n).

    ``positional`` is assumed to be a pure function of ``n`` (it is for every model we build); the
    cache holds the last few lengths so repeated batches of one length do not rebuild a
    ``(n+1, d)`` array each time.
    """
    fn = model.positional
    key = (id(fn), n)
    with _PE_LOCK:
        hit = _PE_CACHE.get(key)
        if hit is not None and hit[0] is fn:
            _PE_CACHE.move_to_end(key)
            return hit[1]
    pe = np.asarray(fn(n), dtype=np.float64)
    if pe.shape != (n + 1, model.d):
        raise ModelFormatError(f"positional({n}) returned shape {pe.shape}, expected {(n + 1, model.d)}")
    cols = {int(c): np.ascontiguousarray(pe[:, c]) for c in np.flatnonzero(np.any(pe != 0, axis=0))}
    with _PE_LOCK:
        _PE_CACHE[key] = (fn, cols)
        while len(_PE_CACHE) > _PE_CACHE_SIZE:
            _PE_CACHE.popitem(last=False)
    return cols


def _embed_cols(model: Transformer, tokens: np.ndarray) -> np.ndarray:
    """Residual stream after embedding, coordinate-major: ``(d, B, n+1)`` (same values as
    :meth:`Transformer.embed`, transposed)."""
    tokens = np.asarray(tokens)
    if tokens.ndim != 2:
        raise ParameterError(f"tokens must have shape (B, n), got {tokens.shape}")
    B, n = tokens.shape
    if n < 1:
        raise ParameterError("n < 1: a word must have at least one symbol")
    E = model.token_embedding
    if tokens.size and (tokens.min() < 0 or tokens.max() >= E.shape[0]):
        raise ParameterError(f"token ids must lie in 0..{E.shape[0] - 1}")
    pe = _pe_columns(model, n)
    d = model.d
    X = np.empty((d, B, n + 1))
    for c in range(d):
        col = E[:, c]
        xc = X[c]
        xc[:, 0] = col[0]
        tv = col[1:]
        if np.all(tv == tv[0]):
            xc[:, 1:] = tv[0]
        else:
            xc[:, 1:] = col[tokens]
        if c in pe:
            xc += pe[c][None, :]
    return X


# --------------------------------------------------------------------------------------------
# residual stream columns


class _Cols:
    """Column access to a residual stream ``(d, B, N)`` with an optional overlay ``{c: (B, N)}``
    (the hard stream of :func:`forward_pair`), plus per-column caches of max |x| and of the
    discrete levels over the real positions (invalidated with :meth:`touched`)."""

    __slots__ = ("base", "overlay", "d", "B", "N", "_maxabs", "_levels", "_strided")

    def __init__(self, base: np.ndarray, overlay: dict | None = None):
        self.base = base
        self.overlay = overlay
        self._strided = None if base[0].flags.c_contiguous else {}
        self.d, self.B, self.N = base.shape
        self._maxabs: dict[int, float] = {}
        self._levels: dict[int, object] = {}

    def get(self, c: int) -> np.ndarray:
        if self.overlay is not None:
            v = self.overlay.get(c)
            if v is not None:
                return v
        if self._strided is not None:  # a (B, N, d) array seen through a transpose: copy columns once
            v = self._strided.get(c)
            if v is None:
                v = self._strided[c] = np.ascontiguousarray(self.base[c])
            return v
        return self.base[c]

    def contiguous(self) -> bool:
        return not self.overlay and self.base.flags.c_contiguous

    def touched(self, c: int) -> None:
        self._maxabs.pop(c, None)
        self._levels.pop(c, None)

    def maxabs(self, c: int) -> float:
        v = self._maxabs.get(c)
        if v is None:
            x = self.get(c)
            v = float(max(x.max(), -x.min())) if x.size else 0.0
            self._maxabs[c] = v
        return v

    def levels(self, c: int, max_levels: int):
        """``(values, index)`` if column ``c`` takes at most ``max_levels`` distinct values on the
        real positions (``index``: ``(B, N−1)`` int8 level of each, or ``None`` for one level);
        ``None`` if it takes more."""
        hit = self._levels.get(c)  # invalidated by touched(c)
        if hit is not None and hit[0] == max_levels:
            return hit[1]
        res = _discrete_levels(self.get(c)[:, 1:], max_levels)
        self._levels[c] = (max_levels, res)
        return res


def _discrete_levels(x: np.ndarray, max_levels: int):
    if x.size == 0:
        return np.zeros(1), None
    lo, hi = x.min(), x.max()
    if lo == hi:
        return np.array([lo]), None
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return None
    sample = np.unique(np.concatenate([x[0, :1024], x[-1, -1024:]]))
    if len(sample) > max_levels:
        return None
    is_hi = x == hi
    both = is_hi | (x == lo)
    if both.all():
        return np.array([lo, hi]), is_hi.view(np.int8)
    found = [lo, hi]
    rem = ~both
    while rem.any():
        if len(found) >= max_levels:
            return None
        v = x[rem].min()
        found.append(v)
        rem &= x != v
    vals = np.array(sorted(found))
    return vals, np.searchsorted(vals, x).astype(np.int8)


def _nonzero_rows(W: np.ndarray) -> np.ndarray:
    return np.flatnonzero(np.any(W != 0, axis=1))


def _lin(cols: _Cols, W: np.ndarray) -> np.ndarray:
    """``out[l] = Σ_r W[r, l]·x[r]``: ``(k, B, N)``.  Sparse weights are applied term by term
    (rows in increasing order); dense ones through one BLAS product."""
    d, k = W.shape
    out = np.zeros((k, cols.B, cols.N))
    rows = _nonzero_rows(W)
    nnz = int(np.count_nonzero(W))
    if nnz == 0:
        return out
    if nnz > max(16, 2 * (len(rows) + k)) and cols.contiguous():
        Xr = cols.base.reshape(d, -1) if len(rows) == d else cols.base[rows].reshape(len(rows), -1)
        return (W[rows].T @ Xr).reshape(k, cols.B, cols.N)
    tmp = None
    for l in range(k):
        first = True
        for r in np.flatnonzero(W[:, l]):
            w = float(W[r, l])
            x = cols.get(int(r))
            if first:
                if w == 1.0:
                    out[l] = x
                else:
                    np.multiply(x, w, out=out[l])
                first = False
            elif w == 1.0:
                out[l] += x
            elif w == -1.0:
                out[l] -= x
            else:
                if tmp is None:
                    tmp = np.empty((cols.B, cols.N))
                np.multiply(x, w, out=tmp)
                out[l] += tmp
    return out


def _accumulate(upd: dict, O: np.ndarray, W_O: np.ndarray) -> None:
    """``upd[c] += Σ_l O[l]·W_O[l, c]`` for the non-zero columns of ``W_O`` (``O``: ``(dv, B, N)``)."""
    for c in np.flatnonzero(np.any(W_O != 0, axis=0)):
        c = int(c)
        for l in np.flatnonzero(W_O[:, c]):
            w = float(W_O[l, c])
            t = O[l] if w == 1.0 else O[l] * w
            if c in upd:
                upd[c] += t
            else:
                upd[c] = t.copy() if t is O[l] else t


# --------------------------------------------------------------------------------------------
# attention


@dataclass
class HeadTrace:
    """What one head did on one batch (all arrays indexed ``[batch, query]``).

    ``soft``/``hard``: the head's output before ``W_O`` (``(B, N, dv)``, possibly a strided view);
    ``leak``: ``δ_i`` (``None`` in hard mode); ``ties``: size of the argmax set ``a``;
    ``path``: "structured" or "dense".
    For the rounding allowance (:func:`softhard.constructions.simulate.leak_rounding_allowance`):
    ``score_scale`` bounds ``Σ_l |q_il|·|k_jl|`` over all score entries (from the column maxima of
    the residual stream and ``|W_Q|``, ``|W_K|``), ``key_dim`` is ``k`` and ``rounding_terms`` the
    number ``m`` of roundings in one computed score (``|ŝ − s| ≤ γ_m·score_scale``; 0 = unknown,
    use ``key_dim + 2``).
    """

    soft: np.ndarray | None
    hard: np.ndarray
    leak: np.ndarray | None
    ties: np.ndarray
    path: str
    score_scale: float = 0.0
    key_dim: int = 0
    rounding_terms: int = 0


def _mask_matrix(mask: str, nq: np.ndarray, N: int) -> np.ndarray:
    """Boolean ``(len(nq), N)`` attendability for query indices ``nq`` (BOS column always True).

    The definition every path implements; the dense path only materialises it near the diagonal.
    """
    j = np.arange(N)[None, :]
    i = nq[:, None]
    if mask == "strict_past":
        m = j < i
    elif mask == "past":
        m = j <= i
    elif mask == "strict_future":
        m = j > i
    elif mask == "future":
        m = j >= i
    else:
        m = np.ones((len(nq), N), dtype=bool)
    m = m.copy()
    m[nq == 0, :] = False  # the BOS query row attends to BOS only
    m[:, 0] = True
    return m


def _auto_chunk(N: int) -> int:
    """Query rows per dense chunk: about 2^20 score entries (8 MiB) per chunk."""
    return int(max(16, min(1024, (1 << 20) // max(N, 1))))


def _dense_eval(Q, K, V, mask, rule, inv_tau, soft, chunk):
    """Dense attention for one head.  ``Q``, ``K``: ``(k, B, N)``; ``V``: ``(dv, B, N)``.

    Per batch row and chunk of query rows ``[c0, c1)``, only the keys the mask can reach are
    scored (past masks: ``j < c1``; future masks: BOS and ``j ≥ c0``), and the mask is applied
    elementwise only to the keys in ``[c0, c1]`` (everything else is visible to every row of the
    chunk).  Returns ``(soft (dv,B,N) | None, hard (dv,B,N), leak (B,N) | None, ties (B,N))``.
    """
    k, B, N = Q.shape
    dv = V.shape[0]
    C = int(chunk) if chunk else _auto_chunk(N)
    if C < 1:
        raise ParameterError(f"chunk must be a positive number of query rows, got {chunk!r}")
    hard = np.empty((dv, B, N))
    ties = np.empty((B, N), dtype=np.int64)
    soft_o = np.empty((dv, B, N)) if soft else None
    leak = np.empty((B, N)) if soft else None
    past = mask in ("strict_past", "past")
    future = mask in ("strict_future", "future")
    strict = mask in ("strict_past", "strict_future")
    for b in range(B):
        Qb = np.ascontiguousarray(Q[:, b, :].T)  # (N, k)
        Kb = np.ascontiguousarray(K[:, b, :].T)
        Vb = np.ascontiguousarray(V[:, b, :].T)  # (N, dv)
        for c0 in range(0, N, C):
            c1 = min(N, c0 + C)
            rows = np.arange(c0, c1)
            if past:
                hi = max(1, c1 - 1 if strict else c1)
                jpos = np.arange(hi)
                Kc, Vc = Kb[:hi], Vb[:hi]
            elif future:
                lo = c0 + 1 if strict else c0
                if lo <= 1:
                    jpos = np.arange(N)
                    Kc, Vc = Kb, Vb
                else:
                    jpos = np.concatenate([[0], np.arange(lo, N)])
                    Kc, Vc = Kb[jpos], Vb[jpos]
            else:
                jpos = np.arange(N)
                Kc, Vc = Kb, Vb
            Qc = Qb[c0:c1]
            if k <= 2:
                sc = Qc[:, 0:1] * Kc[:, 0][None, :]
                for l in range(1, k):
                    sc += Qc[:, l:l + 1] * Kc[:, l][None, :]
            else:
                sc = Qc @ Kc.T
            # mask: only keys with positions in [c0, c1] can be invisible to some row of the chunk
            if mask != "none":
                q0 = max(1, int(np.searchsorted(jpos, c0)))
                q1 = int(np.searchsorted(jpos, c1, side="right"))
                if q1 > q0:
                    jj = jpos[q0:q1][None, :]
                    ii = rows[:, None]
                    if mask == "strict_past":
                        inval = jj >= ii
                    elif mask == "past":
                        inval = jj > ii
                    elif mask == "strict_future":
                        inval = jj <= ii
                    else:
                        inval = jj < ii
                    sub = sc[:, q0:q1]
                    np.copyto(sub, -np.inf, where=inval)
            if c0 == 0:
                sc[0, 1:] = -np.inf  # the BOS query row attends to BOS only
            smax = sc.max(axis=1)
            amax = sc == smax[:, None]
            t = np.count_nonzero(amax, axis=1)
            ties[b, c0:c1] = t
            if rule == "AHA":
                hard[:, b, c0:c1] = (np.einsum("cn,nk->kc", amax, Vc) / t[None, :])
            else:
                # the first True of each row of the Boolean argmax set (argmax on bool stops at the
                # first True); rightmost differs only on tied rows, which are re-picked alone
                pick = np.argmax(amax, axis=1)
                if rule == "UHA-rightmost":
                    tied = np.flatnonzero(t > 1)
                    if tied.size:
                        pick[tied] = sc.shape[1] - 1 - np.argmax(amax[tied, ::-1], axis=1)
                hard[:, b, c0:c1] = Vc[pick].T
            if soft:
                np.subtract(sc, smax[:, None], out=sc)
                np.multiply(sc, inv_tau, out=sc)
                _exp_flush(sc, out=sc)  # masked: exp(-inf) = 0; argmax set: exp(0) = 1 exactly
                num = sc @ Vc
                np.copyto(sc, 0.0, where=amax)
                rest = sc.sum(axis=1)
                tot = t + rest
                soft_o[:, b, c0:c1] = (num / tot[:, None]).T
                leak[b, c0:c1] = rest / tot
    return soft_o, hard, leak, ties


@dataclass
class _Struct:
    """A structured head on one batch (see :func:`_structure`): ``a`` ``(B, N)`` or ``None`` (≡ 0),
    ``code`` ``(B, N−1)`` group code of each real key (``None``: one group), ``groups`` a list of
    ``(code, offset)`` with offset ``q(i)·g`` a float or ``(B, N)`` array, ``bos`` ``(B, N)`` the
    BOS score of every query."""

    a: np.ndarray | None
    code: np.ndarray | None
    groups: list
    bos: np.ndarray


def _structure(cols: _Cols, head: Head, Q: np.ndarray, max_groups: int = 8, max_levels: int = 4) -> _Struct | None:
    """Detect ``s_ij = a(j) + q(i)·g(j)`` on this batch; ``None`` if the scores do not have it.

    With ``w_c(i) = Σ_l Q_il W_K[c, l]`` the weight query ``i`` puts on residual coordinate ``c``,
    ``s_ij = Σ_c w_c(i)·x_jc``.  Coordinates the key reads are *discrete* (at most ``max_levels``
    distinct values over the real positions of the batch) or *continuous*; a continuous one must
    have a query-independent weight and goes into ``a(j)``; the discrete ones define the groups
    (at most ``max_groups``), each with score offset ``q(i)·g = Σ_c w_c(i)·value``.  Query row 0
    (BOS) is ignored: it attends to BOS only.
    """
    B, N = cols.B, cols.N
    if N < 2:
        return None
    k = Q.shape[0]
    Qr = Q[:, :, 1:]
    qconst: list[float | None] = []
    for l in range(k):
        v = Qr[l]
        v0 = v[0, 0]
        qconst.append(float(v0) if np.all(v == v0) else None)
    var = [l for l in range(k) if qconst[l] is None]
    WK = head.W_K
    disc, cont = [], []
    for c in _nonzero_rows(WK):
        c = int(c)
        wk = WK[c]
        if all(wk[l] == 0 for l in var):
            w = 0.0
            for l in range(k):
                if wk[l] != 0:
                    w += qconst[l] * float(wk[l])
            if w == 0.0:
                continue
        else:
            w = None
            for l in range(k):
                if wk[l] != 0:
                    t = Q[l] * float(wk[l])
                    w = t if w is None else w + t
        lv = cols.levels(c, max_levels)
        if lv is None:
            if isinstance(w, np.ndarray):
                wr = w[:, 1:]
                if not np.all(wr == wr[0, 0]):
                    return None
                w = float(wr[0, 0])
            cont.append((c, w))
        else:
            disc.append((c, w, lv))
    code = None
    ncodes = 1
    for _, _, (vals, idx) in disc:
        if idx is not None:
            term = idx.astype(np.int32) * ncodes if ncodes > 1 else idx.astype(np.int32)
            code = term if code is None else code + term
        ncodes *= len(vals)
    if code is None:
        used = [0]
    else:
        if ncodes <= (1 << 20):
            used = np.flatnonzero(np.bincount(code.ravel(), minlength=ncodes))
        else:
            used = np.unique(code)
        if len(used) > max_groups:
            return None
    groups = []
    for u in used:
        rem = int(u)
        off = 0.0
        for _, w, (vals, idx) in disc:
            L = len(vals)
            val = float(vals[rem % L])
            rem //= L
            if val != 0.0:
                off = off + w * val
        groups.append((int(u), off))
    a = None
    for c, w in cont:
        x = cols.get(c)
        t = x.copy() if w == 1.0 else x * w
        if a is None:
            a = t
        else:
            a += t
    # BOS score of every query: Σ_l Q_il K_0l
    K0 = np.zeros((B, k))
    for r in _nonzero_rows(WK):
        K0 += cols.get(int(r))[:, 0][:, None] * WK[r][None, :]
    bos = Q[0] * K0[:, 0][:, None]
    for l in range(1, k):
        bos = bos + Q[l] * K0[:, l][:, None]
    return _Struct(a=a, code=code, groups=groups, bos=bos)


#: arguments of exp below this are flushed to weight 0: SVML's exp takes a slow path (5-35 ns
#: instead of 1 ns per element) for results that are not normal numbers, and e^-705 < 2^-1016
#: is far below anything a leak comparison can resolve (see simulate.leak_rounding_allowance).
EXP_FLUSH = -705.0


def _exp_flush(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``exp(x)`` for ``x ≤ 0`` with every ``x < EXP_FLUSH`` (including ``−inf``) mapped to 0."""
    if out is None:
        out = np.empty_like(x)
    low = x < EXP_FLUSH
    np.maximum(x, EXP_FLUSH, out=out)
    with np.errstate(over="ignore"):  # positive arguments only occur where the caller zeroes them
        np.exp(out, out=out)
    if low.any():
        out *= ~low
    return out


def _to_blocks(x: np.ndarray, b: int, nb: int, fill: float) -> np.ndarray:
    """``(b, nb)`` array whose column ``k`` is ``x[k·b:(k+1)·b]`` (padded with ``fill``)."""
    m = len(x)
    out = np.empty((b, nb))
    full = m // b
    if full:
        out[:, :full] = x[:full * b].reshape(full, b).T
    if full < nb:
        r = m - full * b
        out[:r, full] = x[full * b:]
        out[r:, full] = fill
    return out


def _affine_scan(alpha: np.ndarray, betas: list[np.ndarray]) -> list[np.ndarray]:
    """All ``z_t = alpha_t·z_{t−1} + beta_t`` (``z_{−1} = 0``) in O(m) work, for each ``beta``.

    ``alpha``: ``(m,)``; ``betas``: arrays ``(m,)`` sharing ``alpha``; returns one ``z`` per beta.
    Blocks of ``b`` consecutive elements are laid out as the columns of a ``(b, nb)`` array; the
    recurrence runs sequentially down the ``b`` rows, vectorised across the ``nb`` blocks (zero
    carry-in, plus each block's running product of ``alpha``); the block ends form the same
    recurrence, solved recursively, and every element then adds its block's carry-in times its
    running product.  Work ``O(m)`` per beta, ``O(b·log_b m)`` NumPy calls.  With
    ``0 ≤ alpha ≤ 1`` and ``beta ≥ 0`` every intermediate is a sum of non-negative terms with
    coefficients ≤ 1 (nothing overflows), and the coefficient of ``beta_s`` in ``z_t`` is formed
    with one multiplication per factor ``alpha_{s+1} … alpha_t`` plus at most two roundings per
    recursion level.
    """
    m = len(alpha)
    if m <= 48:
        al = alpha.tolist()
        outs = []
        for beta in betas:
            bl = beta.tolist()
            z = 0.0
            for t in range(m):
                z = al[t] * z + bl[t]
                bl[t] = z
            outs.append(np.array(bl, dtype=np.float64))
        return outs
    b = 64 if m >= 4096 else max(8, int(np.sqrt(m)))
    nb = -(-m // b)
    A = _to_blocks(alpha, b, nb, 0.0)
    Ys = [_to_blocks(beta, b, nb, 0.0) for beta in betas]
    tmp = np.empty(nb)
    for p in range(1, b):
        Ap = A[p]
        for Y in Ys:
            np.multiply(Ap, Y[p - 1], out=tmp)
            Y[p] += tmp
        Ap *= A[p - 1]
    zbs = _affine_scan(A[b - 1].copy(), [Y[b - 1].copy() for Y in Ys])
    tmp2 = np.empty((b, nb - 1))
    outs = []
    for Y, zb in zip(Ys, zbs):
        np.multiply(A[:, 1:], zb[None, :-1], out=tmp2)
        Y[:, 1:] += tmp2
        outs.append(np.ascontiguousarray(Y.T).reshape(-1)[:m])
    return outs


def _structured_eval(st: _Struct, V: np.ndarray, mask: str, rule: str, inv_tau, soft: bool):
    """Exact O(N·G·dv) evaluation of a structured head; ``None`` if ``a`` is not strictly
    increasing within a group in the mask's accumulation order (then use the dense path)."""
    orders = [False, True] if mask == "none" else [mask in ("strict_future", "future")]
    for rev in orders:
        res = _structured_eval_order(st, V, mask, rule, inv_tau, soft, rev)
        if res is not None:
            return res
    return None


def _structured_eval_order(st: _Struct, V, mask, rule, inv_tau, soft, rev):
    dv, B, N = V.shape
    M = N - 1

    def acc(arr):  # (B, N) → contiguous flat (B·M) in accumulation order (real positions only)
        return np.ascontiguousarray(arr[:, :0:-1] if rev else arr[:, 1:]).reshape(-1)

    a_acc = acc(st.a) if st.a is not None else None
    V_acc = [acc(V[l]) for l in range(dv)]
    code_acc = None if st.code is None else (st.code[:, ::-1] if rev else st.code)
    cands = []  # per group: score (B,N), [value (B,N)]*dv, members idx, li (B,N), member values, dif, brk
    for u, off in st.groups:
        mem = np.ones((B, M), dtype=bool) if code_acc is None else (code_acc == u)
        cnt = np.cumsum(mem, axis=1, dtype=np.int64)
        idx = np.flatnonzero(mem)
        m = len(idx)
        if m == 0:
            continue
        am = a_acc[idx] if a_acc is not None else np.zeros(m)
        brk = None
        dif = None
        if m > 1:
            dif = am[1:] - am[:-1]
            ok = dif > 0
            if B > 1:
                row = idx // M
                brk = row[1:] != row[:-1]
                ok |= brk
            if not ok.all():
                return None
        # li: index (into this group's members) of the last member each query sees; −1 if none
        li = np.empty((B, N), dtype=np.int64)
        if B > 1:
            start = np.zeros(B, dtype=np.int64)
            start[1:] = np.cumsum(cnt[:, -1])[:-1]
            cnt += (start - 1)[:, None]
        else:
            cnt -= 1
        li[:, 0] = -1
        if mask == "none":
            li[:, 1:] = cnt[:, -1:]
        elif not rev:
            if mask == "strict_past":
                li[:, 1] = -1
                li[:, 2:] = cnt[:, :M - 1]
            else:
                li[:, 1:] = cnt
        else:
            src = cnt[:, ::-1]
            if mask == "strict_future":
                li[:, N - 1] = -1
                li[:, 1:N - 1] = src[:, 1:N - 1]
            else:
                li[:, 1:] = src
        if B > 1:  # a row without visible members points into the previous row: mark it −1
            np.copyto(li, -1, where=li < start[:, None])
        invalid = li < 0
        has_invalid = bool(invalid.any())
        if has_invalid:
            np.maximum(li, 0, out=li)
        score = am[li]
        score += off
        if has_invalid:
            np.copyto(score, -np.inf, where=invalid)
        vm = [V_acc[l][idx] for l in range(dv)]
        vals = [x[li] for x in vm]
        cands.append((score, vals, idx, li, vm, dif, brk))
    bos_score = st.bos
    bos_vals = [np.broadcast_to(V[l][:, :1], (B, N)) for l in range(dv)]
    scores = [c[0] for c in cands] + [bos_score]
    smax = bos_score.copy()
    for s in scores[:-1]:
        np.maximum(smax, s, out=smax)
    amax = [s == smax for s in scores]
    ties8 = np.zeros((B, N), dtype=np.uint8)  # at most max_groups + 1 candidates per row
    for x in amax:
        ties8 += x.view(np.uint8)
    ties = ties8.astype(np.int64)
    allvals = [c[1] for c in cands] + [bos_vals]
    hard = np.empty((dv, B, N))
    if ties8.max() == 1:  # one candidate per row: copy its value (the masks come in long runs)
        for l in range(dv):
            hard[l] = bos_vals[l]
        for x, vs in zip(amax[:-1], allvals[:-1]):
            for l in range(dv):
                np.copyto(hard[l], vs[l], where=x)
    elif rule == "AHA":
        hard[...] = 0.0
        for x, vs in zip(amax, allvals):
            for l in range(dv):
                hard[l] += x * vs[l]
        hard /= ties[None]
    else:
        # unique hard attention with ties between candidates: the leftmost / rightmost position
        hard[...] = 0.0
        left = rule == "UHA-leftmost"
        pos = []
        for _, _, idx, li, _, _, _ in cands:
            t = idx[li] % M
            pos.append(N - 1 - t if rev else t + 1)
        pos.append(np.zeros((B, N), dtype=np.int64))
        none = N + 1 if left else -1
        pick = np.full((B, N), none, dtype=np.int64)
        for x, p in zip(amax, pos):
            (np.minimum if left else np.maximum)(pick, np.where(x, p, none), out=pick)
        for x, p, vs in zip(amax, pos, allvals):
            sel = x & (p == pick)
            for l in range(dv):
                hard[l] += sel * vs[l]
    if not soft:
        return None, hard, None, ties
    # soft: weights relative to the row maximum; candidates in the argmax set weigh exactly 1.
    # A candidate whose weight flushes to 0 on every row (EXP_FLUSH) contributes nothing, and
    # neither does its group's tail (every tail term weighs less than the group's best).
    rest = np.zeros((B, N))
    num = np.zeros((dv, B, N))
    w = np.empty((B, N))
    tmp = np.empty((B, N))
    for ci, (s, x, vs) in enumerate(zip(scores, amax, allvals)):
        np.subtract(s, smax, out=w)
        w *= inv_tau
        if not (w.max() >= EXP_FLUSH):
            continue
        _exp_flush(w, out=w)  # candidates outside the mask have score −inf → weight 0
        if ci < len(cands):
            _, _, idx, li, vm, dif, brk = cands[ci]
            E, F = _group_tails(li, vm, dif, brk, inv_tau)
            for l in range(dv):
                np.add(vs[l], F[l], out=tmp)  # the candidate's own value plus its group's tail
                tmp *= w
                num[l] += tmp
            np.logical_not(x, out=x)
            np.add(E, x, out=tmp)  # the tail always leaks; the candidate itself unless it is a max
        else:
            for l in range(dv):
                if np.any(vs[l][:, 0] != 0):
                    np.multiply(w, vs[l], out=tmp)
                    num[l] += tmp
            np.logical_not(x, out=x)
            tmp[...] = x
        tmp *= w
        rest += tmp
    tot = np.add(rest, ties8)
    num /= tot[None]
    rest /= tot
    return num, hard, rest, ties


def _group_tails(li: np.ndarray, vm: list, dif: np.ndarray | None, brk: np.ndarray | None, inv_tau: float):
    """Per query, the weight of the group members before its best one, relative to the best:
    ``E = Σ_{s<t} exp((a_s − a_t)/τ)`` and ``F_l = Σ_{s<t} exp((a_s − a_t)/τ)·v_l(s)`` at ``t = li``.

    Recurrence ``E_t = c_t·(E_{t−1} + 1)``, ``F_t = c_t·(F_{t−1} + v_{t−1})`` with
    ``c_t = exp(−(a_t − a_{t−1})/τ)`` (0 across a batch-row break), solved by :func:`_affine_scan`.
    """
    m = len(vm[0])
    alpha = np.zeros(m)
    if m > 1:
        t = np.multiply(dif, -inv_tau)
        _exp_flush(t, out=alpha[1:])
        if brk is not None:
            alpha[1:][brk] = 0.0
    betas = [alpha]
    for v in vm:
        bl = np.zeros(m)
        np.multiply(alpha[1:], v[:-1], out=bl[1:])
        betas.append(bl)
    zs = _affine_scan(alpha, betas)
    return zs[0][li], [z[li] for z in zs[1:]]


def _score_scale(cols: _Cols, head: Head) -> tuple[float, int]:
    """``(score_scale, rounding_terms)`` for :class:`HeadTrace` (see there)."""
    k = head.W_Q.shape[1]
    rq, rk = _nonzero_rows(head.W_Q), _nonzero_rows(head.W_K)
    mq = np.zeros(k)
    for r in rq:
        mq += cols.maxabs(int(r)) * np.abs(head.W_Q[r])
    mk = np.zeros(k)
    for r in rk:
        mk += cols.maxabs(int(r)) * np.abs(head.W_K[r])
    # Σ_c |q_c k_c| ≤ Σ_c max|q_c|·max|k_c| (per key dimension: tighter than k·max·max and as rigorous)
    scale = float(np.dot(mq, mk)) if k else 0.0
    return scale, int(len(rq) + len(rk) + k + 2)


#: a dense fallback beyond this many positions is announced with a RuntimeWarning
DENSE_WARN_N = 1 << 15


def _head_eval(head: Head, cols: _Cols, soft: bool, inv_tau, path: str, chunk):
    """Run one head on a column stream; returns ``(HeadTrace, soft (dv,B,N) | None, hard (dv,B,N))``."""
    if path not in ("auto", "dense", "structured"):
        raise ParameterError(f"path must be 'auto', 'dense' or 'structured', got {path!r}")
    Q = _lin(cols, head.W_Q)
    V = _lin(cols, head.W_V)
    scale, rterms = _score_scale(cols, head)
    res = None
    used = "dense"
    if path == "auto" and callable(getattr(head, "fast", None)):  # a Head subclass's own exact path
        K = _lin(cols, head.W_K)
        fr = head.fast(np.moveaxis(Q, 0, -1), np.moveaxis(K, 0, -1), np.moveaxis(V, 0, -1), soft=soft,
                       inv_tau=inv_tau)  # (soft, hard, leak, ties) in (B, N, dv) layout, or None
        if fr is not None:
            fs, fh, fl, ft = fr
            res = (None if fs is None else np.ascontiguousarray(np.moveaxis(fs, -1, 0)),
                   np.ascontiguousarray(np.moveaxis(fh, -1, 0)), fl, ft)
            used = "fast"
    if res is None and path in ("auto", "structured"):
        st = _structure(cols, head, Q)
        if st is not None:
            res = _structured_eval(st, V, head.mask, head.rule, inv_tau, soft)
            if res is not None:
                used = "structured"
    if res is None:
        if path == "structured":
            raise ParameterError(f"head {head.name}: scores are not of the structured form a(j) + q(i)·g(j)")
        if cols.N > DENSE_WARN_N:
            warnings.warn(f"head {head.name}: scores are not structured on this input (e.g. a key that is not "
                          f"discrete), using the dense path at N = {cols.N}: O(N^2) = {cols.N ** 2:.2g} scores",
                          RuntimeWarning, stacklevel=3)
        K = _lin(cols, head.W_K)
        res = _dense_eval(Q, K, V, head.mask, head.rule, inv_tau, soft, chunk)
    s, h, leak, ties = res
    tr = HeadTrace(soft=None if s is None else np.moveaxis(s, 0, -1), hard=np.moveaxis(h, 0, -1), leak=leak,
                   ties=ties, path=used, score_scale=scale, key_dim=head.W_Q.shape[1], rounding_terms=rterms)
    return tr, s, h


def run_head(head: Head, x: np.ndarray, *, soft: bool, inv_tau: float | None, path: str = "auto",
             chunk: int | None = None) -> HeadTrace:
    """Run one head on residual stream ``x`` ``(B, N, d)``; see :class:`HeadTrace`.

    ``path``: "auto" (the head's own ``fast`` method if it has one and it applies — see
    :class:`softhard.constructions.counting.CountingHead` — else structured when the scores allow
    it, else dense), "dense" or "structured" (raises :class:`ParameterError` if the head is not
    structured on this input).  ``chunk``:
    query rows per dense chunk (memory ``O(chunk·N)``; default about 2^20 scores per chunk); the
    result does not depend on it.
    """
    if soft:
        check_inv_tau(inv_tau)
        inv_tau = float(inv_tau)
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 3:
        raise ParameterError(f"x must have shape (B, N, d), got {x.shape}")
    tr, _, _ = _head_eval(head, _Cols(x.transpose(2, 0, 1)), soft, inv_tau, path, chunk)
    return tr


# --------------------------------------------------------------------------------------------
# MLPs on column streams


def _unit(cols: _Cols, w: np.ndarray, bias: float) -> np.ndarray:
    """``relu(Σ_r w_r x_r + bias)`` for one hidden unit (rows in increasing order)."""
    out = None
    for r in np.flatnonzero(w):
        wr = float(w[r])
        x = cols.get(int(r))
        if out is None:
            out = x.copy() if wr == 1.0 else x * wr
        elif wr == 1.0:
            out += x
        elif wr == -1.0:
            out -= x
        else:
            out += x * wr
    if out is None:
        out = np.zeros((cols.B, cols.N))
    if bias != 0.0:
        out += bias
    np.maximum(out, 0.0, out=out)
    return out


def _mlp_updates(m: MLP, cols: _Cols) -> dict[int, np.ndarray]:
    """``{c: Σ_u relu(unit_u)·W2[u, c]}`` for the columns ``W2`` writes (before ``b2``)."""
    d, h = m.W1.shape
    nnz = int(np.count_nonzero(m.W1))
    if nnz > max(32, 2 * (d + h)) and cols.contiguous():
        H = m.W1.T @ cols.base.reshape(d, -1)
        H += m.b1[:, None]
        np.maximum(H, 0.0, out=H)
        outc = np.flatnonzero(np.any(m.W2 != 0, axis=0))
        U = m.W2[:, outc].T @ H
        return {int(c): U[i].reshape(cols.B, cols.N) for i, c in enumerate(outc)}
    upd: dict[int, np.ndarray] = {}
    for u in range(h):
        outs = np.flatnonzero(m.W2[u])
        if not len(outs):
            continue
        act = _unit(cols, m.W1[:, u], float(m.b1[u]))
        for c in outs:
            c = int(c)
            w = float(m.W2[u, c])
            if c in upd:
                if w == 1.0:
                    upd[c] += act
                elif w == -1.0:
                    upd[c] -= act
                else:
                    upd[c] += act * w
            else:
                upd[c] = act.copy() if w == 1.0 else act * w
    return upd


def _mlp_reads(m: MLP) -> set[int]:
    return {int(r) for r in np.flatnonzero(np.any(m.W1 != 0, axis=1))}


# --------------------------------------------------------------------------------------------
# forward passes


@dataclass
class Trace:
    """Result of :func:`forward`: final residual ``x`` ``(B, n+1, d)`` and per-head traces.

    ``x`` (and each entry of ``residuals``) may be a strided view of a coordinate-major array.
    """

    x: np.ndarray
    heads: dict[str, HeadTrace]
    residuals: list[np.ndarray]


def _run(model: Transformer, tokens, *, soft: bool, inv_tau, path: str, chunk, keep_residuals: bool,
         pair: bool, hard_columns: Sequence[int] | None = None):
    """Shared forward pass.  With ``pair``, the hard model runs alongside the soft one as an
    overlay of the columns where their residual streams differ; returns
    ``(soft trace, hard trace or None, {c: hard column} for hard_columns)``."""
    X = _embed_cols(model, tokens)
    cols = _Cols(X)
    over: dict[int, np.ndarray] | None = {} if pair else None
    traces: dict[str, HeadTrace] = {}
    htraces: dict[str, HeadTrace] = {}
    residuals = [X.copy().transpose(1, 2, 0)] if keep_residuals else []
    for blk in model.blocks:
        upd_s: dict[int, np.ndarray] = {}
        upd_h: dict[int, np.ndarray] = {}
        for h in blk.heads:
            tr, so, ho = _head_eval(h, cols, soft, inv_tau, path, chunk)
            traces[h.name] = tr
            _accumulate(upd_s, so if soft else ho, h.W_O)
            if pair:
                reads = {int(r) for W in (h.W_Q, h.W_K, h.W_V) for r in _nonzero_rows(W)}
                if any(r in over for r in reads):
                    trh, _, hh = _head_eval(h, _Cols(X, over), False, None, path, chunk)
                else:
                    trh = HeadTrace(soft=None, hard=tr.hard, leak=None, ties=tr.ties, path=tr.path,
                                    score_scale=tr.score_scale, key_dim=tr.key_dim,
                                    rounding_terms=tr.rounding_terms)
                    hh = ho
                htraces[h.name] = trh
                _accumulate(upd_h, hh, h.W_O)
        _apply(X, cols, over, upd_s, upd_h if pair else None, None)
        for m in blk.mlps:
            if not isinstance(m, MLP) and callable(getattr(m, "column_updates", None)):
                # another sublayer kind (e.g. counting's LayerNorm): it gives its own column updates
                us = m.column_updates(cols.get)
                uh = None
                if pair:
                    uh = m.column_updates(_Cols(X, over).get) if any(r in over for r in m.reads()) else us
                _apply(X, cols, over, us, uh, None)
                continue
            us = _mlp_updates(m, cols)
            uh = None
            if pair:
                uh = _mlp_updates(m, _Cols(X, over)) if any(r in over for r in _mlp_reads(m)) else us
            _apply(X, cols, over, us, uh, m.b2)
        if keep_residuals:
            residuals.append(X.copy().transpose(1, 2, 0))
    strace = Trace(x=X.transpose(1, 2, 0), heads=traces, residuals=residuals)
    hcols = {}
    if pair and hard_columns is not None:
        for c in hard_columns:
            hcols[c] = over.get(c, X[c]).copy() if c in over else X[c]
    htrace = None
    if pair and hard_columns is None:
        Xh = X.copy()
        for c, v in over.items():
            Xh[c] = v
        htrace = Trace(x=Xh.transpose(1, 2, 0), heads=htraces, residuals=[])
    return strace, htrace, hcols


def _apply(X: np.ndarray, cols: _Cols, over: dict | None, upd_s: dict, upd_h: dict | None,
           bias: np.ndarray | None) -> None:
    """``x[c] ← x[c] + upd[c] (+ bias[c])`` for the soft stream and, in pair mode, the hard
    overlay (a column leaves the overlay as soon as the two streams agree on it again)."""
    targets = set(upd_s)
    if bias is not None:
        targets |= {int(c) for c in np.flatnonzero(bias)}
    for c in sorted(targets):
        hard_new = None
        if over is not None:
            uh = upd_h.get(c)
            us = upd_s.get(c)
            if c in over or uh is not us:
                hard_new = over.get(c, X[c]).copy() if c in over else X[c].copy()
                if uh is not None:
                    hard_new += uh
                if bias is not None and bias[c] != 0:
                    hard_new += bias[c]
        if c in upd_s:
            X[c] += upd_s[c]
        if bias is not None and bias[c] != 0:
            X[c] += bias[c]
        cols.touched(c)
        if hard_new is not None:
            if np.array_equal(hard_new, X[c]):
                over.pop(c, None)
            else:
                over[c] = hard_new


def forward(model: Transformer, tokens: np.ndarray, *, mode: str = "hard", inv_tau: float | None = None,
            path: str = "auto", chunk: int | None = None, keep_residuals: bool = False) -> Trace:
    """Run ``model`` on token ids ``(B, n)``.

    ``mode="hard"``: every head uses its hard rule (AHA/UHA).  ``mode="soft"``: softmax at inverse
    temperature ``inv_tau`` (> 0, finite); each head's trace also holds the hard output and leak
    computed from the same scores (THEORY §2).  Softmax is evaluated relative to the row maximum
    (THEORY §7).  ``path``/``chunk`` as in :func:`run_head`.

    Raises :class:`ParameterError` for a bad ``inv_tau``, ``mode``, ``path`` or ``n < 1``.
    """
    if mode not in ("hard", "soft"):
        raise ParameterError(f"mode must be 'hard' or 'soft', got {mode!r}")
    soft = mode == "soft"
    if soft:
        check_inv_tau(inv_tau)
        inv_tau = float(inv_tau)
    tr, _, _ = _run(model, tokens, soft=soft, inv_tau=inv_tau, path=path, chunk=chunk,
                    keep_residuals=keep_residuals, pair=False)
    return tr


def forward_pair(model: Transformer, tokens: np.ndarray, *, inv_tau: float, path: str = "auto",
                 chunk: int | None = None) -> tuple[Trace, Trace]:
    """``(forward(mode="hard"), forward(mode="soft"))`` in one pass.

    The hard model's residual stream is kept as an overlay of the columns where it differs from
    the soft one; a head or MLP is evaluated a second time only when it reads such a column.  For
    a construction whose clean-ups are exact this costs one soft pass plus the clean-ups' raw
    inputs.  Same results as the two separate calls (same operations in the same order).
    """
    check_inv_tau(inv_tau)
    s, h, _ = _run(model, tokens, soft=True, inv_tau=float(inv_tau), path=path, chunk=chunk,
                   keep_residuals=False, pair=True)
    return h, s


def keep_freed_memory() -> bool:
    """Ask glibc's allocator to keep freed memory in the process instead of returning it.

    The engine allocates many short-lived arrays of ``8·B·N`` bytes; by default glibc serves
    each from fresh pages (``mmap``/heap trimming), and the page faults cost about a third of a
    forward pass at n = 10^6.  This raises ``M_MMAP_THRESHOLD`` and ``M_TRIM_THRESHOLD`` (via
    ``mallopt``) for the whole process, so freed blocks are reused; the peak resident memory is
    unchanged but memory is not returned to the OS until exit.  Meant for benchmark and
    command-line processes; returns False (and changes nothing) where glibc is not available.
    """
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
        return bool(libc.mallopt(M_MMAP_THRESHOLD, 1 << 30)) and bool(libc.mallopt(M_TRIM_THRESHOLD, (1 << 31) - 1))
    except (OSError, AttributeError):
        return False


def check_inv_tau(inv_tau) -> None:
    """Raise :class:`ParameterError` unless ``inv_tau`` is a finite positive number."""
    try:
        v = float(inv_tau)
    except (TypeError, ValueError):
        raise ParameterError(f"inverse temperature must be a number, got {inv_tau!r}") from None
    if not np.isfinite(v) or v <= 0:
        raise ParameterError(f"inverse temperature 1/tau must be finite and > 0 (tau > 0), got {inv_tau!r}")
