"""The residual stream in the engine's coordinate-major layout ``(d, B, n+1)``.

Weights are applied by their non-zero entries, so a compiled model (a few non-zeros per column)
costs O(non-zeros) passes per position; dense weights go through BLAS.  :class:`Columns` gives
column access to a stream (with the hard stream of
:func:`softhard.constructions.engine.forward_pair` as an overlay) and caches per-column facts
the structured attention path asks for (:mod:`softhard.constructions.structured_attention`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from contextlib import contextmanager

import numpy as np

from .errors import ModelFormatError, ParameterError
from .transformer import MLP, Transformer

# --------------------------------------------------------------------------------------------
# embedding


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


def embed_cols(model: Transformer, tokens: np.ndarray) -> np.ndarray:
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
    X[:, :, 0] = E[0][:, None]
    tv = E[1:]
    const = np.all(tv == tv[:1], axis=0)  # columns every symbol embeds alike: filled, not gathered
    for c in np.flatnonzero(const):
        X[c, :, 1:] = tv[0, c]
    var = np.flatnonzero(~const)
    if var.size:  # the other columns in one gather (copies of E's entries: the same values)
        X[var, :, 1:] = np.take(np.ascontiguousarray(E[:, var].T), tokens, axis=1)
    for c, v in pe.items():
        X[c] += v[None, :]
    return X


# --------------------------------------------------------------------------------------------
# residual stream columns


class Columns:
    """Column access to a residual stream ``(d, B, N)`` with an optional overlay ``{c: (B, N)}``
    (the hard stream of :func:`~softhard.constructions.engine.forward_pair`), plus per-column
    caches of max |x| and of the discrete levels over the real positions (invalidated with
    :meth:`touched`)."""

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
    # distinct values of a sample, counted on the sorted sample (np.unique's count: equal under ==,
    # no NaN here; np.unique would load numpy.ma, ~10 ms of every certify's start: ISSUE 16)
    sample = np.sort(np.concatenate([x[0, :1024], x[-1, -1024:]]))
    if 1 + np.count_nonzero(sample[1:] != sample[:-1]) > max_levels:
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


_SPARSITY: "OrderedDict[int, tuple[np.ndarray, bytes, dict]]" = OrderedDict()
_SPARSITY_LOCK = threading.Lock()
_SPARSITY_SIZE = 256


_PASS = threading.local()  # .facts: {id(W): (W, facts)} of the weights of the running forward pass


@contextmanager
def weights_fixed(weights):
    """Within the block (one forward pass), :func:`sparsity` of each array in ``weights`` is
    checked against its bytes once, on entry, and then served by identity (a pass calls it about
    ten times per head and MLP on the same arrays: ISSUE 16, the per-length overhead of short
    words).  The weights must not be edited in place inside the block (the engine never does).
    Per thread; nested blocks restore the outer one's facts on exit.  Raises nothing."""
    prev = getattr(_PASS, "facts", None)
    facts = {}
    for W in weights:
        facts[id(W)] = (W, _checked_sparsity(W))
    _PASS.facts = facts
    try:
        yield
    finally:
        _PASS.facts = prev


def sparsity(W: np.ndarray) -> dict:
    """Where the weight matrix ``W`` ``(d_in, d_out)`` is non-zero: ``{"rows": non-zero rows,
    "cols": non-zero columns, "nnz": count, "in_col": [non-zero rows of each column],
    "in_row": [non-zero columns of each row], "abs": |W|}`` (index lists as ``np.flatnonzero`` gives
    them).

    Memoised (ISSUE 16: a confirmation recomputed these for every weight matrix of every batch,
    ~12,000 ``flatnonzero`` calls for dyck1_depth2): keyed by the array object, which the memo
    holds (so its id is not reused), and checked against the bytes of ``W`` at every call, so a
    weight edited in place gets fresh facts (inside :func:`weights_fixed`, its weights once per
    pass).  Treat the result as read-only."""
    fixed = getattr(_PASS, "facts", None)
    if fixed is not None:
        hit = fixed.get(id(W))
        if hit is not None and hit[0] is W:
            return hit[1]
    return _checked_sparsity(W)


def _checked_sparsity(W: np.ndarray) -> dict:
    key = id(W)
    data = W.tobytes()
    with _SPARSITY_LOCK:
        hit = _SPARSITY.get(key)
        if hit is not None and hit[0] is W and hit[1] == data and hit[0].shape == W.shape:
            _SPARSITY.move_to_end(key)
            return hit[2]
    nz = W != 0
    facts = {"rows": np.flatnonzero(np.any(nz, axis=1)), "cols": np.flatnonzero(np.any(nz, axis=0)),
             "nnz": int(np.count_nonzero(nz)),
             "in_col": [np.flatnonzero(nz[:, l]) for l in range(W.shape[1])],
             "in_row": [np.flatnonzero(nz[r]) for r in range(W.shape[0])], "abs": np.abs(W)}
    with _SPARSITY_LOCK:
        _SPARSITY[key] = (W, data, facts)
        while len(_SPARSITY) > _SPARSITY_SIZE:
            _SPARSITY.popitem(last=False)
    return facts


def nonzero_rows(W: np.ndarray) -> np.ndarray:
    """The rows of a 2-D weight matrix with a non-zero entry (:func:`sparsity`; read-only)."""
    return sparsity(W)["rows"]


def project(cols: Columns, W: np.ndarray) -> np.ndarray:
    """``out[l] = Σ_r W[r, l]·x[r]``: ``(k, B, N)``.  Sparse weights are applied term by term
    (rows in increasing order); dense ones through one BLAS product."""
    d, k = W.shape
    out = np.zeros((k, cols.B, cols.N))
    sp = sparsity(W)
    rows = sp["rows"]
    nnz = sp["nnz"]
    if nnz == 0:
        return out
    if nnz > max(16, 2 * (len(rows) + k)) and cols.contiguous():
        Xr = cols.base.reshape(d, -1) if len(rows) == d else cols.base[rows].reshape(len(rows), -1)
        return (W[rows].T @ Xr).reshape(k, cols.B, cols.N)
    tmp = None
    for l in range(k):
        first = True
        for r in sp["in_col"][l]:
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


def accumulate(upd: dict, O: np.ndarray, W_O: np.ndarray) -> None:
    """``upd[c] += Σ_l O[l]·W_O[l, c]`` for the non-zero columns of ``W_O`` (``O``: ``(dv, B, N)``)."""
    sp = sparsity(W_O)
    for c in sp["cols"]:
        c = int(c)
        for l in sp["in_col"][c]:
            w = float(W_O[l, c])
            t = O[l] if w == 1.0 else O[l] * w
            if c in upd:
                upd[c] += t
            else:
                upd[c] = t.copy() if t is O[l] else t


# --------------------------------------------------------------------------------------------
# MLPs on column streams


def _unit(cols: Columns, w: np.ndarray, bias: float, rows: np.ndarray | None = None) -> np.ndarray:
    """``relu(Σ_r w_r x_r + bias)`` for one hidden unit (rows in increasing order); a new array.

    A first term of weight 1 is not copied: the first operation after it (the next term, the bias
    or the ReLU) writes a new array instead of updating a copy in place — the same roundings.
    ``rows``: the non-zero entries of ``w`` (``np.flatnonzero(w)``, computed when not given)."""
    out = None
    owned = False  # whether `out` is an array of our own (else a column of the stream)
    for r in (np.flatnonzero(w) if rows is None else rows):
        wr = float(w[r])
        x = cols.get(int(r))
        if out is None:
            out, owned = (x, False) if wr == 1.0 else (x * wr, True)
        elif not owned:
            out = out + x if wr == 1.0 else out - x if wr == -1.0 else out + x * wr
            owned = True
        elif wr == 1.0:
            out += x
        elif wr == -1.0:
            out -= x
        else:
            out += x * wr
    if out is None:
        out, owned = np.zeros((cols.B, cols.N)), True
    if bias != 0.0:
        if owned:
            out += bias
        else:
            out, owned = out + bias, True
    if owned:
        np.maximum(out, 0.0, out=out)
    else:
        out = np.maximum(out, 0.0)
    return out


def mlp_updates(m: MLP, cols: Columns) -> dict[int, np.ndarray]:
    """``{c: Σ_u relu(unit_u)·W2[u, c]}`` for the columns ``W2`` writes (before ``b2``)."""
    d, h = m.W1.shape
    sp1 = sparsity(m.W1)
    nnz = sp1["nnz"]
    if nnz > max(32, 2 * (d + h)) and cols.contiguous():
        H = m.W1.T @ cols.base.reshape(d, -1)
        H += m.b1[:, None]
        np.maximum(H, 0.0, out=H)
        outc = np.flatnonzero(np.any(m.W2 != 0, axis=0))
        U = m.W2[:, outc].T @ H
        return {int(c): U[i].reshape(cols.B, cols.N) for i, c in enumerate(outc)}
    upd: dict[int, np.ndarray] = {}
    sp2 = sparsity(m.W2)
    for u in range(h):
        outs = sp2["in_row"][u]
        if not len(outs):
            continue
        act = _unit(cols, m.W1[:, u], float(m.b1[u]), sp1["in_col"][u])  # a new array: the first weight-1 use takes it
        taken = False
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
            elif w == 1.0:
                upd[c] = act.copy() if taken else act
                taken = True
            else:
                upd[c] = act * w
    return upd


def mlp_reads(m: MLP) -> set[int]:
    return {int(r) for r in nonzero_rows(m.W1)}
