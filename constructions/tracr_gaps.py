"""Exact per-row statistics of a (Tracr) hard model: the premises of the structured leak bound
(THEORY §2 "structured rows", §6) and of the MLP discretisation analysis.

:mod:`softhard.constructions.gaps` finds one gap per head.  Compiled models need a finer premise,
because their rows are structured: BOS is *one* key, and in a Tracr Aggregate it sits at half the
selected score while every other competitor sits at 0.  Bounding the leak by
``S = e^{−g_B λ} + (#other competitors)·e^{−g_N λ}`` instead of ``(m−1)·e^{−min(g_B, g_N) λ}``
(THEORY §2: "bound S by summing") changes the length at which frac_prevs stays exact from about
10 to about 10¹¹ at its compiled temperature.  So this module runs the exact hard model
(:mod:`softhard.constructions.exact`) on every word of length ≤ N and records, per head,
separately for rows where BOS is a competitor (``BOS ∉ A``) and rows where BOS is in the argmax
set ``A``:

* ``g_B``: min ``s* − s_BOS`` (BOS's gap as a competitor);
* ``g_N``: min ``s* − max{s_j : j ≥ 1, j ∉ A}`` (the other competitors' gap);
* ``a_min``: the smallest argmax set ``|A|``;

plus the query and key *states* (the residual restricted to the coordinates ``W_Q`` / ``W_K``
read), the pairs (query state, own key state) that occur in one row, and per MLP the distinct
pre-activation vectors of its hidden units (its "contexts") and per output the hard values.
Every number is an exact rational; words are enumerated exhaustively, so the minima are
*established* for lengths ≤ N.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from .errors import ParameterError
from .exact import ExactEngine, RArr, add, attend_matrix, matmul, normalize, to_float
from .gaps import all_tokens
from .words import count_words, word_count_text
from .hard_model import HardModel

_MIN64 = np.iinfo(np.int64).min
_MAX64 = np.iinfo(np.int64).max
#: longest exhaustive enumeration (words) accepted
EXHAUSTIVE_LIMIT = 200_000

State = tuple  # tuple of Fractions


@dataclass
class CaseStats:
    """Minima over the rows of one case (BOS competitor / BOS in the argmax): ``rows`` counted,
    ``g_bos`` (only for the BOS-competitor case), ``g_rest`` (None: no non-BOS competitor ever),
    ``a_min``, and the attaining (word, row) of each minimum (row 1-based)."""

    rows: int = 0
    g_bos: Fraction | None = None
    g_rest: Fraction | None = None
    a_min: int | None = None
    witness_bos: tuple | None = None
    witness_rest: tuple | None = None
    witness_a: tuple | None = None

    def to_json(self) -> dict:
        return {"rows": self.rows, "gap_bos": _fs(self.g_bos), "gap_rest": _fs(self.g_rest), "a_min": self.a_min,
                "attained_by": {"gap_bos": _wj(self.witness_bos), "gap_rest": _wj(self.witness_rest),
                                "a_min": _wj(self.witness_a)}}


@dataclass
class HeadStats:
    """Exact statistics of one head over the analysed words (module docstring).

    ``q_coords``/``k_coords``/``v_coords``: residual coordinates read by ``W_Q``/``W_K``/``W_V``;
    ``q_states``/``k_states``: state → number of non-BOS rows; ``bos_q``/``bos_k``: the BOS row's
    states; ``self_pairs``: (query state, key state) of the same non-BOS row; ``att_pairs``: (query
    state, key state) of a non-BOS row and a non-BOS key it attends to (the mask) in one word;
    ``bos_competitor``/``bos_in_argmax``: :class:`CaseStats`; ``ties_max``; ``scale``.
    """

    name: str
    layer: int
    mask: str
    scale: Fraction
    q_coords: list[int]
    k_coords: list[int]
    v_coords: list[int]
    q_states: dict[State, int] = field(default_factory=dict)
    k_states: dict[State, int] = field(default_factory=dict)
    bos_q: State | None = None
    bos_k: State | None = None
    self_pairs: set = field(default_factory=set)
    att_pairs: set = field(default_factory=set)
    bos_competitor: CaseStats = field(default_factory=CaseStats)
    bos_in_argmax: CaseStats = field(default_factory=CaseStats)
    ties_max: int = 0
    #: per written coordinate: (min, max) of the written value x_j W_V W_O over the non-BOS keys j
    #: and over the BOS key (the competitors' hull, THEORY §2)
    values_nonbos: dict[int, tuple] = field(default_factory=dict)
    values_bos: dict[int, tuple] = field(default_factory=dict)


@dataclass
class MLPStats:
    """Distinct hard pre-activation vectors (``contexts``: tuple of Fractions, one per hidden unit →
    (rows, a witness (word, row))) of one MLP over the non-BOS rows, and the input values of the
    coordinates ``W1`` reads (``inputs``: context → tuple of Fractions over ``in_coords``)."""

    name: str
    layer: int
    in_coords: list[int]
    contexts: dict[State, list] = field(default_factory=dict)
    inputs: dict[State, State] = field(default_factory=dict)
    #: per context, per head of an earlier layer: the (BOS competitor, BOS in argmax) CaseStats of
    #: that head over the rows in this context (the leak and the MLP margin that occur together)
    heads: dict[State, dict[str, tuple]] = field(default_factory=dict)
    #: per context, per head: written coordinate -> (min, max) of the head's hard output there
    head_out: dict[State, dict[str, dict[int, tuple]]] = field(default_factory=dict)


@dataclass
class OutputStats:
    """Hard output values of one output over the non-BOS rows: ``values`` (tuple → rows);
    ``margin`` (categorical: min half distance between the top two coordinates; numerical: half
    the smallest distance between two distinct values, None if only one value) with witness."""

    name: str
    type: str
    values: dict[State, int] = field(default_factory=dict)
    margin: Fraction | None = None
    witness: tuple | None = None


@dataclass
class Stats:
    """Result of :func:`analyse`: ``n_max``, ``words`` enumerated, ``heads``, ``mlps``, ``outputs``,
    ``seconds``; ``method`` is always "exhaustive"."""

    n_max: int
    words: int
    heads: dict[str, HeadStats]
    mlps: dict[str, MLPStats]
    outputs: dict[str, OutputStats]
    seconds: float = 0.0
    method: str = "exhaustive"
    #: per (output name, length n): per chunk of :func:`softhard.constructions.gaps.all_tokens`
    #: (in its order) ``(ids, table)`` with the hard output of word b at row i+1 (float64, as
    #: :func:`softhard.constructions.exact.to_float` of the exact residual) ``table[ids[b, i]]``;
    #: None for a chunk whose numerators left int64.  Lets the all-words numeric confirmation reuse
    #: this enumeration's exact forward passes instead of re-running them (ISSUE 16).
    hard_outputs: dict = field(default_factory=dict, repr=False)


def _fs(x: Fraction | None) -> str | None:
    if x is None:
        return None
    return f"{x.numerator}/{x.denominator}" if x.denominator != 1 else str(x.numerator)


def _wj(w) -> dict | None:
    return None if w is None else {"word": list(w[0]), "row": int(w[1])}


def reads(W: np.ndarray) -> list[int]:
    """Rows of an exact matrix (residual coordinates) that are not all zero."""
    return [a for a in range(W.shape[0]) if any(x != 0 for x in W[a])]


def unique_rows(num: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(num, axis=0, return_inverse=True)`` for a 2-d integer array — the distinct rows
    in lexicographic order and each row's index among them — by one ``lexsort`` (NumPy's
    ``axis=0`` unique sorts a structured view, 33% of ``certify --tracr``; ISSUE 16).  Same result,
    tested against ``np.unique`` in tests/constructions/test_unique_rows.py."""
    if num.shape[0] == 0:
        return num[:0], np.zeros(0, dtype=np.int64)
    order = np.lexsort(num.T[::-1]) if num.shape[1] else np.arange(num.shape[0])
    s = num[order]
    new = np.ones(len(s), dtype=bool)
    new[1:] = np.any(s[1:] != s[:-1], axis=1)
    inv = np.empty(len(s), dtype=np.int64)
    inv[order] = np.cumsum(new) - 1
    return s[new], inv


def _rows_to_states(num: np.ndarray, den: int) -> dict[State, np.ndarray]:
    """Distinct rows of ``num/den`` (2-d) → boolean mask of the rows equal to it."""
    out = {}
    if num.shape[0] == 0:
        return out
    if num.dtype == object:
        keys = [tuple(r) for r in num]
        uniq = dict.fromkeys(keys)
        for u in uniq:
            out[tuple(Fraction(int(v), den) for v in u)] = np.array([k == u for k in keys])
        return out
    u, inv = unique_rows(num)
    for k, r in enumerate(u):
        out[tuple(Fraction(int(v), den) for v in r)] = inv == k
    return out


def _state_table(num: np.ndarray, den: int) -> tuple[np.ndarray, list[State], list[int]]:
    """Per row of ``num/den`` (2-d) the index of its distinct state, the states (in the order of
    :func:`_rows_to_states`) and how many rows each has.  Integer numerators: the indices are
    :func:`unique_rows`' inverse and the counts its ``bincount`` (one pass, no mask per state)."""
    if num.shape[0] == 0:
        return np.zeros(0, dtype=np.int64), [], []
    if num.dtype == object:
        ids = np.zeros(num.shape[0], dtype=np.int64)
        out, counts = [], []
        for k, (s, mask) in enumerate(_rows_to_states(num, den).items()):
            ids[mask] = k
            out.append(s)
            counts.append(int(mask.sum()))
        return ids, out, counts
    u, inv = unique_rows(num)
    return inv, [tuple(Fraction(int(v), den) for v in r) for r in u], np.bincount(inv, minlength=len(u)).tolist()


class _Case:
    def __init__(self):
        self.c = CaseStats()

    def update(self, rows: int, gb, wb, gr, wr, a, wa):
        c = self.c
        c.rows += rows
        if gb is not None and (c.g_bos is None or gb < c.g_bos):
            c.g_bos, c.witness_bos = gb, wb
        if gr is not None and (c.g_rest is None or gr < c.g_rest):
            c.g_rest, c.witness_rest = gr, wr
        if a is not None and (c.a_min is None or a < c.a_min):
            c.a_min, c.witness_a = a, wa


def _hull(dest: dict[int, tuple], b: int, num: np.ndarray, den: int) -> None:
    """Widen ``dest[b]`` = (min, max) (Fractions) by the values ``num/den`` (any shape; none: no-op)."""
    if num.size == 0:
        return
    lo, hi = Fraction(int(num.min()), den), Fraction(int(num.max()), den)
    if b in dest:
        lo, hi = min(lo, dest[b][0]), max(hi, dest[b][1])
    dest[b] = (lo, hi)


def _update_cases(pair: tuple, rinfo: tuple, rows: np.ndarray, word) -> None:
    """Update one head's (BOS competitor, BOS in argmax) :class:`_Case` pair with the rows ``rows``
    (bool, (B, N)) of a batch: ``rinfo`` = (top-minus-BOS gap, top-minus-other gap, argmax size,
    BOS in argmax, has another competitor, score scale, score denominator), each (B, N)."""
    gB, gN, a, bosA, hasN, scale, den = rinfo
    B, N = rows.shape
    for case, sel in ((pair[0], rows & ~bosA), (pair[1], rows & bosA)):
        if not sel.any():
            continue

        def at(flat):
            b, i = np.unravel_index(flat, (B, N))
            return word(int(b)), int(i)

        gb = wb = None
        if case is pair[0]:
            v, f = _argmin_masked(gB, sel)
            gb, wb = scale * Fraction(int(v), den), at(f)
        v, f = _argmin_masked(gN, sel & hasN)
        gr = wr = None
        if v is not None:
            gr, wr = scale * Fraction(int(v), den), at(f)
        v, f = _argmin_masked(a.astype(np.int64), sel)
        case.update(int(sel.sum()), gb, wb, gr, wr, int(v), at(f))


def _argmin_masked(vals: np.ndarray, mask: np.ndarray):
    """(value, flat index) of the minimum of ``vals`` where ``mask``; None if the mask is empty."""
    if not mask.any():
        return None, None
    if vals.dtype == object:
        idx = [i for i in np.flatnonzero(mask.ravel())]
        flat = vals.ravel()
        best = min(idx, key=lambda i: flat[i])
        return flat[best], best
    v = np.where(mask, vals, _MAX64)
    best = int(np.argmin(v))
    return v.ravel()[best], best


def analyse(hm: HardModel, n_max: int, *, limit: int = EXHAUSTIVE_LIMIT, progress=None) -> Stats:
    """Exhaustive exact statistics over every word of length 1..``n_max`` (module docstring).

    Raises :class:`ParameterError` when there are more than ``limit`` words (the premise would not
    be established) or ``n_max < 1``, and :class:`ModelFormatError` when ``n_max`` exceeds the
    positional table.
    """
    if n_max < 1:
        raise ParameterError(f"n_max must be >= 1, got {n_max}")
    hm.check_length(n_max)
    k = len(hm.alphabet)
    if count_words(k, n_max, cap=limit) > limit:
        raise ParameterError(f"{word_count_text(k, n_max)} words of length <= {n_max}: more than the exhaustive limit {limit}; the "
                             "premises could not be established")
    t0 = time.perf_counter()
    eng = ExactEngine(hm)
    heads = {}
    for hs in hm.heads:
        for h in hs:
            heads[h.name] = HeadStats(name=h.name, layer=h.layer, mask=h.mask, scale=h.scale, q_coords=reads(h.W_Q),
                                      k_coords=reads(h.W_K), v_coords=reads(h.W_V))
    cases = {h: (_Case(), _Case()) for h in heads}
    mlps = {m.name: MLPStats(name=m.name, layer=li, in_coords=reads(m.W1)) for li, ms in enumerate(hm.mlps) for m in ms}
    outs = {o.name: OutputStats(name=o.name, type=o.type) for o in hm.outputs}
    words = 0
    hard: dict = {}
    for n in range(1, n_max + 1):
        if progress:
            progress(f"exact analysis: length {n}")
        for tok in all_tokens(k, n):
            words += len(tok)
            for name, got in _batch(hm, eng, tok, heads, cases, mlps, outs).items():
                hard.setdefault((name, n), []).append(got)
    for name, (cb, ca) in cases.items():
        heads[name].bos_competitor = cb.c
        heads[name].bos_in_argmax = ca.c
    for ms in mlps.values():
        ms.heads = {P: {hn: (c0.c, c1.c) for hn, (c0, c1) in hc.items()} for P, hc in ms.heads.items()}
    for o in hm.outputs:
        st = outs[o.name]
        if o.type == "numerical":
            vals = sorted({v[0] for v in st.values})
            if len(vals) >= 2:
                gaps = [(b - a, a, b) for a, b in zip(vals, vals[1:])]
                g, a, b = min(gaps)
                st.margin = g / 2
                st.witness = (a, b)
    return Stats(n_max=n_max, words=words, heads=heads, mlps=mlps, outputs=outs, seconds=time.perf_counter() - t0,
                 hard_outputs=hard)


def _batch(hm: HardModel, eng: ExactEngine, tok: np.ndarray, heads, cases, mlps, outs) -> dict:
    """One chunk of words of one length: updates the statistics; returns per output its float64
    hard values as ``(ids, table)`` (:attr:`Stats.hard_outputs`; None for object numerators)."""
    B, n = tok.shape
    N = n + 1
    alph = hm.alphabet

    def word(b):
        return tuple(alph[int(t) - 1] for t in tok[b])

    x = eng.embed(tok)
    row_info: dict[str, tuple] = {}  # per head so far: its per-row gaps and argmax sizes (B, N)
    written: dict[str, tuple] = {}  # per head so far: its hard output (B, N, d) and written coordinates
    for li in range(len(eng.heads)):
        upd = None
        for h, WQ, WK, WV, WO in eng.heads[li]:
            st = heads[h.name]
            # states
            xs = x.num[:, 1:, :]
            tables = []  # per (query, key) side: state index per row, the states, rows per state
            for coords, dest in ((st.q_coords, st.q_states), (st.k_coords, st.k_states)):
                tables.append(_state_table(xs[..., coords].reshape(B * n, len(coords)), x.den))
                for s, cnt in zip(tables[-1][1], tables[-1][2]):
                    dest[s] = dest.get(s, 0) + cnt
            bq = tuple(Fraction(int(v), x.den) for v in x.num[0, 0, st.q_coords])
            bk = tuple(Fraction(int(v), x.den) for v in x.num[0, 0, st.k_coords])
            st.bos_q, st.bos_k = bq, bk
            both = xs[..., st.q_coords + st.k_coords].reshape(B * n, len(st.q_coords) + len(st.k_coords))
            for s in _state_table(both, x.den)[1]:
                st.self_pairs.add((s[: len(st.q_coords)], s[len(st.q_coords):]))
            # (query state, key state) pairs that meet in one word under the mask
            (qid, qs_, _), (kid, ks_, _) = tables
            qid, kid = qid.reshape(B, n), kid.reshape(B, n)
            am = attend_matrix(h.mask, N)[1:, 1:]
            bi, ii, jj = np.nonzero(np.broadcast_to(am, (B, n, n)))
            code = np.unique(qid[bi, ii] * len(ks_) + kid[bi, jj])
            for cd in code:
                st.att_pairs.add((qs_[int(cd) // len(ks_)], ks_[int(cd) % len(ks_)]))
            # scores, exactly (integers over S.den; times h.scale)
            Q, K = matmul(x, WQ), matmul(x, WK)
            S = matmul(Q, RArr(np.swapaxes(K.num, 1, 2), K.den))
            att = attend_matrix(h.mask, N)[None]
            obj = S.num.dtype == object
            sent = float("-inf") if obj else _MIN64
            Sm = np.where(att, S.num, sent)
            smax = Sm.max(axis=-1)
            A = (Sm == smax[..., None]) & att
            a = A.sum(axis=-1)
            st.ties_max = max(st.ties_max, int(a[:, 1:].max()))
            bosA = A[..., 0]
            comp = att & ~A
            compN = comp.copy()
            compN[..., 0] = False
            hasN = compN.any(axis=-1)
            maxN = np.where(compN, S.num, sent).max(axis=-1)
            if obj:
                gN = np.where(hasN, smax, 0) - np.where(hasN, maxN, 0)
                gB = smax - S.num[..., 0]
            else:
                gN = np.zeros_like(smax)
                gN[hasN] = smax[hasN] - maxN[hasN]
                gB = smax - S.num[..., 0]
            rows = np.zeros((B, N), dtype=bool)
            rows[:, 1:] = True
            rinfo = (gB, gN, a, bosA, hasN, h.scale, S.den)
            row_info[h.name] = rinfo
            _update_cases(cases[h.name], rinfo, rows, word)
            rws, out = eng._head(h, x, WQ, WK, WV, scores=S, f64=False)  # the scores above, not recomputed
            w = matmul(out, WO)
            upd = w if upd is None else add(upd, w)
            vals = matmul(matmul(x, WV), WO)
            wc = [b for b in range(vals.num.shape[-1]) if np.any(vals.num[..., b])]
            for b in wc:
                _hull(st.values_nonbos, b, vals.num[:, 1:, b], vals.den)
                _hull(st.values_bos, b, vals.num[:, 0, b], vals.den)
            written[h.name] = (w, wc)
        if upd is not None:
            x = normalize(add(x, upd))
        for m, W1, b1, W2, b2 in eng.mlps[li]:
            ms = mlps[m.name]
            pre = normalize(add(matmul(x, W1), b1))
            flat = pre.num[:, 1:, :].reshape(B * n, -1)
            inp = x.num[:, 1:, ms.in_coords].reshape(B * n, len(ms.in_coords))
            for s, mask in _rows_to_states(flat, pre.den).items():
                first = int(np.argmax(mask))
                sel = np.zeros((B, N), dtype=bool)
                sel[:, 1:] = mask.reshape(B, n)
                hc = ms.heads.setdefault(s, {})
                ho = ms.head_out.setdefault(s, {})
                for hn, rinfo in row_info.items():
                    _update_cases(hc.setdefault(hn, (_Case(), _Case())), rinfo, sel, word)
                    w, wc = written[hn]
                    hw = ho.setdefault(hn, {})
                    for b in wc:
                        _hull(hw, b, w.num[:, :, b][sel], w.den)
                cur = ms.contexts.get(s)
                if cur is None:
                    b, i = divmod(first, n)
                    ms.contexts[s] = [int(mask.sum()), (word(b), i + 1)]
                    ms.inputs[s] = tuple(Fraction(int(v), x.den) for v in inp[first])
                else:
                    cur[0] += int(mask.sum())
            act = RArr(np.maximum(pre.num, 0) if pre.num.dtype != object else
                       np.where(pre.num > 0, pre.num, 0).astype(object), pre.den)
            x = normalize(add(x, add(matmul(normalize(act), W2), b2)))
    hard = {}
    for o in hm.outputs:
        st = outs[o.name]
        vals = x.num[:, 1:, o.coords].reshape(B * n, len(o.coords))
        if vals.dtype == object:
            states = _rows_to_states(vals, x.den)
            hard[o.name] = None
        else:  # as _rows_to_states, keeping the row -> state index for the float table
            u, inv = unique_rows(vals)
            states = {tuple(Fraction(int(v), x.den) for v in r): inv == k for k, r in enumerate(u)}
            hard[o.name] = (inv.reshape(B, n).astype(np.int32), to_float(RArr(u, x.den)))
        for s, mask in states.items():
            st.values[s] = st.values.get(s, 0) + int(mask.sum())
            if o.type == "categorical":
                top = sorted(s)
                mg = (top[-1] - top[-2]) / 2
                if st.margin is None or mg < st.margin:
                    first = int(np.argmax(mask))
                    b, i = divmod(first, n)
                    st.margin, st.witness = mg, (word(b), i + 1)
    return hard
