"""Gap analysis of a hard-attention transformer, and the UHA tie-break (THEORY §0, §2, §4, §6).

The composed bound of THEORY §6 needs, per head, a lower bound γ on the score gap
``s* − max{s_ij : j ∉ A_i}`` over every query row of every input of length ≤ N.  This module
finds the minimum exactly (rational arithmetic, :mod:`softhard.constructions.exact`):

* **exhaustive** — every word of every length 1..N, when ``Σ_n |Σ|^n`` is at most a limit: the
  minimum is then *established* (the premise of the bound is proved, by enumeration);
* **searched** — otherwise: periodic and random words at every length up to 64 (then a log grid
  up to the search cap), and a local search that repeatedly takes each head's worst word not yet
  expanded and evaluates its whole neighbourhood — every one-symbol change, insertion and
  deletion — in one batch.  The minimum found is exact *for the inputs tried*; it is not a proof.

For a UHA head (leftmost/rightmost), a tie of the maximum is gap 0 — softmax splits weight over
the tied positions — so such a model is not simulable this way as it stands; :func:`tie_break`
adds the tie-break term ``β·p_j`` of THEORY §4 (``p_j = j/n`` for rightmost, ``−j/n`` for
leftmost), which selects the same position and costs gap: ``γ' ≥ min(β/N, γ₀ − β)`` where γ₀ is
the gap to the non-maximal positions; ``β = γ₀·N/(N+1)`` gives ``γ' ≥ γ₀/(N+1)``.

The same runs give the output margins (boolean: ``min |y − threshold|``; categorical: half the
distance between the top two coordinates): an output error below the margin leaves every
rounded output unchanged.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from functools import partial

import numpy as np

from .errors import ParameterError
from .exact import ExactRun, HeadRows
from .exact_balls import PREC, exact_engine, margin_at
from .gap_report import (GapReport, HeadGap, LNVariance, OutputMargin, fd, float64_rounding_constant,  # noqa: F401
                         fs)
from .gap_tasks import CHUNK, Task, all_tokens, exhaustive_tasks, map_tasks, task_tokens  # noqa: F401
from .hard_model import HardModel
from .parameters import DEFAULT_EXHAUSTIVE_LIMIT, DEFAULT_SEARCH_MAX_LEN, DEFAULT_SEARCH_WORDS
from .words import count_words, word_count_text

DENSE_CAP = 4096  # longest word the searched analysis evaluates (exact scores cost O(n^2) per head)


# --------------------------------------------------------------------------------------------
# aggregation of exact runs


class _Agg:
    """Running minima over batches."""

    def __init__(self, hm: HardModel):
        self.hm = hm
        self.heads = {h.name: HeadGap(name=h.name, layer=h.layer, mask=h.mask, rule=h.rule) for h in hm.all_heads()}
        self.outputs = {o.name: OutputMargin(name=o.name, type=o.type) for o in hm.outputs}
        self.lns = {ln.name: LNVariance(name=ln.name) for lns in hm.lns for ln in lns}
        self.ambiguous: dict[str, tuple] = {}
        self.words = 0
        self.f64_const = {h.name: float64_rounding_constant(h.W_Q.shape[0], h.W_Q.shape[1]) for h in hm.all_heads()}

    def add(self, tokens: np.ndarray, run: ExactRun) -> None:
        B, n = tokens.shape
        self.words += B
        for name, rows in run.heads.items():
            hg = self.heads[name]
            t = int(rows.ties[:, 1:].max()) if n >= 1 else 0
            hg.ties_max = max(hg.ties_max, t)
            g, b, i = _min_gap(rows)
            if g is not None and (hg.gap_untied is None or g < hg.gap_untied):
                hg.gap_untied, hg.word_untied, hg.row_untied = g, self._word(tokens[b]), i
            self._tieless(hg, tokens, rows)
            if rows.f64_num is not None:
                self._float64(hg, tokens, rows)
            uha_tie = None
            if rows.rule != "AHA":
                tied = rows.ties[:, 1:] >= 2
                if tied.any():
                    bb, ii = np.argwhere(tied)[0]
                    uha_tie = (int(bb), int(ii) + 1)
            if uha_tie is not None:
                if hg.gap is None or hg.gap > 0:
                    hg.gap, hg.word, hg.row = Fraction(0), self._word(tokens[uha_tie[0]]), uha_tie[1]
            elif g is not None and (hg.gap is None or g < hg.gap):
                hg.gap, hg.word, hg.row = g, self._word(tokens[b]), i
        for name, (v, b, i) in run.ln_var.items():
            lv = self.lns[name]
            if lv.var is None or v < lv.var:
                lv.var, lv.word, lv.row = v, self._word(tokens[b]), int(i)
        for name, rows in run.heads.items():
            if rows.ambiguous is not None and rows.ambiguous.any() and name not in self.ambiguous:
                b, i = np.argwhere(rows.ambiguous)[0]
                self.ambiguous[name] = (self._word(tokens[b]), int(i))
        for o in self.hm.outputs:
            m, b, i = _margin(self.hm, o, run, n)
            om = self.outputs[o.name]
            if m is not None and (om.margin is None or m < om.margin):
                om.margin, om.word, om.row = m, self._word(tokens[b]), i

    def _tieless(self, hg: HeadGap, tokens: np.ndarray, rows: HeadRows) -> None:
        """Count the batch's uniform / unique-maximum / tied rows (≥ 1) of one head; keep the
        first tied row (uniform-tieless check, :class:`~softhard.constructions.gap_report.HeadGap`)."""
        has = rows.has_rest[:, 1:]
        tied = has & (rows.ties[:, 1:] >= 2)
        if rows.ambiguous is not None:
            tied = tied | rows.ambiguous[:, 1:]
        hg.rows_uniform += int((~has & ~tied).sum())
        hg.rows_unique += int((has & ~tied).sum())
        nt = int(tied.sum())
        if nt and hg.word_tied is None:
            b, i = np.argwhere(tied)[0]
            hg.word_tied, hg.row_tied = self._word(tokens[b]), int(i) + 1
        hg.rows_tied += nt

    def _float64(self, hg: HeadGap, tokens: np.ndarray, rows: HeadRows) -> None:
        """Float64 separation of the batch's rows with a competitor (issue 15): ``gap_i / (2c·A_i)``
        (:func:`~softhard.constructions.gap_report.float64_rounding_constant`).  A float prefilter
        picks the rows within 10⁻⁶ of failing; those are decided exactly, so the count of failing
        rows and the minimum (kept with its row) are exact."""
        hg.f64_checked = True
        valid = rows.has_rest[:, 1:]
        if not valid.any():
            return
        two_c = 2 * self.f64_const[hg.name]
        g, a = rows.gap_num[:, 1:], rows.f64_num[:, 1:]

        def sep(b: int, i: int) -> Fraction:  # exact, row i ≥ 1 of word b (A > 0 where a gap exists)
            return Fraction(int(g[b, i - 1]), int(a[b, i - 1])) / two_c

        if g.dtype == object or a.dtype == object:
            r = np.array([[float(Fraction(int(x), int(y))) if v else np.inf for x, y, v in zip(gr, ar, vr)]
                          for gr, ar, vr in zip(g, a, valid)]).reshape(valid.shape)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where(valid, g.astype(np.float64) / a.astype(np.float64), np.inf)
        r = r / float(two_c)  # within a relative 1e-14 of the exact separation
        hg.f64_fail += int((valid & (r < 1 - 1e-6)).sum())  # surely failing
        b, i = np.unravel_index(int(np.argmin(r)), r.shape)
        best = (sep(int(b), int(i) + 1), int(b), int(i) + 1)
        for b, i in np.argwhere(valid & (np.abs(r - 1) <= 1e-6)):  # borderline: decided exactly
            v = sep(int(b), int(i) + 1)
            hg.f64_fail += v <= 1
            if v < best[0]:
                best = (v, int(b), int(i) + 1)
        if hg.f64_sep is None or best[0] < hg.f64_sep:
            hg.f64_sep, hg.f64_word, hg.f64_row = best[0], self._word(tokens[best[1]]), best[2]

    def _word(self, ids) -> tuple[str, ...]:
        return tuple(self.hm.alphabet[int(t) - 1] for t in ids)

    def absorb(self, part: "ExhaustivePart") -> None:
        """Merge the minima of a later task: what :meth:`add` gives on the task's batches after
        this one's (strictly smaller replaces, so the first attaining word in order is kept)."""
        self.words += part.words
        for name, o in part.heads.items():
            hg = self.heads[name]
            hg.ties_max = max(hg.ties_max, o.ties_max)
            hg.rows_uniform += o.rows_uniform
            hg.rows_unique += o.rows_unique
            hg.rows_tied += o.rows_tied
            if hg.word_tied is None and o.word_tied is not None:
                hg.word_tied, hg.row_tied = o.word_tied, o.row_tied
            hg.f64_checked = hg.f64_checked or o.f64_checked
            hg.f64_fail += o.f64_fail
            if o.f64_sep is not None and (hg.f64_sep is None or o.f64_sep < hg.f64_sep):
                hg.f64_sep, hg.f64_word, hg.f64_row = o.f64_sep, o.f64_word, o.f64_row
            if o.gap_untied is not None and (hg.gap_untied is None or o.gap_untied < hg.gap_untied):
                hg.gap_untied, hg.word_untied, hg.row_untied = o.gap_untied, o.word_untied, o.row_untied
            if o.gap is not None and (hg.gap is None or o.gap < hg.gap):
                hg.gap, hg.word, hg.row = o.gap, o.word, o.row
        for name, o in part.outputs.items():
            om = self.outputs[name]
            if o.margin is not None and (om.margin is None or o.margin < om.margin):
                om.margin, om.word, om.row = o.margin, o.word, o.row
        for name, o in part.lns.items():
            lv = self.lns[name]
            if o.var is not None and (lv.var is None or o.var < lv.var):
                lv.var, lv.word, lv.row = o.var, o.word, o.row
        for name, at in part.ambiguous.items():
            self.ambiguous.setdefault(name, at)


@dataclass
class ExhaustivePart:
    """The minima of one exhaustive task (:func:`exhaustive_part`): per head, per output, per layer
    norm (the variance premise), the first ambiguous row per head, and the number of words."""

    heads: dict[str, HeadGap]
    outputs: dict[str, OutputMargin]
    words: int
    lns: dict[str, LNVariance] = field(default_factory=dict)
    ambiguous: dict[str, tuple] = field(default_factory=dict)


#: the exact engines of the last few models (its exact weights, shared by the tasks of one analysis)
_ENGINES: list[tuple[HardModel, object]] = []


def _engine(hm: HardModel):
    for m, eng in _ENGINES:
        if m is hm:
            return eng
    eng = exact_engine(hm)
    _ENGINES[:] = [(hm, eng)] + _ENGINES[:3]
    return eng


def exhaustive_part(hm: HardModel, task: Task) -> ExhaustivePart:
    """Exact minima over the words of one task of :func:`~softhard.constructions.gap_tasks.exhaustive_tasks`
    (run anywhere: a Dask worker too); merged in task order by :func:`analyse_gaps`."""
    eng, agg = _engine(hm), _Agg(hm)
    for tok in task_tokens(len(hm.alphabet), task):
        agg.add(tok, eng.run(tok))
    return ExhaustivePart(heads=agg.heads, outputs=agg.outputs, words=agg.words, lns=agg.lns,
                          ambiguous=agg.ambiguous)


def _min_gap(rows: HeadRows) -> tuple[Fraction | None, int, int]:
    """Minimum (over words and query rows ≥ 1) of the gap to non-maximal positions, with (word, row)."""
    valid = rows.has_rest[:, 1:]
    if not valid.any():
        return None, -1, -1
    g = rows.gap_num[:, 1:]
    if g.dtype == object:
        gm = np.where(valid, g, float("inf"))
        flat = int(np.argmin(gm))
    else:
        gm = np.where(valid, g, np.iinfo(np.int64).max)
        flat = int(np.argmin(gm))
    b, i = np.unravel_index(flat, g.shape)
    return rows.scale * Fraction(int(g[b, i]), rows.den), int(b), int(i) + 1


def read_rows(at: str, n: int) -> list[int]:
    """Residual rows (1..n) an output is read at."""
    return {"all": list(range(1, n + 1)), "first": [1], "last": [n]}[at]


def _margin(hm: HardModel, o, run: ExactRun, n: int) -> tuple[Fraction | None, int, int]:
    if o.type == "numerical":
        return None, -1, -1
    rows = read_rows(o.at, n)
    x = run.x
    if run.xr is not None:  # a model with layer norms: rigorous lower bounds from the balls
        best = None
        for b in range(x.num.shape[0]):
            for i in rows:
                m = margin_at(o, run, b, i)
                if best is None or m < best[0]:
                    best = (m, b, i)
        return best
    if o.type == "boolean":
        y = x.num[:, rows, o.coords[0]]
        p, q = o.threshold.numerator, o.threshold.denominator
        diff = np.abs(_obj(y) * q - p * x.den)
        flat = int(np.argmin(diff))
        b, i = np.unravel_index(flat, diff.shape)
        return Fraction(int(diff[b, i]), x.den * q), int(b), rows[int(i)]
    vals = x.num[:, rows][..., o.coords]
    s = np.sort(_obj(vals), axis=-1)
    diff = s[..., -1] - s[..., -2]
    flat = int(np.argmin(diff))
    b, i = np.unravel_index(flat, diff.shape)
    return Fraction(int(diff[b, i]), 2 * x.den), int(b), rows[int(i)]


def _obj(a):
    return a if a.dtype == object else a.astype(object)


# --------------------------------------------------------------------------------------------
# exhaustive and searched analysis


def analyse_gaps(hm: HardModel, n_max: int, *, exhaustive_limit: int = DEFAULT_EXHAUSTIVE_LIMIT,
                 search_words: int = DEFAULT_SEARCH_WORDS, search_max_len: int = DEFAULT_SEARCH_MAX_LEN,
                 seed: int = 0, method: str = "auto", time_limit_s: float | None = None,
                 progress=None) -> GapReport:
    """Minimum gap per head (and output margins) over inputs of length 1..``n_max`` (module docstring).

    ``method``: "auto" (exhaustive when ``Σ|Σ|^n ≤ exhaustive_limit``, else searched),
    "exhaustive" or "searched".  Search: about ``search_words`` exact evaluations, lengths capped
    at ``search_max_len`` (a note records it), deterministic for a given ``seed``.
    Raises :class:`ParameterError` for ``n_max < 1`` or exhaustive beyond the limit, and
    :class:`ModelFormatError` if ``n_max`` exceeds a positional table.
    """
    if n_max < 1:
        raise ParameterError(f"n_max must be >= 1, got {n_max}")
    hm.check_length(n_max)
    k = len(hm.alphabet)
    total = count_words(k, n_max, cap=exhaustive_limit)
    if method == "auto":
        method = "exhaustive" if total <= exhaustive_limit else "searched"
    elif method == "exhaustive" and total > exhaustive_limit:
        raise ParameterError(f"--method exhaustive: {word_count_text(k, n_max)} words of length <= {n_max}, more "
                             f"than the exhaustive limit {exhaustive_limit} (raise it with --exhaustive-limit; the "
                             "analysis evaluates every word exactly, O(n^2) per word and head)")
    t0 = time.perf_counter()
    eng = _engine(hm)
    agg = _Agg(hm)
    if method == "exhaustive":  # the deterministic split, here or on a cluster (gap_tasks.TASK_MAP)
        for part in map_tasks(partial(exhaustive_part, hm), exhaustive_tasks(k, n_max), progress):
            agg.absorb(part)
        rep = GapReport(method="exhaustive", n_max=n_max, alphabet_size=k, words=agg.words,
                        lengths=list(range(1, n_max + 1)), heads=agg.heads, outputs=agg.outputs)
        rep.layernorms = agg.lns
    elif method == "searched":
        rep = _search(hm, eng, agg, n_max, search_words, search_max_len, seed, time_limit_s, progress)
    else:
        raise ParameterError(f"method must be auto, exhaustive or searched, got {method!r}")
    for name, (w, i) in agg.ambiguous.items():
        rep.notes.append(f"head {name}: on {''.join(w)!r} row {i} the scores' balls (layer norm, precision 2^-"
                         f"{PREC}) overlap at the maximum without an exact tie: gap reported as 0")
    rep.seconds = time.perf_counter() - t0
    return rep


def _periodic(k: int, n: int, max_period: int = 3) -> list[tuple[int, ...]]:
    out = {}
    for p in range(1, max_period + 1):
        for u in itertools.product(range(1, k + 1), repeat=p):
            out[tuple((u * (n // p + 1))[:n])] = None
    return list(out)


def _search(hm, eng, agg, n_max, budget, max_len, seed, time_limit_s, progress) -> GapReport:
    rng = np.random.default_rng(seed)
    k = len(hm.alphabet)
    top = min(n_max, max_len)
    # every length up to 64 (a minimum may sit at any length: found by review), then a log grid
    grid = sorted(set(range(1, min(top, 64) + 1)) | {top, top - 1}
                  | {max(1, int(round(top ** (t / 24)))) for t in range(25)})
    grid = [L for L in grid if 1 <= L <= top]
    long = [L for L in sorted({n_max, (top + n_max) // 2}) if top < L <= DENSE_CAP]  # few words, but the longest
    deadline = None if time_limit_s is None else time.perf_counter() + time_limit_s
    used = 0
    pool: dict[tuple[int, ...], dict[str, Fraction | None]] = {}

    def evaluate(words: list[tuple[int, ...]]) -> None:
        nonlocal used
        by_len: dict[int, list[tuple[int, ...]]] = {}
        for w in dict.fromkeys(words):  # each distinct word once
            if w not in pool:
                by_len.setdefault(len(w), []).append(w)
        for L, ws in by_len.items():
            for c0 in range(0, len(ws), CHUNK if L <= 64 else max(1, CHUNK * 64 // (L * L) + 1)):
                if used >= budget or (deadline is not None and time.perf_counter() > deadline):
                    return
                chunk = ws[c0:c0 + (CHUNK if L <= 64 else max(1, CHUNK * 64 // (L * L) + 1))]
                tok = np.array(chunk, dtype=np.int64).reshape(len(chunk), L)
                run = eng.run(tok)
                agg.add(tok, run)
                used += len(chunk)
                per_head = {name: _word_gaps(rows) for name, rows in run.heads.items()}
                for b, w in enumerate(chunk):
                    pool[w] = {name: gs[b] for name, gs in per_head.items()}

    # 1. periodic and random words at every grid length, about a third of the budget each
    share = max(1, (budget // 3) // max(len(grid), 1))
    start = []
    for L in grid:  # shortest periods first, as many as the share allows
        start.extend(_periodic(k, L, max_period=max(1, min(3, int(math.log(share + 1, max(k, 2)))))))
    for L in grid:
        for _ in range(min(share, k**L)):
            start.append(tuple(int(t) for t in rng.integers(1, k + 1, size=L)))
    for L in long:
        start.extend(_periodic(k, L, 2))
        start.extend(tuple(int(t) for t in rng.integers(1, k + 1, size=L)) for _ in range(4))
    if progress:
        progress(f"search: {len(start)} periodic and random words")
    evaluate(start)
    # 2. local search: expand the worst unexpanded word of each head — its whole neighbourhood
    #    (every single-symbol change, every insertion and deletion, within the searched lengths)
    #    in one batch; repeat while the budget lasts.  Expanding a word is deterministic; the
    #    random restarts below only feed the frontier when it runs dry.
    import heapq
    frontier: dict[str, list] = {name: [] for name in agg.heads}
    seen_in_frontier: set[tuple[int, ...]] = set()

    def push(words) -> None:
        for w in words:
            if w in seen_in_frontier or len(w) > top:
                continue
            seen_in_frontier.add(w)
            for name, g in pool[w].items():
                if g is not None and name in frontier:
                    heapq.heappush(frontier[name], (g, len(w), w))

    def neighbours(w: tuple[int, ...]) -> list[tuple[int, ...]]:
        out = []
        L = len(w)
        for pos in range(L):
            for t in range(1, k + 1):
                if t != w[pos]:
                    out.append(w[:pos] + (t,) + w[pos + 1:])
            if L > 1:
                out.append(w[:pos] + w[pos + 1:])
        if L < top:
            for pos in range(L + 1):
                for t in range(1, k + 1):
                    out.append(w[:pos] + (t,) + w[pos:])
        return out

    push(list(pool))
    expanded: set[tuple[int, ...]] = set()
    rounds = 0
    space = sum(k**L for L in grid)
    while used < budget and (deadline is None or time.perf_counter() < deadline):
        if len(pool) >= space:  # every word of the searched lengths seen
            break
        rounds += 1
        batch: list[tuple[int, ...]] = []
        for name, h in frontier.items():
            while h and h[0][2] in expanded:
                heapq.heappop(h)
            if h:
                w = heapq.heappop(h)[2]
                expanded.add(w)
                batch.extend(c for c in neighbours(w) if c not in pool)
        batch = list(dict.fromkeys(batch))
        if not batch:  # nothing left to expand: a random restart at a random searched length
            batch = [tuple(int(t) for t in rng.integers(1, k + 1, size=int(rng.choice(grid)))) for _ in range(16)]
            batch = [b for b in batch if b not in pool]
            if not batch:
                continue
        if progress:
            progress(f"search round {rounds}: {used}/{budget} words")
        batch = batch[: max(1, budget - used)]
        evaluate(batch)
        push(batch)
    rep = GapReport(method="searched", n_max=n_max, alphabet_size=k, words=agg.words, lengths=grid + long,
                    heads=agg.heads, outputs=agg.outputs, seed=seed, layernorms=agg.lns)
    rep.notes.append(f"searched {agg.words} of {word_count_text(k, n_max)} words (periodic, random, local search); "
                     "the minimum found is exact for these inputs but NOT proved for all inputs")
    if top < n_max:
        done = f"; lengths {', '.join(map(str, long))} only with periodic and a few random words" if long else ""
        rep.notes.append(f"local search on lengths <= {top} (search_max_len){done}"
                         + (f"; lengths above {DENSE_CAP} were not evaluated" if n_max > DENSE_CAP else ""))
    return rep


def _word_gaps(rows: HeadRows) -> list[Fraction | None]:
    """Per word of a batch: the head's gap (min over query rows ≥ 1; a UHA tie is 0; None if no
    row has a competitor), vectorised over rows."""
    valid = rows.has_rest[:, 1:]
    g = rows.gap_num[:, 1:]
    if g.dtype == object:
        m = np.where(valid, g, float("inf")).min(axis=1)
    else:
        m = np.where(valid, g, np.iinfo(np.int64).max).min(axis=1)
    any_valid = valid.any(axis=1)
    tied = (rows.ties[:, 1:] >= 2).any(axis=1) if rows.rule != "AHA" else np.zeros(len(g), dtype=bool)
    out: list[Fraction | None] = []
    for b in range(len(g)):
        if tied[b]:
            out.append(Fraction(0))
        elif not any_valid[b]:
            out.append(None)
        else:
            out.append(rows.scale * Fraction(int(m[b]), rows.den))
    return out
