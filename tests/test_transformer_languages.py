"""The soft transformers accept exactly the example languages (issue 2, "Real input").

For each example and each regime, at the temperature the node bounds require for η = 1/4
(regime T: the tight requirement at the word's length; regime U: one fixed τ for every length),
the soft transformer's clean output at the judged position must equal Python's ``re.fullmatch``
on a regular expression written independently of the formula: all non-empty words up to length 12
and 10,000 random words of lengths 1..500 (members, mutated members, near misses, uniform).
The hard transformer is checked on the same words.  The words and their regex verdicts are drawn
and computed once per language (:func:`_words_and_members`) and shared by both regimes' tests.

Where padding is provably inert (:func:`_padding_inert`: every head causal, the verdict read at the
last symbol, no position-dependent coordinate that changes with the word's length read by any
layer, one temperature for the lengths), random words of up to ``PAD_LENGTHS`` consecutive lengths
run in one forward pass, padded at the end (ISSUE 16, lang14: ~500 calls of ~20 words cost more in
per-call overhead than their arithmetic).
"""

from __future__ import annotations

import functools
import itertools
import re
from fractions import Fraction

import numpy as np
import pytest

from languages import EXAMPLES, LANGUAGES, MAX_EXHAUSTIVE, random_words
from softhard.bounds.derive import required_inv_tau_many
from softhard.constructions.engine import forward, forward_pair
from softhard.constructions.parse import load_spec
from softhard.constructions.residual import mlp_reads, nonzero_rows
from softhard.constructions.transformer import MLP
from softhard.solver.pipeline import build

ETA = Fraction(1, 4)
SAFETY = 1 + 1e-6  # just above the tight requirement (the bound is then just below η)
PAD_LENGTHS = 8  # distinct lengths per padded batch (6-14 measured alike; 500 words per call)


def _inv_tau_schedule(c, lengths):
    """1/τ per length: max over the construction's node bounds of the tight requirement."""
    lengths = np.asarray(sorted(lengths))
    req = np.zeros(len(lengths))
    for nb in c.distinct_bounds():
        if c.regime == "U":
            expr, ns = nb.bound.all_n, np.full(len(lengths), 10**9)  # one τ for all n: δ < e^{-1/τ}
        else:
            expr, ns = nb.leak, lengths
        r = required_inv_tau_many(expr, ns, eta_value=c.eta, beta_value=c.beta)
        req = np.maximum(req, np.where(lengths >= nb.bound.n_min, r, 0.0))
    return dict(zip(lengths.tolist(), (np.maximum(req, 1e-3) * SAFETY).tolist()))


def _padding_inert(c) -> bool:
    """Whether the judged output of a word ``w`` is the same when ``w`` runs padded at the end.

    Exactly (real arithmetic): every head's mask is ``past`` or ``strict_past`` (a query never sees
    a later key), every other sublayer acts position by position, and no layer reads a coordinate
    whose positional value at a position ``j ≤ n`` changes with the word length ``n`` (regime U's
    ``rpos = n+1−j``, read only by future-looking heads; regime T's ``j/n`` is read: no padding), so
    the stream at positions ``≤ n`` — the judged one, the last — is the unpadded word's.  In floats
    the padded batch may round the heads' internals differently (the structured scan's blocks depend
    on the batch's size, as between any two batchings of one length); the judged outputs were
    compared bit for bit with the unpadded runs on every test word (benchmarks/README.md, lang14)."""
    m = c.model
    if c.spec.at != "last":
        return False
    reads: set[int] = set()
    for blk in m.blocks:
        for h in blk.heads:
            if h.mask not in ("past", "strict_past"):
                return False
            reads |= {int(r) for W in (h.W_Q, h.W_K, h.W_V) for r in nonzero_rows(W)}
        for sub in blk.mlps:
            reads |= mlp_reads(sub) if isinstance(sub, MLP) else {int(r) for r in sub.reads()}
    short, long_ = np.asarray(m.positional(MAX_EXHAUSTIVE)), np.asarray(m.positional(2 * MAX_EXHAUSTIVE))
    moving = np.flatnonzero(np.any(short != long_[:MAX_EXHAUSTIVE + 1], axis=0))
    return not reads & {int(col) for col in moving}


def _soft_verdicts(c, words, hard_up_to=10**9):
    """{word: (soft accepts, hard accepts or None, soft value)} with the schedule of
    :func:`_inv_tau_schedule`; the hard transformer is run on words up to ``hard_up_to``.

    Both transformers run in one :func:`forward_pair` pass (the hard one re-evaluated only where
    its stream differs from the soft one: the same operations in the same order as two separate
    :func:`forward` calls, tests/constructions/test_engine.py; 25-35% less CPU here); on the
    exhaustive lengths (up to ``MAX_EXHAUSTIVE``) the hard outputs are also checked equal to a
    separate ``forward(mode="hard")``."""
    by_len: dict[int, list[str]] = {}
    for w in words:
        by_len.setdefault(len(w), []).append(w)
    sched = _inv_tau_schedule(c, by_len)
    m = c.model
    out_ix = m.index(m.outputs[0])
    pad = c.spec.alphabet[0] if _padding_inert(c) else None
    res = {}
    # (lengths, words): one length each, or (padding inert) PAD_LENGTHS consecutive longer lengths
    # sharing one τ, padded at the end to the longest
    batches = [([n], ws) for n, ws in by_len.items() if n <= MAX_EXHAUSTIVE or not pad]
    if pad:
        rest = sorted(n for n in by_len if n > MAX_EXHAUSTIVE)
        for k in range(0, len(rest), PAD_LENGTHS):
            group = rest[k:k + PAD_LENGTHS]
            if len({sched[n] for n in group}) > 1:
                batches += [([n], by_len[n]) for n in group]
            else:
                batches.append((group, [w for n in group for w in by_len[n]]))
    for lengths, ws in batches:
        L, tau, rows = max(lengths), sched[lengths[0]], np.arange(len(ws))
        tok = m.encode([list(w) + [pad] * (L - len(w)) for w in ws])
        pos = np.array([len(w) for w in ws]) if c.spec.at == "last" else 1  # each word at its own last symbol
        if L <= hard_up_to:
            htr, strace = forward_pair(m, tok, inv_tau=tau)
            soft, hard = strace.x[rows, pos, out_ix], htr.x[rows, pos, out_ix]
            assert np.all((hard == 0) | (hard == 1)), "hard transformer output must be exactly Boolean"
            if L <= MAX_EXHAUSTIVE:
                np.testing.assert_array_equal(htr.x, forward(m, tok, mode="hard").x)
        else:
            soft = forward(m, tok, mode="soft", inv_tau=tau).x[rows, pos, out_ix]
            hard = [None] * len(ws)
        for w, s, h in zip(ws, soft, hard):
            res[w] = (bool(s > 0.5), None if h is None else bool(h > 0.5), float(s))
    return res, sched


@functools.cache
def _words_and_members(name: str) -> tuple[frozenset[str], dict[str, bool]]:
    """The test words of a language (every non-empty word up to ``MAX_EXHAUSTIVE`` and the random
    words) and ``{word: re.fullmatch(regex, word) is not None}``: the same for regimes T and U."""
    lang = LANGUAGES[name]
    regex = re.compile(lang.regex)
    words = ["".join(t) for k in range(1, MAX_EXHAUSTIVE + 1) for t in itertools.product(lang.alphabet, repeat=k)]
    words += random_words(lang, seed=777 + sorted(LANGUAGES).index(name))
    words = frozenset(words)
    return words, {w: regex.fullmatch(w) is not None for w in words}  # the regex once per word


@pytest.mark.parametrize("regime", ["T", "U"])
@pytest.mark.parametrize("name", sorted(LANGUAGES))
def test_soft_transformer_recognises_language(name: str, regime: str) -> None:
    spec = load_spec(str(EXAMPLES / f"{name}.ltl"))
    c = build(spec, regime, eta=ETA)
    words, member = _words_and_members(name)
    verdicts, sched = _soft_verdicts(c, words)
    assert verdicts.keys() == member.keys()
    wrong = [(w, v) for w, v in verdicts.items() if v[0] != member[w]]
    wrong_hard = [w for w, v in verdicts.items() if v[1] is not None and v[1] != member[w]]
    assert not wrong_hard, f"hard transformer disagrees with the regex on {wrong_hard[:3]}"
    assert not wrong, f"soft transformer disagrees with the regex on {len(wrong)} words, e.g. {wrong[:3]}"
    # clean outputs are Boolean up to float rounding in the clean-up MLPs
    assert max(min(abs(v[2]), abs(v[2] - 1)) for v in verdicts.values()) < 1e-9
    if regime == "U" and c.bounds:
        assert len(set(sched.values())) == 1  # one fixed temperature for every length
        assert abs(next(iter(sched.values())) / SAFETY - np.log(4)) < 1e-6  # 1/τ = ln(1/η)
    if regime == "T" and c.bounds:
        big = max(sched)
        selects = [a for _, a in c.graph.nodes(data=True) if a.get("op") == "select"]
        if selects and all(a.get("attention") == "average" for a in selects):
            # only average-hard selections (THEORY §4b): Θ(log n), exactly -2 ln x* with
            # x* = 2k/(1 + sqrt(1 + 4(n-2)k)), k = η/(1-η) (the output error S/(1+S) = η)
            k = float(ETA / (1 - ETA))
            x_star = 2 * k / (1 + np.sqrt(1 + 4 * (big - 2) * k))
            assert abs(sched[big] / SAFETY / (-2 * np.log(x_star)) - 1) < 1e-6
        else:
            # Θ(n): the requirement at the longest word is ≈ (n/β)·ln(1/η)
            assert 0.95 < sched[big] / (big / 0.25 * np.log(4)) < 1.1
