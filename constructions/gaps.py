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

import numpy as np

from .errors import ParameterError
from .exact import ExactRun, HeadRows
from .exact_balls import PREC, exact_engine, margin_at
from .hard_model import HardModel
from .parameters import DEFAULT_EXHAUSTIVE_LIMIT, DEFAULT_SEARCH_MAX_LEN, DEFAULT_SEARCH_WORDS

DENSE_CAP = 4096  # longest word the searched analysis evaluates (exact scores cost O(n^2) per head)
CHUNK = 2048


@dataclass
class HeadGap:
    """Gap of one head over the analysed inputs (exact).

    * ``gap``: the gap the bound uses — AHA: min of ``s* − max_{j∉A} s_j``; UHA: 0 if some row has
      a tied maximum, else the same; None if no row ever had a competitor;
    * ``word``/``row``: an input and query row (1-based position) attaining ``gap``;
    * ``ties_max``: the largest argmax set seen (AHA ties add the distortion term of THEORY §6);
    * ``gap_untied`` (+ ``word_untied``/``row_untied``): the gap to the non-maximal positions
      ignoring ties (what a UHA tie-break has to stay below).
    """

    name: str
    layer: int
    mask: str
    rule: str
    gap: Fraction | None = None
    word: tuple[str, ...] | None = None
    row: int = -1
    ties_max: int = 0
    gap_untied: Fraction | None = None
    word_untied: tuple[str, ...] | None = None
    row_untied: int = -1

    def to_json(self) -> dict:
        return {"head": self.name, "layer": self.layer, "mask": self.mask, "rule": self.rule,
                "gap": fraction_str(self.gap), "gap_decimal": fraction_decimal(self.gap),
                "attained_by": None if self.word is None else {"word": list(self.word), "row": self.row},
                "ties_max": int(self.ties_max), "gap_untied": fraction_str(self.gap_untied),
                "gap_untied_decimal": fraction_decimal(self.gap_untied)}


@dataclass
class OutputMargin:
    """Smallest rounding margin of one output over the analysed inputs (exact; None for numerical)."""

    name: str
    type: str
    margin: Fraction | None = None
    word: tuple[str, ...] | None = None
    row: int = -1

    def to_json(self) -> dict:
        return {"output": self.name, "type": self.type, "margin": fraction_str(self.margin), "margin_decimal": fraction_decimal(self.margin),
                "attained_by": None if self.word is None else {"word": list(self.word), "row": self.row}}


@dataclass
class LNVariance:
    """Smallest variance of one layer norm's input over the analysed inputs (every row, BOS
    included; a rigorous lower bound from the ball engine, :mod:`softhard.constructions.exact_balls`),
    with the word and row attaining it: the premise of the norm's local Lipschitz bound."""

    name: str
    var: Fraction | None = None
    word: tuple[str, ...] | None = None
    row: int = -1

    def to_json(self) -> dict:
        return {"layernorm": self.name, "variance_min": fraction_str(self.var),
                "variance_min_decimal": fraction_decimal(self.var),
                "attained_by": None if self.word is None else {"word": list(self.word), "row": self.row}}


@dataclass
class GapReport:
    """Result of :func:`analyse_gaps`.

    ``method``: "exhaustive" (every word of length 1..n_max: the minima are established) or
    "searched" (the minima over the ``words`` inputs tried; not a proof); ``lengths``: the lengths
    evaluated; ``heads``/``outputs``: per head / output; ``notes``: caveats.
    """

    method: str
    n_max: int
    alphabet_size: int
    words: int
    lengths: list[int]
    heads: dict[str, HeadGap]
    outputs: dict[str, OutputMargin]
    seconds: float = 0.0
    seed: int | None = None
    notes: list[str] = field(default_factory=list)
    layernorms: dict[str, LNVariance] = field(default_factory=dict)

    @property
    def exhaustive(self) -> bool:
        return self.method == "exhaustive"

    def zero_gap(self) -> list[HeadGap]:
        """Heads with gap 0 on some analysed input: not simulable by softmax this way (THEORY §6)."""
        return [h for h in self.heads.values() if h.gap is not None and h.gap <= 0]

    @property
    def simulable(self) -> bool:
        return not self.zero_gap()

    def to_json(self) -> dict:
        out = {"method": self.method, "n_max": self.n_max, "alphabet_size": self.alphabet_size,
               "words": self.words, "lengths": self.lengths if len(self.lengths) <= 40 else
               [self.lengths[0], "...", self.lengths[-1]],
               "heads": [h.to_json() for h in self.heads.values()],
               "outputs": [o.to_json() for o in self.outputs.values()],
               "simulable": self.simulable, "seconds": round(self.seconds, 4), "seed": self.seed,
               "notes": list(self.notes)}
        if self.layernorms:
            out["layernorms"] = [v.to_json() for v in self.layernorms.values()]
        return out


def fraction_str(x: Fraction | None) -> str | None:
    """``"p/q"`` (or ``"p"``) of an exact value; None stays None."""
    if x is None:
        return None
    return f"{x.numerator}/{x.denominator}" if x.denominator != 1 else str(x.numerator)


def fraction_decimal(x: Fraction | None) -> str | None:
    """12 significant digits of an exact value (for reading only); None stays None."""
    if x is None:
        return None
    import mpmath
    with mpmath.workdps(30):
        return mpmath.nstr(mpmath.mpf(x.numerator) / x.denominator, 12)


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

    def _word(self, ids) -> tuple[str, ...]:
        return tuple(self.hm.alphabet[int(t) - 1] for t in ids)


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


def count_words(k: int, n_max: int) -> int:
    """``Σ_{n=1}^{n_max} k^n``."""
    return sum(k**n for n in range(1, n_max + 1))


def all_tokens(k: int, n: int):
    """Every word of length n over ``k`` symbols as token ids (1-based), in chunks of ≤ CHUNK rows."""
    it = itertools.product(range(1, k + 1), repeat=n)
    while True:
        block = list(itertools.islice(it, CHUNK))
        if not block:
            return
        yield np.array(block, dtype=np.int64).reshape(len(block), n)


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
    total = count_words(k, n_max)
    if method == "auto":
        method = "exhaustive" if total <= exhaustive_limit else "searched"
    t0 = time.perf_counter()
    eng = exact_engine(hm)
    agg = _Agg(hm)
    if method == "exhaustive":
        for n in range(1, n_max + 1):
            if progress:
                progress(f"exhaustive: length {n} ({k ** n} words)")
            for tok in all_tokens(k, n):
                agg.add(tok, eng.run(tok))
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
    total = count_words(k, n_max)
    tot = str(total) if total < 10**12 else f"about 10^{int(total.bit_length() * 0.30102999566398)}"
    rep.notes.append(f"searched {agg.words} of {tot} words (periodic, random, local search); "
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
