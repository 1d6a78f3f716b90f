"""Explicit transformers as NumPy arrays, run with hard (AHA/UHA) or soft (softmax) attention.

This is the one numeric representation every construction compiles to (temporal logic, counting,
hand-written and compiled models): token and positional embeddings, blocks of attention heads
followed by residual ReLU MLPs, and a readout.  Position 0 is BOS and is always attendable
(THEORY §0).

The forward pass is batched (``tokens`` has shape ``(B, n)``) and has two attention paths:

* **dense** — scores ``Q Kᵀ`` for a chunk of queries at a time, memory ``O(chunk · n)``;
* **structured** — exact ``O(n)`` prefix/suffix log-sum-exp accumulations for heads whose scores
  have the form ``s_ij = a(j) + q(i)·g(j)`` with ``g`` taking a few values ("groups") and ``a``
  strictly increasing, within each group, towards the query (THEORY §4 selections have this
  shape; ISSUE 7).  The engine detects the structure from the actual ``Q``, ``K`` arrays and
  falls back to dense when it does not hold.

Both paths compute, per head and query row, the soft output, the hard (AHA/UHA) output on the
*same* residual stream, and the leak ``δ_i = Σ_{j∉A_i} α_ij`` (THEORY §0, §2) as ``S/(a+S)`` with
``S`` summed relative to the row maximum, so a leak of 1e-300 is resolved, not rounded to 0.
"""

from __future__ import annotations

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
        """Token ids ``(B, n)`` for words of equal length ``n`` (ids start at 1; 0 is BOS)."""
        lookup = {s: k + 1 for k, s in enumerate(self.alphabet)}
        lengths = {len(w) for w in words}
        if len(lengths) != 1:
            raise ParameterError("encode: all words in a batch must have the same length")
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
# attention


@dataclass
class HeadTrace:
    """What one head did on one batch (all arrays indexed ``[batch, query]``).

    ``soft``/``hard``: the head's output before ``W_O`` (``(B, N, dv)``); ``leak``: ``δ_i``;
    ``ties``: size of the argmax set ``a``; ``path``: "structured" or "dense".
    ``max_abs_logit``: largest ``|s_ij − s*_i|·inv_tau`` that contributed (for rounding allowances).
    """

    soft: np.ndarray | None
    hard: np.ndarray
    leak: np.ndarray | None
    ties: np.ndarray
    path: str
    score_scale: float = 0.0
    key_dim: int = 0


def _mask_matrix(mask: str, nq: np.ndarray, N: int) -> np.ndarray:
    """Boolean ``(len(nq), N)`` attendability for query indices ``nq`` (BOS column always True)."""
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


def _hard_from_scores(scores: np.ndarray, valid: np.ndarray, V: np.ndarray, rule: str):
    """Hard attention for a chunk: scores ``(B, C, N)`` (−inf where masked)."""
    smax = scores.max(axis=-1, keepdims=True)
    amax = (scores == smax) & valid
    ties = amax.sum(axis=-1)
    if rule == "AHA":
        w = amax / ties[..., None]
    else:
        N = scores.shape[-1]
        idx = np.arange(N)
        if rule == "UHA-leftmost":
            pos = np.where(amax, idx, N).min(axis=-1)
        else:
            pos = np.where(amax, idx, -1).max(axis=-1)
        w = (idx[None, None, :] == pos[..., None]).astype(V.dtype)
    return np.einsum("bcn,bnk->bck", w, V), amax, ties


def _dense_head(Q, K, V, mask, rule, inv_tau, soft, chunk):
    B, N, _ = Q.shape
    dv = V.shape[-1]
    hard_out = np.empty((B, N, dv), dtype=V.dtype)
    soft_out = np.empty((B, N, dv), dtype=V.dtype) if soft else None
    leak = np.empty((B, N), dtype=np.float64) if soft else None
    ties = np.empty((B, N), dtype=np.int64)
    for c0 in range(0, N, chunk):
        c1 = min(N, c0 + chunk)
        valid = _mask_matrix(mask, np.arange(c0, c1), N)[None]
        sc = np.einsum("bck,bnk->bcn", Q[:, c0:c1], K)
        sc = np.where(valid, sc, -np.inf)
        h, amax, t = _hard_from_scores(sc, valid, V, rule)
        hard_out[:, c0:c1] = h
        ties[:, c0:c1] = t
        if soft:
            smax = sc.max(axis=-1, keepdims=True)
            with np.errstate(invalid="ignore", over="ignore"):
                z = (sc - smax) * inv_tau
                w = np.exp(z)  # masked → exp(-inf) = 0
            rest = np.where(amax, 0.0, w).sum(axis=-1)
            tot = t + rest
            soft_out[:, c0:c1] = np.einsum("bcn,bnk->bck", w, V) / tot[..., None]
            leak[:, c0:c1] = rest / tot
    return soft_out, hard_out, leak, ties


def _structure(x, Mqk, max_groups=8, max_levels=4):
    """Detect ``s_ij = a(j) + q(i)·g(j)`` and return ``(a, q, gid, gvals)`` or ``None``.

    With ``u_i = x_i W_Q W_Kᵀ`` the score is ``s_ij = u_i · x_j``.  Residual coordinates that the
    score reads are split into *discrete* ones (at most ``max_levels`` distinct values over the
    batch) and *continuous* ones.  Keys are grouped by their discrete coordinates (``g(j)``, at most
    ``max_groups`` groups) with query weights ``q(i) = u_i[D]``; the continuous coordinates must have
    query-independent weights, giving ``a(j)``.  Query row 0 (BOS) is ignored: it attends to BOS only.
    Shapes: ``a (B, N)``, ``q (B, N, r)``, ``gid (B, N)``, ``gvals (G, r)``.
    """
    B, N, d = x.shape
    if N < 2:
        return None
    u = x @ Mqk
    ut = u[:, 1:, :]
    support = np.flatnonzero(np.any(ut != 0, axis=(0, 1)))
    disc, cont = [], []
    for c in support:
        if len(np.unique(x[:, :, c])) <= max_levels:
            disc.append(c)
        else:
            cont.append(c)
    cont = np.array(cont, dtype=np.int64)
    disc = np.array(disc, dtype=np.int64)
    if len(cont):
        uc = ut[:, :, cont]
        if not np.all(uc == uc[:1, :1, :]):
            return None
        a = x[:, :, cont] @ uc[0, 0]
    else:
        a = np.zeros((B, N))
    if len(disc) == 0:
        return a, np.zeros((B, N, 0)), np.zeros((B, N), dtype=np.int64), np.zeros((1, 0))
    gvals, inv = np.unique(x[:, :, disc].reshape(-1, len(disc)), axis=0, return_inverse=True)
    if len(gvals) > max_groups:
        return None
    return a, u[:, :, disc], inv.reshape(B, N), gvals


def _relative_scan(mem: np.ndarray, a: np.ndarray, init: np.ndarray, lam: float) -> np.ndarray:
    """Exclusive relative log-sum-exp over group members, in log depth (Hillis–Steele scan).

    For each accumulation index ``t`` that is a member, returns
    ``D_t = log Σ_{j<t, j member} exp(init_j + (a_j − a_t)·lam)``; ``−inf`` if no earlier member.
    ``mem``: ``(B, M)`` bool; ``a``: ``(B, M)`` strictly increasing along members; ``init``:
    ``(B, M)`` or ``(B, M, k)`` log-weights (0 for plain sums, ``log v`` for value sums).
    Every intermediate is stored relative to the latest member's score, so it stays of size
    ``O(log M)``; exponents are formed from score *differences*.  Rounding therefore grows like
    ``log M``, not like ``M·|a|·lam`` as with a plain ``logaddexp.accumulate`` of ``a·lam``.
    """
    B, M = mem.shape
    idx = np.arange(M)
    last = np.maximum.accumulate(np.where(mem, idx[None, :], -1), axis=1)
    has = last >= 0
    ref = np.where(has, np.take_along_axis(a, np.maximum(last, 0), axis=1), 0.0)
    extra = init.ndim == 3
    rel = np.where(mem[..., None] if extra else mem, init, -np.inf)
    k = 1
    while k < M:
        shift = (ref[:, :-k] - ref[:, k:]) * lam
        if extra:
            shift = shift[..., None]
        new = rel.copy()
        with np.errstate(invalid="ignore"):
            new[:, k:] = np.logaddexp(rel[:, k:], rel[:, :-k] + shift)
        rel = new
        k *= 2
    out = np.full_like(rel, -np.inf)
    sh = (ref[:, :-1] - a[:, 1:]) * lam
    if extra:
        sh = sh[..., None]
    out[:, 1:] = rel[:, :-1] + sh
    return out


def _structured_head(V, mask, rule, inv_tau, soft, st):
    """Exact O(N·G·dv·log N) evaluation of a structured head (see module docstring)."""
    a, qv, gid, gvals = st
    B, N, dv = V.shape
    future = mask in ("strict_future", "future")
    strict = mask in ("strict_past", "strict_future")
    tok = slice(1, N)
    order = (lambda arr: arr[:, ::-1]) if future else (lambda arr: arr)
    a_t, gid_t, V_t = order(a[:, tok]), order(gid[:, tok]), order(V[:, tok])
    M = N - 1
    qpos = np.arange(N)
    t_q = (N - 1) - qpos if future else qpos - 1  # accumulation index of the query's own position
    nvis = np.clip(t_q if strict else t_q + 1, 0, M)  # number of visible keys (accumulation order)
    nvis[0] = 0  # the BOS query sees only BOS
    G = len(gvals)
    idx = np.arange(M)
    best_score = np.full((B, N, G), -np.inf)
    best_pos = np.full((B, N, G), -1, dtype=np.int64)
    excl = np.full((B, N, G), -np.inf)
    excl_vpos = np.full((B, N, G, dv), -np.inf)
    excl_vneg = np.full((B, N, G, dv), -np.inf)
    qg = np.einsum("bnr,gr->bng", qv, gvals) if gvals.shape[1] else np.zeros((B, N, G))
    for g in range(G):
        mem = gid_t == g
        if not mem.any():
            continue
        last = np.maximum.accumulate(np.where(mem, idx[None, :], -1), axis=1)  # (B, M)
        prev_last = np.concatenate([np.full((B, 1), -1), last[:, :-1]], axis=1)
        has_prev = mem & (prev_last >= 0)
        prev_a = np.take_along_axis(a_t, np.maximum(prev_last, 0), axis=1)
        if np.any(has_prev & ~(a_t > prev_a)):
            return None  # not strictly increasing within the group: use the dense path
        if soft:
            ex = _relative_scan(mem, a_t, np.zeros((B, M)), inv_tau)
            with np.errstate(divide="ignore"):
                lvp = np.log(np.maximum(V_t, 0.0))
                lvn = np.log(np.maximum(-V_t, 0.0))
            exvp = _relative_scan(mem, a_t, lvp, inv_tau)
            exvn = _relative_scan(mem, a_t, lvn, inv_tau)
        li = np.where((nvis > 0)[None, :], np.take(last, np.maximum(nvis - 1, 0), axis=1), -1)  # (B, N)
        valid = li >= 0
        lic = np.maximum(li, 0)
        best_pos[:, :, g] = li
        best_score[:, :, g] = np.where(valid, np.take_along_axis(a_t, lic, axis=1) + qg[:, :, g], -np.inf)
        if soft:
            excl[:, :, g] = np.where(valid, np.take_along_axis(ex, lic, axis=1), -np.inf)
            excl_vpos[:, :, g] = np.where(valid[..., None], np.take_along_axis(exvp, lic[..., None], axis=1), -np.inf)
            excl_vneg[:, :, g] = np.where(valid[..., None], np.take_along_axis(exvn, lic[..., None], axis=1), -np.inf)
    # candidates: the G group-bests and BOS
    if gvals.shape[1]:
        bos_score = a[:, 0][:, None] + np.einsum("bnr,br->bn", qv, np.asarray(gvals)[gid[:, 0]])
    else:
        bos_score = np.repeat(a[:, :1], N, axis=1)
    cand = np.concatenate([best_score, bos_score[..., None]], axis=2)  # (B, N, G+1)
    smax = cand.max(axis=2, keepdims=True)
    amax = cand == smax
    ties = amax.sum(axis=2)
    acc_to_pos = (lambda t: (N - 1) - t) if future else (lambda t: t + 1)
    cpos = np.concatenate([np.where(best_pos >= 0, acc_to_pos(best_pos), 0),
                           np.zeros((B, N, 1), dtype=np.int64)], axis=2)
    cval = V[np.arange(B)[:, None, None], cpos]  # (B, N, G+1, dv)
    if rule == "AHA":
        hard = (amax[..., None] * cval).sum(axis=2) / ties[..., None]
    else:
        left = rule == "UHA-leftmost"
        pos_for_rule = np.where(amax, cpos, (N + 1) if left else -1)
        pick = pos_for_rule.min(axis=2) if left else pos_for_rule.max(axis=2)
        hard = V[np.arange(B)[:, None], pick]
    if not soft:
        return None, hard, None, ties
    with np.errstate(invalid="ignore", over="ignore"):
        rel_best = (best_score - smax) * inv_tau  # (B, N, G), ≤ 0: from score differences
        wc = np.where(np.isfinite(cand), np.exp((cand - smax) * inv_tau), 0.0)
        wg = np.where(np.isfinite(rel_best), np.exp(excl + rel_best), 0.0)
        rb = np.where(np.isfinite(rel_best), rel_best, -np.inf)[..., None]
        vg = np.exp(excl_vpos + rb) - np.exp(excl_vneg + rb)
    vg = np.nan_to_num(vg, nan=0.0)
    rest = np.where(amax, 0.0, wc).sum(axis=2) + wg.sum(axis=2)
    tot = ties + rest
    num = (wc[..., None] * cval).sum(axis=2) + vg.sum(axis=2)
    return num / tot[..., None], hard, rest / tot, ties


def run_head(head: Head, x: np.ndarray, *, soft: bool, inv_tau: float | None, path: str = "auto",
             chunk: int = 256) -> HeadTrace:
    """Run one head on residual stream ``x`` ``(B, N, d)``; see :class:`HeadTrace`.

    ``path``: "auto" (the head's own ``fast`` method if it has one and it applies — see
    :class:`softhard.constructions.counting.CountingHead` — else structured when the scores allow
    it, else dense), "dense" or "structured" (raises :class:`ParameterError` if the head is not
    structured on this input).
    """
    Q, K, V = x @ head.W_Q, x @ head.W_K, x @ head.W_V
    scale = float(np.max(np.abs(Q)) * np.max(np.abs(K)) * Q.shape[-1]) if Q.size else 0.0
    res = None
    used = "dense"
    if path == "auto" and callable(getattr(head, "fast", None)):  # a Head subclass's own exact path
        res = head.fast(Q, K, V, soft=soft, inv_tau=inv_tau)  # (soft, hard, leak, ties) or None
        used = "fast"
    if res is None and path in ("auto", "structured") and head.mask != "none":
        st = _structure(x, head.W_Q @ head.W_K.T)
        if st is not None:
            res = _structured_head(V, head.mask, head.rule, inv_tau, soft, st)
            used = "structured"
    if res is None:
        if path == "structured":
            raise ParameterError(f"head {head.name}: scores are not of the structured form a(j) + q(i)·g(j)")
        res = _dense_head(Q, K, V, head.mask, head.rule, inv_tau, soft, chunk)
        used = "dense"
    s, h, leak, ties = res
    return HeadTrace(soft=s, hard=h, leak=leak, ties=ties, path=used, score_scale=scale, key_dim=Q.shape[-1])


@dataclass
class Trace:
    """Result of :func:`forward`: final residual ``x`` ``(B, n+1, d)`` and per-head traces."""

    x: np.ndarray
    heads: dict[str, HeadTrace]
    residuals: list[np.ndarray]


def forward(model: Transformer, tokens: np.ndarray, *, mode: str = "hard", inv_tau: float | None = None,
            path: str = "auto", chunk: int = 256, keep_residuals: bool = False) -> Trace:
    """Run ``model`` on token ids ``(B, n)``.

    ``mode="hard"``: every head uses its hard rule (AHA/UHA).  ``mode="soft"``: softmax at inverse
    temperature ``inv_tau`` (> 0, finite); each head's trace also holds the hard output and leak
    computed from the same scores (THEORY §2).  Softmax is evaluated in the log domain.

    Raises :class:`ParameterError` for a bad ``inv_tau`` or ``n < 1``.
    """
    if mode not in ("hard", "soft"):
        raise ParameterError(f"mode must be 'hard' or 'soft', got {mode!r}")
    soft = mode == "soft"
    if soft:
        check_inv_tau(inv_tau)
        inv_tau = float(inv_tau)
    x = model.embed(tokens)
    traces: dict[str, HeadTrace] = {}
    residuals = [x.copy()] if keep_residuals else []
    for blk in model.blocks:
        upd = np.zeros_like(x)
        for h in blk.heads:
            tr = run_head(h, x, soft=soft, inv_tau=inv_tau, path=path, chunk=chunk)
            traces[h.name] = tr
            upd += (tr.soft if soft else tr.hard) @ h.W_O
        x = x + upd
        for m in blk.mlps:
            x = m(x)
        if keep_residuals:
            residuals.append(x.copy())
    return Trace(x=x, heads=traces, residuals=residuals)


def check_inv_tau(inv_tau) -> None:
    """Raise :class:`ParameterError` unless ``inv_tau`` is a finite positive number."""
    try:
        v = float(inv_tau)
    except (TypeError, ValueError):
        raise ParameterError(f"inverse temperature must be a number, got {inv_tau!r}") from None
    if not np.isfinite(v) or v <= 0:
        raise ParameterError(f"inverse temperature 1/tau must be finite and > 0 (tau > 0), got {inv_tau!r}")
