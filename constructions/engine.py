"""Run an explicit transformer (:mod:`softhard.constructions.transformer`) with hard (AHA/UHA)
or soft (softmax) attention.

The forward pass is batched (``tokens`` has shape ``(B, n)``).  Internally the residual stream is
kept coordinate-major (``(d, B, n+1)``, :mod:`softhard.constructions.residual`) and weights are
applied by their non-zero entries.  Attention has two paths behind one interface
(:func:`run_head`):

* **dense** (:mod:`softhard.constructions.dense_attention`) — scores ``Q Kᵀ`` for a chunk of
  queries at a time against only the keys the mask can reach, memory ``O(chunk · n)``; the result
  does not depend on ``chunk``.
* **structured** (:mod:`softhard.constructions.structured_attention`) — exact ``O(n)`` evaluation
  for heads whose scores have the form ``s_ij = a(j) + q(i)·g(j)`` with ``g`` taking a few values
  and ``a`` strictly increasing, within each group, towards the query (THEORY §4 selections have
  this shape; ISSUE 7), computed in the relative frame so that no exponent is formed from an
  absolute score.  The engine detects the structure from the actual residual stream and weights
  and falls back to dense when it does not hold.

Both paths compute, per head and query row, the soft output, the hard (AHA/UHA) output on the
*same* residual stream, and the leak ``δ_i = Σ_{j∉A_i} α_ij`` (THEORY §0, §2) as ``S/(a+S)`` with
``S`` summed relative to the row maximum, so a leak of 1e-300 is resolved, not rounded to 0.
:func:`forward_pair` runs the hard and the soft model together, sharing all work while their
residual streams agree (they differ only in the raw attention coordinates before a clean-up).
"""

from __future__ import annotations

import threading
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from .dense_attention import dense_eval
from .errors import ParameterError
from .residual import (Columns, accumulate, embed_cols, mlp_reads, mlp_updates, nonzero_rows, project, sparsity,
                       weights_fixed)
from .softmax import check_inv_tau
from .structured_attention import detect_structure, structured_eval
from .transformer import MLP, Head, ResidualLayerNorm, Transformer

# --------------------------------------------------------------------------------------------
# attention heads


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


def _score_scale(cols: Columns, head: Head) -> tuple[float, int]:
    """``(score_scale, rounding_terms)`` for :class:`HeadTrace` (see there)."""
    k = head.W_Q.shape[1]
    sq, sk = sparsity(head.W_Q), sparsity(head.W_K)
    rq, rk = sq["rows"], sk["rows"]
    mq = np.zeros(k)
    for r in rq.tolist():
        mq += cols.maxabs(r) * sq["abs"][r]
    mk = np.zeros(k)
    for r in rk.tolist():
        mk += cols.maxabs(r) * sk["abs"][r]
    # Σ_c |q_c k_c| ≤ Σ_c max|q_c|·max|k_c| (per key dimension: tighter than k·max·max and as rigorous)
    scale = float(np.dot(mq, mk)) if k else 0.0
    return scale, int(len(rq) + len(rk) + k + 2)


#: a dense fallback beyond this many positions is announced with a RuntimeWarning
DENSE_WARN_N = 1 << 15


def _head_eval(head: Head, cols: Columns, soft: bool, inv_tau, path: str, chunk):
    """Run one head on a column stream; returns ``(HeadTrace, soft (dv,B,N) | None, hard (dv,B,N))``."""
    if path not in ("auto", "dense", "structured"):
        raise ParameterError(f"path must be 'auto', 'dense' or 'structured', got {path!r}")
    Q = project(cols, head.W_Q)
    V = project(cols, head.W_V)
    scale, rterms = _score_scale(cols, head)
    res = None
    used = "dense"
    if path == "auto" and callable(getattr(head, "fast", None)):  # a Head subclass's own exact path
        K = project(cols, head.W_K)
        fr = head.fast(Q.transpose(1, 2, 0), K.transpose(1, 2, 0), V.transpose(1, 2, 0), soft=soft,
                       inv_tau=inv_tau)  # (soft, hard, leak, ties) in (B, N, dv) layout, or None
        if fr is not None:
            fs, fh, fl, ft = fr
            res = (None if fs is None else np.ascontiguousarray(fs.transpose(2, 0, 1)),
                   np.ascontiguousarray(fh.transpose(2, 0, 1)), fl, ft)
            used = "fast"
    if res is None and path in ("auto", "structured"):
        st = detect_structure(cols, head, Q)
        if st is not None:
            Q = None  # not held through the structured pass (recomputed for a dense fallback: ISSUE 16)
            res = structured_eval(st, V, head.mask, head.rule, inv_tau, soft)
            if res is not None:
                used = "structured"
    if res is None:
        if path == "structured":
            raise ParameterError(f"head {head.name}: scores are not of the structured form a(j) + q(i)·g(j)")
        if cols.N > DENSE_WARN_N:
            warnings.warn(f"head {head.name}: scores are not structured on this input (e.g. a key that is not "
                          f"discrete), using the dense path at N = {cols.N}: O(N^2) = {cols.N ** 2:.2g} scores",
                          RuntimeWarning, stacklevel=3)
        K = project(cols, head.W_K)
        if Q is None:
            Q = project(cols, head.W_Q)
        res = dense_eval(Q, K, V, head.mask, head.rule, inv_tau, soft, chunk)
    s, h, leak, ties = res
    # (transpose(1, 2, 0): np.moveaxis(·, 0, −1) of a 3-D array, the same view without its Python overhead)
    tr = HeadTrace(soft=None if s is None else s.transpose(1, 2, 0), hard=h.transpose(1, 2, 0), leak=leak,
                   ties=ties, path=used, score_scale=scale, key_dim=head.W_Q.shape[1], rounding_terms=rterms)
    return tr, s, h


def run_head(head: Head, x: np.ndarray, *, soft: bool, inv_tau: float | None, path: str = "auto",
             chunk: int | None = None) -> HeadTrace:
    """Run one head on residual stream ``x`` ``(B, N, d)``; see :class:`HeadTrace`.

    ``path``: "auto" (the head's own ``fast`` method if it has one and it applies — see
    :class:`softhard.constructions.counting.CountingHead` — else structured when the scores allow
    it, else dense), "dense" or "structured" (raises :class:`ParameterError` if the head is not
    structured on this input).  ``chunk``:
    query rows per dense chunk (memory ``O(chunk·N)`` scores, and blocks as in :mod:`.dense_attention`; default about 2^20 scores per chunk); the
    result does not depend on it.
    """
    if soft:
        check_inv_tau(inv_tau)
        inv_tau = float(inv_tau)
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 3:
        raise ParameterError(f"x must have shape (B, N, d), got {x.shape}")
    tr, _, _ = _head_eval(head, Columns(x.transpose(2, 0, 1)), soft, inv_tau, path, chunk)
    return tr


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


def forward_pass(model: Transformer, tokens, *, soft: bool, inv_tau, path: str, chunk, keep_residuals: bool,
                 pair: bool, hard_columns: Sequence[int] | None = None,
                 reduce: Callable[[str, HeadTrace], object] | None = None, heads_only: bool = False):
    """Shared forward pass.  With ``pair``, the hard model runs alongside the soft one as an
    overlay of the columns where their residual streams differ; returns
    ``(soft trace, hard trace or None, {c: hard column} for hard_columns)``.

    ``reduce``: called as ``reduce(head name, HeadTrace)`` right after each head runs; the soft
    trace's ``heads`` then holds what it returns instead of the trace, so the head's ``(B, N)``
    arrays are freed as soon as its output is added to the stream (the peak memory of a long batch
    drops by about four such arrays per head: ISSUE 16, the adversarial search at n = 10^4).  The
    values computed are the same with or without it.

    ``heads_only``: stop after the attention sublayer of the last block with heads (its MLPs and
    later blocks change no head's trace); the soft trace's ``x`` is then the stream there, not the
    model's output (the adversarial search reads the heads only)."""
    weights = [W for blk in model.blocks for h in blk.heads for W in (h.W_Q, h.W_K, h.W_V, h.W_O)]
    weights += [W for blk in model.blocks for m in blk.mlps if isinstance(m, MLP) for W in (m.W1, m.W2)]
    with weights_fixed(weights):  # each weight's sparsity checked once per pass (residual.sparsity)
        return _forward_pass(model, tokens, soft, inv_tau, path, chunk, keep_residuals, pair, hard_columns,
                             reduce, heads_only)


def _forward_pass(model, tokens, soft, inv_tau, path, chunk, keep_residuals, pair, hard_columns, reduce,
                  heads_only):
    """:func:`forward_pass` inside its :func:`~softhard.constructions.residual.weights_fixed` block."""
    X = embed_cols(model, tokens)
    cols = Columns(X)
    over: dict[int, np.ndarray] | None = {} if pair else None
    traces: dict[str, HeadTrace] = {}
    htraces: dict[str, HeadTrace] = {}
    residuals = [X.copy().transpose(1, 2, 0)] if keep_residuals else []
    last = max((i for i, b in enumerate(model.blocks) if b.heads), default=-1) if heads_only else None
    for bi, blk in enumerate(model.blocks):
        upd_s: dict[int, np.ndarray] = {}
        upd_h: dict[int, np.ndarray] = {}
        for h in blk.heads:
            tr, so, ho = _head_eval(h, cols, soft, inv_tau, path, chunk)
            traces[h.name] = tr if reduce is None else reduce(h.name, tr)
            accumulate(upd_s, so if soft else ho, h.W_O)
            if pair:
                if over and any(int(r) in over for W in (h.W_Q, h.W_K, h.W_V) for r in nonzero_rows(W)):
                    trh, _, hh = _head_eval(h, Columns(X, over), False, None, path, chunk)
                else:
                    trh = HeadTrace(soft=None, hard=tr.hard, leak=None, ties=tr.ties, path=tr.path,
                                    score_scale=tr.score_scale, key_dim=tr.key_dim,
                                    rounding_terms=tr.rounding_terms)
                    hh = ho
                htraces[h.name] = trh
                accumulate(upd_h, hh, h.W_O)
            tr = so = ho = None  # (with ``reduce``, nothing holds the head's arrays from here on)
        _apply(X, cols, over, upd_s, upd_h if pair else None, None)
        if bi == last:
            break
        for m in blk.mlps:
            if isinstance(m, ResidualLayerNorm):  # overwrites its target columns (exactly, no x + (y − x))
                ys = m.normalise([cols.get(int(c)) for c in m.coords])
                yh = None
                if pair and any(r in over for r in m.reads()):
                    yh = m.normalise([Columns(X, over).get(int(c)) for c in m.coords])
                _overwrite(X, cols, over, m.target, ys, yh)
                continue
            if not isinstance(m, MLP) and callable(getattr(m, "column_updates", None)):
                # another sublayer kind (e.g. counting's LayerNorm): it gives its own column updates
                us = m.column_updates(cols.get)
                uh = None
                if pair:
                    uh = m.column_updates(Columns(X, over).get) if any(r in over for r in m.reads()) else us
                _apply(X, cols, over, us, uh, None)
                continue
            us = mlp_updates(m, cols)
            uh = None
            if pair:
                uh = mlp_updates(m, Columns(X, over)) if over and any(r in over for r in mlp_reads(m)) else us
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


def _overwrite(X: np.ndarray, cols: Columns, over: dict | None, target, ys: list, yh: list | None) -> None:
    """``x[target[k]] ← ys[k]`` for the soft stream and ``yh[k]`` (default ``ys[k]``) for the hard
    overlay (kept only where the two differ)."""
    for k, t in enumerate(target):
        t = int(t)
        X[t] = ys[k]
        cols.touched(t)
        if over is not None:
            if yh is not None and not np.array_equal(yh[k], ys[k]):
                over[t] = yh[k]
            else:
                over.pop(t, None)


def _apply(X: np.ndarray, cols: Columns, over: dict | None, upd_s: dict, upd_h: dict | None,
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
    tr, _, _ = forward_pass(model, tokens, soft=soft, inv_tau=inv_tau, path=path, chunk=chunk,
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
    s, h, _ = forward_pass(model, tokens, soft=True, inv_tau=float(inv_tau), path=path, chunk=chunk,
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


#: glibc ``mallopt`` parameters and the values :func:`reuse_memory` leaves behind: those glibc's own
#: dynamic rule reaches after freeing a block of its largest adaptive size (32 MiB on 64-bit)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_AFTER_MMAP, _AFTER_TRIM = 32 << 20, 64 << 20
_REUSE = {"depth": 0, "huge": None, "libc": None}
_REUSE_LOCK = threading.Lock()


def _madvise_hugepage(on: bool) -> bool | None:
    """Set NumPy's "ask for transparent huge pages on arrays of 4 MiB and more"; returns the
    previous setting (None where this NumPy has no such switch)."""
    core = getattr(np, "_core", None) or getattr(np, "core", None)
    fn = getattr(getattr(core, "multiarray", None), "_set_madvise_hugepage", None)
    return None if fn is None else bool(fn(on))


@contextmanager
def reuse_memory():
    """Within the block, freed arrays are reused instead of fresh pages faulted in (ISSUE 16).

    A confirmation allocates hundreds of short-lived ``(B, n+1)`` arrays of a few MiB.  By default
    glibc returns such blocks to the OS on free (``mmap`` / heap trimming) and NumPy asks for
    transparent huge pages on every array ≥ 4 MiB; with the kernel's default THP ``defrag =
    madvise`` each such first touch may compact memory synchronously.  Measured on the 2-core
    machine of benchmarks/README.md ("numeric, third pass"): touching 500 MB cost 0.93–1.3 s
    system time with the huge-page request and 0.23–0.26 s without; at a265a9b a dyck1_depth2
    certify's numeric stage spent 0.81–1.34 s in the system (page faults) beside 0.85–1.04 s of
    user time (benchmarks/numeric_faults.py).  Inside the block: NumPy's huge-page request is off and
    glibc's ``M_MMAP_THRESHOLD``/``M_TRIM_THRESHOLD`` are raised (as :func:`keep_freed_memory`
    does), so freed blocks are served again.  On leaving the outermost block the NumPy switch is
    restored, the thresholds are set to :data:`_AFTER_MMAP`/:data:`_AFTER_TRIM` (glibc's dynamic
    rule cannot be switched back on; a process that called :func:`keep_freed_memory` gets these
    values too) and ``malloc_trim(0)`` returns the held memory to the OS.
    Values computed inside are unchanged (memory placement only).  Re-entrant and thread-safe
    (a depth count); where glibc is missing only the NumPy switch is used.  Raises nothing."""
    with _REUSE_LOCK:
        if _REUSE["depth"] == 0:
            _REUSE["huge"] = _madvise_hugepage(False)
            try:
                import ctypes  # stdlib

                libc = ctypes.CDLL("libc.so.6")
                libc.mallopt(_M_MMAP_THRESHOLD, 1 << 30)
                libc.mallopt(_M_TRIM_THRESHOLD, (1 << 31) - 1)
                _REUSE["libc"] = libc
            except (OSError, AttributeError):
                _REUSE["libc"] = None
        _REUSE["depth"] += 1
    try:
        yield
    finally:
        with _REUSE_LOCK:
            _REUSE["depth"] -= 1
            if _REUSE["depth"] == 0:
                if _REUSE["huge"] is not None:
                    _madvise_hugepage(_REUSE["huge"])
                libc = _REUSE["libc"]
                if libc is not None:
                    libc.mallopt(_M_MMAP_THRESHOLD, _AFTER_MMAP)
                    libc.mallopt(_M_TRIM_THRESHOLD, _AFTER_TRIM)
                    libc.malloc_trim(0)
