"""Numeric runs of the hard and soft transformers on many inputs, reporting what each head did.

This module only *observes*: per attention head (graph node) and word length, the largest leak
``δ`` seen, where it was seen, the largest attention-output error ``|soft − AHA|`` on the same
residual stream, and a rigorous float-rounding allowance for the leak; plus, per word, whether the
soft model's clean output equals the hard model's.  Comparison with the symbolic bounds happens in
:mod:`softhard.bounds.confirm` (constructions imports nothing of ours; ARCHITECTURE.md).

A numeric run never proves anything: it confirms or refutes a bound (THEORY §7, §8).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np

from .engine import forward_pass
from .softmax import EXP_FLUSH, check_inv_tau
from .transformer import Transformer

U64 = np.finfo(np.float64).eps / 2  # unit roundoff of float64


def all_words(alphabet: Sequence[str], n: int) -> list[tuple[str, ...]]:
    """All ``|alphabet|^n`` words of length ``n`` (lexicographic)."""
    return list(itertools.product(alphabet, repeat=n))


def random_words(alphabet: Sequence[str], count: int, n_max: int, seed: int = 0,
                 n_min: int = 1) -> list[tuple[str, ...]]:
    """``count`` words with lengths uniform in ``[n_min, n_max]`` and symbols uniform (fixed seed)."""
    rng = np.random.default_rng(seed)
    lens = rng.integers(n_min, n_max + 1, size=count)
    alph = np.array(list(alphabet), dtype=object)
    return [tuple(alph[rng.integers(0, len(alphabet), size=k)]) for k in lens]


class RandomWords:
    """The words of :func:`random_words` (same seed, same words, same order), generated one at a
    time on every iteration: memory O(one word) instead of O(all words), for confirmation runs at
    large n.  ``len()`` is the number of words; :attr:`positions` their total length + BOS each."""

    def __init__(self, alphabet: Sequence[str], count: int, n_max: int, seed: int = 0, n_min: int = 1):
        self.alphabet, self.count, self.seed = list(alphabet), count, seed
        rng = np.random.default_rng(seed)
        self.lens = rng.integers(n_min, n_max + 1, size=count)
        self._state = rng.bit_generator.state  # after the lengths: where the symbols start
        self.positions = int(self.lens.sum(dtype=object)) + count

    def __len__(self) -> int:
        return self.count

    def __iter__(self):
        rng = np.random.default_rng(self.seed)
        rng.bit_generator.state = self._state
        alph = np.array(self.alphabet, dtype=object)
        for k in self.lens:
            yield tuple(alph[rng.integers(0, len(self.alphabet), size=k)])


def periodic_words(alphabet: Sequence[str], n: int, max_period: int = 3) -> list[tuple[str, ...]]:
    """Words ``(u)^{n/|u|}`` (truncated to length n) for every ``u`` with ``|u| ≤ max_period``.

    The candidate pool of the adversarial search: a head's key is constant or periodic on these,
    which is what attains the leak bounds of THEORY §4 (a long run of key = 1, or key ≡ 0).
    """
    out: dict[tuple[str, ...], None] = {}
    for p in range(1, max_period + 1):
        for u in itertools.product(alphabet, repeat=p):
            w = tuple((u * (n // p + 1))[:n])
            out[w] = None
    return list(out)


def group_by_length(words: Iterable[Sequence[str]]) -> dict[int, list[tuple[str, ...]]]:
    """``{n: [words of length n]}`` in increasing n."""
    d: dict[int, list[tuple[str, ...]]] = {}
    for w in words:
        d.setdefault(len(w), []).append(tuple(w))
    return dict(sorted(d.items()))


@dataclass
class HeadObservation:
    """Worst case one head showed on the words of one length ``n``.

    ``leak``: largest observed leak; ``word``/``row``: where (row = query position, 1-based);
    ``output_error``: largest ``|soft − hard|`` of the head's raw output; ``allowance_rel``: the
    relative float64 rounding allowance for the leak (see :func:`leak_rounding_allowance`);
    ``inputs``: number of words.
    """

    node: str
    n: int
    inv_tau: float
    inputs: int
    leak: float
    word: tuple[str, ...]
    row: int
    output_error: float
    allowance_rel: float
    path: str


@dataclass
class RunSummary:
    """Per head and length: :class:`HeadObservation`; per word: clean outputs equal?"""

    heads: dict[str, dict[int, HeadObservation]] = field(default_factory=dict)
    words: int = 0
    mismatches: list[tuple[tuple[str, ...], int]] = field(default_factory=list)  # (word, position)
    max_output_deviation: float = 0.0  # max |soft clean output − hard output| (float rounding only)

    def merge(self, other: "RunSummary") -> None:
        for node, per_n in other.heads.items():
            mine = self.heads.setdefault(node, {})
            for k, ob in per_n.items():
                if k not in mine:
                    mine[k] = ob
                else:
                    cur = mine[k]
                    inputs = cur.inputs + ob.inputs
                    best = ob if ob.leak > cur.leak else cur
                    mine[k] = HeadObservation(**{**best.__dict__, "inputs": inputs,
                                                 "output_error": max(cur.output_error, ob.output_error),
                                                 "allowance_rel": max(cur.allowance_rel, ob.allowance_rel)})
        self.words += other.words
        self.mismatches.extend(other.mismatches)
        self.max_output_deviation = max(self.max_output_deviation, other.max_output_deviation)


#: smallest positive weight the engine keeps: exp(EXP_FLUSH); smaller ones are flushed to 0
_FLUSH_WEIGHT = float(np.exp(EXP_FLUSH))
#: relative error of NumPy's float64 exp: at most 4 ulp (SVML, numpy PR 19478), i.e. ≤ 8u
_EXP_ULP_REL = 8 * U64


def leak_rounding_allowance(score_scale: float, key_dim: int, inv_tau: float, N: int, *,
                            rounding_terms: int | None = None, observed: float | None = None) -> float:
    """Relative float64 rounding allowance for a leak ``S/(a+S)`` computed by either attention path.

    The reference is the exact softmax of the exact scores ``s_ij = <x_i W_Q, x_j W_K>`` of the
    residual stream the engine holds.  Forward error analysis (Higham, *Accuracy and Stability*,
    §2-§3; ``u = 2^-53``, ``γ_m = m·u/(1 − m·u)``):

    * each computed score is a sum of products of stored numbers with ``m = rounding_terms``
      roundings on every path (dense: ``x W_Q``, ``x W_K``, ``Q·K``; structured: the same products
      regrouped into ``a(j) + q(i)·g(j)``), so ``|ŝ − s| ≤ ε_s = γ_m·score_scale``
      (``m = key_dim + 2`` if not given);
    * an exponent ``x = (s_j − s*)/τ`` is formed from score differences, ``≤ 0``.  Dense: one
      difference and one product per term.  Structured: the exponent of a term is a sum of
      differences of neighbouring members, each within relative ``2.01u``, all of one sign, so
      the errors telescope to ``2.01u·|x|``; plus the candidate's own difference.  Either way
      ``|x̂ − x| ≤ 2ε_s/τ + 4.02u·|x|``; only terms with ``|x| ≤ X = min(2·score_scale/τ,
      −EXP_FLUSH + 1 + 2ε_s/τ)`` are kept, the rest are flushed to 0 (below);
    * every ``exp`` is within ``8u`` (4 ulp); the structured scan multiplies one factor per member
      in a term's chain (≤ N factors) with one multiplication and one addition each, plus two
      roundings per recursion level; the dense sum adds ≤ N terms; sums of non-negative terms
      keep the largest relative error of their terms.  Total: every term, hence ``S`` and the
      leak, is within relative ``expm1(2ε_s/τ + 4.02u·X + (10N + 64)u)``.

    That is the returned value.  Terms below ``exp(EXP_FLUSH) < 2^-1016`` are flushed to 0 and
    intermediates can be subnormal: an *absolute* error ``≤ (10N + 64)(N + 1)·2^-1016``.  When
    ``observed`` (the computed leak) is given it is folded in: if the true leak ``≤ bound``, then
    ``observed ≤ bound·(1 + allowance)`` with ``allowance = rel + abs·(1 + rel)/(observed − abs)``
    (``inf`` when ``0 < observed ≤ abs``: such a leak is below float64 resolution and can refute
    nothing).
    """
    m = (key_dim + 2) if not rounding_terms else int(rounding_terms)
    gamma = m * U64 / (1 - m * U64)
    eps_s = gamma * score_scale
    X = min(2 * score_scale * inv_tau, -EXP_FLUSH + 1 + 2 * eps_s * inv_tau)
    dx = 2 * eps_s * inv_tau + 4.02 * U64 * X + (10 * N + 64) * U64
    with np.errstate(over="ignore"):  # inf: no rounding guarantee at all (e.g. 1/τ ~ 1e19)
        rel = float(np.expm1(dx))
    if observed is None or observed == 0:
        return rel
    abs_err = (10 * N + 64) * (N + 1) * 2.0 ** -1016
    if observed <= abs_err:
        return float("inf")
    return rel + abs_err * (1 + rel) / (observed - abs_err)


#: default budget of positions (words × (n+1)) per batch in :func:`observe`: keeps the residual
#: stream and the per-head traces of one batch to a few hundred MiB for ~20 coordinates
BATCH_POSITIONS = 1 << 20
#: positions per batch of the adversarial search (:func:`adversarial_words`): on tomita4 (regime T)
#: its 66 candidates at n = 10^4 in one batch of 660,066 positions faulted in 60k pages (0.18 s of
#: system CPU, 321 MB peak); in batches of 2^16 positions, 9k pages (0.03 s) and 152 MB
#: (benchmarks/README.md, "ISSUE 16, stop 35")
SEARCH_BATCH_POSITIONS = 1 << 16


def _batches(ws: list, n: int, batch: int, max_positions: int):
    size = max(1, min(batch, max_positions // (n + 1)))
    for b0 in range(0, len(ws), size):
        yield ws[b0:b0 + size]


def length_batches(words: Iterable[Sequence[str]], batch: int = 512, max_positions: int = BATCH_POSITIONS):
    """Yield ``(n, chunk)``: words of one length ``n``, at most ``batch`` words and about
    ``max_positions`` positions per chunk.  ``words`` is read lazily and at most about
    ``4·max_positions`` symbols are held at a time (then grouped by length): memory O(chunk), not
    O(all words), whatever the number and length of the words."""
    buf: list = []
    pos = 0
    for w in words:
        buf.append(w)
        pos += len(w) + 1
        if pos >= 4 * max_positions:
            for n, ws in _group_by_length_raw(buf).items():
                for chunk in _batches(ws, n, batch, max_positions):
                    yield n, chunk
            buf, pos = [], 0
    for n, ws in _group_by_length_raw(buf).items():
        for chunk in _batches(ws, n, batch, max_positions):
            yield n, chunk


#: the longest attaining or mismatching word a summary keeps whole (longer: first symbols, "…")
KEEP_WORD = 256


def short_word(w: Sequence[str]) -> tuple[str, ...]:
    """``w`` as a tuple, cut to :data:`KEEP_WORD` symbols (the last one "…") when longer: a
    summary keeps a few words per head and length, never O(n) each."""
    return tuple(w) if len(w) <= KEEP_WORD else tuple(w[:KEEP_WORD - 1]) + ("…",)


def _observe_batch(model: Transformer, chunk: list, n: int, it: float, path: str, out_ix: int):
    tok = model.encode(chunk)
    soft, _, hcols = forward_pass(model, tok, soft=True, inv_tau=it, path=path, chunk=None, keep_residuals=False,
                          pair=True, hard_columns=[out_ix])
    heads = {}
    for name, tr in soft.heads.items():
        leak = tr.leak[:, 1:]
        bi, ri = np.unravel_index(int(np.argmax(leak)), leak.shape)
        err = float(np.max(np.abs(tr.soft[:, 1:] - tr.hard[:, 1:]))) if tr.soft.size else 0.0
        lk = float(leak[bi, ri])
        heads[name] = (lk, short_word(chunk[bi]), int(ri) + 1, err, tr)
    hs, ss = hcols[out_ix][:, 1:], soft.x[:, 1:, out_ix]
    dev = float(np.max(np.abs(hs - ss)))
    bad = np.argwhere((ss > 0.5) != (hs > 0.5))
    mism = [(short_word(chunk[b]), int(p) + 1) for b, p in bad[:100]]
    # keep only what the summary needs (the traces of a batch at n = 10^6 are large)
    heads = {k: (lk, w, r, e, tr.score_scale, tr.key_dim, tr.rounding_terms, tr.path)
             for k, (lk, w, r, e, tr) in heads.items()}
    return heads, dev, mism, len(chunk)


def observe(model: Transformer, words: Sequence[Sequence[str]], inv_tau: float | Callable[[int], float],
            *, batch: int = 512, path: str = "auto", max_positions: int = BATCH_POSITIONS,
            workers: int = 1) -> RunSummary:
    """Run ``model`` hard and soft on ``words`` (any lengths) and summarise per head and length.

    ``inv_tau``: a number, or a function of the word length ``n`` (regime T's ``1/τ(n)``).
    The soft model's clean output (coordinate ``model.outputs[0]``) is compared with the hard one
    at every position: a position where they fall on different sides of 1/2 is a mismatch;
    ``max_output_deviation`` records the largest difference (float rounding in the clean-up MLPs).
    Words of one length run in batches of at most ``batch`` words and ``max_positions`` positions,
    read lazily (:func:`length_batches`; ``words`` may be a generator-backed :class:`RandomWords`)
    and summarised with attaining words cut to :data:`KEEP_WORD` symbols, so memory is O(batch)
    at any n and number of words; the hard and soft models run together
    (:func:`softhard.constructions.engine.forward_pair`).  ``workers`` > 1 runs batches in that
    many threads (NumPy releases the GIL); the summary is the same for any ``workers``.
    Shapes: words are sequences of alphabet symbols.  Raises ``ParameterError`` for bad input.
    """
    summary = RunSummary()
    out_ix = model.index(model.outputs[0])
    jobs = ((chunk, n, float(inv_tau(n) if callable(inv_tau) else inv_tau))
            for n, chunk in length_batches(words, batch, max_positions))
    if workers > 1:  # threads need the jobs up front: memory O(all words) (workers = 1 streams)
        from concurrent.futures import ThreadPoolExecutor  # stdlib, ~13 ms (logging): loaded only for workers > 1

        jobs = list(jobs)
        with ThreadPoolExecutor(max_workers=workers) as ex:
            results = list(ex.map(lambda j: _observe_batch(model, j[0], j[1], j[2], path, out_ix), jobs))
        pairs = zip(jobs, results)
    else:
        pairs = (((c, n, it), _observe_batch(model, c, n, it, path, out_ix)) for c, n, it in jobs)
    best: dict[tuple[str, int], list] = {}
    for (chunk, n, it), (heads, dev, mism, count) in pairs:
        for name, (lk, w, r, e, scale, kd, rt, pth) in heads.items():
            allow = leak_rounding_allowance(scale, kd, it, n + 1, rounding_terms=rt, observed=lk)
            cur = best.get((name, n))
            if cur is None:
                best[(name, n)] = [lk, w, r, e, allow, count, it, pth]
            else:
                if lk > cur[0]:
                    cur[0], cur[1], cur[2], cur[7] = lk, w, r, pth
                cur[3] = max(cur[3], e)
                cur[4] = max(cur[4], allow)
                cur[5] += count
        summary.words += count
        summary.mismatches.extend(mism)
        summary.max_output_deviation = max(summary.max_output_deviation, dev)
    for (name, n), (lk, w, r, e, allow, count, it, pth) in best.items():
        summary.heads.setdefault(name, {})[n] = HeadObservation(
            node=name, n=n, inv_tau=it, inputs=count, leak=lk, word=tuple(w), row=r, output_error=e,
            allowance_rel=allow, path=pth)
    return summary


def _group_by_length_raw(words: Iterable[Sequence[str]]) -> dict[int, list]:
    """Like :func:`group_by_length` but keeps the word objects as given (no copies)."""
    d: dict[int, list] = {}
    for w in words:
        d.setdefault(len(w), []).append(w)
    return dict(sorted(d.items()))


def adversarial_words(model: Transformer, n: int, inv_tau: float, *, max_period: int = 3) -> dict[str, tuple[str, ...]]:
    """Per head, the periodic word of length ``n`` (see :func:`periodic_words`) with the largest leak.

    This is the adversarial family of THEORY §4 found by search rather than by hand, so it works
    for any formula: for each head it picks the pattern whose key comes closest to "a long run of
    b = 1" (or b ≡ 0).  Returns ``{head name: word}``.  A model with average-hard selections
    (graph node attribute ``attention = "average"``, THEORY §4b) is also searched on words made of
    a short prefix or suffix and a periodic rest (:func:`edge_words`: the key = 1 at one position
    that attains their output bound), and per such head the word with the largest output error
    ``|soft − hard|`` is added as ``"<head>:output"``.

    The candidates run in batches of :data:`SEARCH_BATCH_POSITIONS` positions, in a fixed order,
    and per criterion the first candidate with the largest value wins, so the result depends only
    on the arguments and that constant.  A word's leak can depend on its batch: the structured path
    decides per batch, and where the stream's keys are not Boolean (a too-warm 1/τ, upstream leaks
    above η) the argmax set of a later head can change with rounding-level differences (6.8e-14 in
    its input moved tomita2's leak by 0.67 while its output moved by 4.6e-14).  At the certified
    1/τ of every example formula (n_max 10^4 and 10^6, every regime it builds in, n ≤ 10^4) the words
    chosen were those of one batch of all candidates, every criterion bit-identical (measured, not
    proved: benchmarks/README.md, "ISSUE 16, stop 35").
    """
    cands = periodic_words(model.alphabet, n, max_period)
    g = model.meta.get("graph") if isinstance(model.meta, dict) else None
    outs = {v for v, a in g.nodes(data=True) if a.get("attention") == "average"} if g is not None else set()
    if outs:
        cands = list(dict.fromkeys(cands + edge_words(model.alphabet, n)))
    best: dict[str, tuple[float, int]] = {}
    k0 = 0

    def crits(name, tr):  # per word, the head's largest leak (and output error): its arrays are freed
        out = [(name, tr.leak[:, 1:].max(axis=1))]
        if name in outs:
            out.append((name + ":output", np.abs(tr.soft[:, 1:] - tr.hard[:, 1:]).max(axis=(1, 2))))
        return out

    check_inv_tau(inv_tau)
    for chunk in _batches(cands, n, len(cands), SEARCH_BATCH_POSITIONS):
        soft, _, _ = forward_pass(model, model.encode(chunk), soft=True, inv_tau=float(inv_tau), path="auto",
                                  chunk=None, keep_residuals=False, pair=False, reduce=crits, heads_only=True)
        for name, per_head in soft.heads.items():
            for key, per_word in per_head:
                k = int(np.argmax(per_word))
                if key not in best or per_word[k] > best[key][0]:
                    best[key] = (float(per_word[k]), k0 + k)
        k0 += len(chunk)
    return {name: cands[k] for name, (_, k) in best.items()}


def edge_words(alphabet: Sequence[str], n: int, max_edge: int = 3, max_period: int = 2) -> list[tuple[str, ...]]:
    """Words ``u·v^k`` and ``v^k·u`` of length ``n`` with ``|u| ≤ max_edge``, ``|v| ≤ max_period``:
    a key that holds only near one end (THEORY §4b: one b = 1 position attains an average-hard
    selection's output bound)."""
    out: dict[tuple[str, ...], None] = {}
    for e in range(1, max_edge + 1):
        for u in itertools.product(alphabet, repeat=e):
            for p in range(1, max_period + 1):
                for v in itertools.product(alphabet, repeat=p):
                    if e >= n:
                        continue
                    tail = tuple((v * (n // p + 1))[:n - e])
                    out[tuple(u) + tail] = None
                    out[tail + tuple(u)] = None
    return list(out)


def two_edge_words(alphabet: Sequence[str], n: int, max_edge: int = 2) -> list[tuple[str, ...]]:
    """Words ``u·c^k·u'`` of length ``n`` with ``|u|, |u'| ≤ max_edge`` and ``c`` one symbol: keys
    that hold near both ends at once (a nested average-hard selection, e.g. tomita7's
    ``P (0 & P (1 & …))`` on ``1 0 1^{n−4} 0 1``, attains its output bound only with an inner key
    near the start and the outer query near the end).  ``|alphabet|^{2·max_edge+1}``-ish words."""
    out: dict[tuple[str, ...], None] = {}
    for e1 in range(1, max_edge + 1):
        for e2 in range(1, max_edge + 1):
            if e1 + e2 >= n:
                continue
            for u in itertools.product(alphabet, repeat=e1):
                for u2 in itertools.product(alphabet, repeat=e2):
                    for c in alphabet:
                        out[tuple(u) + (c,) * (n - e1 - e2) + tuple(u2)] = None
    return list(out)
