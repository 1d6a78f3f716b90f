"""The numeric engine (constructions/engine.py and its attention paths): dense and structured attention paths agree, the
structured path is accurate at 1/τ = 10^7 (against the dense path and an exact/mpmath
reference), the dense path does not depend on its chunk size, the engine falls back to dense when
the score structure does not hold, and the observation runs do not depend on batching/threads.
"""

from __future__ import annotations

import copy
import itertools
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from softhard.constructions.compile import compile_formula
from softhard.constructions.engine import HeadTrace, forward, forward_pair, run_head
from softhard.constructions.errors import ParameterError
from softhard.constructions.parse import parse_formula
from softhard.constructions.residual import embed_cols, sparsity, weights_fixed
from softhard.constructions.simulate import leak_rounding_allowance, observe, random_words, two_edge_words
from softhard.constructions.structured_attention import affine_scan
from softhard.constructions.transformer import MASKS, MLP, RULES, Block, Head, Transformer, mask_matrix
from softhard.constructions.weights import build_transformer

U = np.finfo(np.float64).eps / 2

FORMULAS = [
    "a S b",
    "(a & Y b) | (!a S b) | H (a | b)",
    "((a & Y b) S (b & !Y a)) & H (!a | Y b)",
    "(a U b) | ((!a S b) & H (a | Y b))",
    "X a | (b U a) | F (a & X b)",
    "G (a -> F b) & (b U a)",
]


def _model(formula: str, regime: str) -> Transformer:
    return build_transformer(compile_formula(parse_formula(formula), ["a", "b"]), regime)


def _abs_floor(N: int) -> float:
    return (10 * N + 64) * (N + 1) * 2.0 ** -1016


def _assert_same_head(td: HeadTrace, ts: HeadTrace, inv_tau: float, N: int) -> None:
    """Structured trace ``ts`` against the dense reference ``td`` on the same residual stream."""
    assert td.path == "dense" and ts.path == "structured"
    np.testing.assert_array_equal(ts.ties, td.ties)
    np.testing.assert_array_equal(ts.hard, td.hard)
    if td.leak is None:
        return
    rel = leak_rounding_allowance(td.score_scale, td.key_dim, inv_tau, N, rounding_terms=td.rounding_terms)
    tol = 2 * rel * np.maximum(td.leak, ts.leak) + 2 * _abs_floor(N)
    assert np.all(np.abs(ts.leak - td.leak) <= tol), float(np.max(np.abs(ts.leak - td.leak) - tol))
    vscale = max(1.0, float(np.max(np.abs(td.hard))))
    np.testing.assert_allclose(ts.soft, td.soft, rtol=0, atol=1e3 * N * U * vscale + 4 * rel * vscale)


# ------------------------------------------------------------------------------------------------
# compiled formula models (regimes T and U): every head, both paths


@pytest.mark.parametrize("regime", ["T", "U"])
@pytest.mark.parametrize("formula", FORMULAS)
def test_formula_models_dense_vs_structured(formula, regime):
    """Every head of a compiled model, on the residual stream that enters its block, through both
    paths.  Where all leaks are ≤ η (the required temperature and beyond) the clean-ups are exact,
    every key is Boolean and every head must take the structured path; at a too-high temperature
    a key can be a soft value and the engine may fall back to dense."""
    m = _model(formula, regime)
    rng = np.random.default_rng(sum(map(ord, formula + regime)))
    structured = 0
    for n in (1, 2, 5, 33, 200):
        tok = rng.integers(1, 3, size=(4, n))
        tok[0] = 1  # a run of one symbol: the long-run adversarial shape
        cold = 4.0 * n * 1.4 if regime == "T" else 1.4
        for inv_tau in (0.3, 2.0, cold, 1e7):
            tr = forward(m, tok, mode="soft", inv_tau=inv_tau, keep_residuals=True)
            for li, blk in enumerate(m.blocks):
                x = tr.residuals[li]
                for h in blk.heads:
                    ts = run_head(h, x, soft=True, inv_tau=inv_tau, path="auto")
                    if inv_tau >= cold:
                        assert ts.path == "structured", (h.name, n, inv_tau)
                    if ts.path == "structured":
                        td = run_head(h, x, soft=True, inv_tau=inv_tau, path="dense")
                        _assert_same_head(td, ts, inv_tau, n + 1)
                        structured += 1
            hard_d, soft_d = forward_pair(m, tok, inv_tau=inv_tau, path="dense")
            hard_s, soft_s = forward_pair(m, tok, inv_tau=inv_tau, path="auto")
            np.testing.assert_allclose(soft_s.x, soft_d.x, rtol=0, atol=1e-9)
            np.testing.assert_array_equal(hard_s.x, hard_d.x)
    assert structured > 0


@pytest.mark.parametrize("regime", ["T", "U"])
def test_forward_pair_equals_separate_forwards(regime):
    m = _model("(a U b) | ((!a S b) & H (a | Y b))", regime)
    tok = np.random.default_rng(3).integers(1, 3, size=(5, 60))
    for inv_tau in (0.5, 50.0, 1e4):
        h, s = forward_pair(m, tok, inv_tau=inv_tau)
        h2 = forward(m, tok, mode="hard")
        s2 = forward(m, tok, mode="soft", inv_tau=inv_tau)
        np.testing.assert_array_equal(h.x, h2.x)
        np.testing.assert_array_equal(s.x, s2.x)
        for name in s.heads:
            np.testing.assert_array_equal(s.heads[name].leak, s2.heads[name].leak)
            np.testing.assert_array_equal(h.heads[name].hard, h2.heads[name].hard)


def test_forward_pair_when_streams_diverge():
    """At a temperature far too high the clean-ups are not exact: the hard and soft residual
    streams differ, later heads read diverged columns and must be re-run on the hard stream."""
    m = _model("(a & Y b) S (b U a)", "T")
    tok = np.random.default_rng(4).integers(1, 3, size=(3, 40))
    h, s = forward_pair(m, tok, inv_tau=0.7)
    h2 = forward(m, tok, mode="hard")
    s2 = forward(m, tok, mode="soft", inv_tau=0.7)
    assert not np.array_equal(h2.x, s2.x)  # the case this test is about
    np.testing.assert_array_equal(h.x, h2.x)
    np.testing.assert_array_equal(s.x, s2.x)
    for name in h.heads:
        np.testing.assert_array_equal(h.heads[name].hard, h2.heads[name].hard)


# ------------------------------------------------------------------------------------------------
# hand-built heads: every mask and rule, ties (exact integer scores), signed values


def _hand_model(mask: str, rule: str, c: float, slope: float, kvals=(0.0, 1.0, 2.0), wv=None):
    """Coordinates ``[bos, one, key, pos, val]``; tokens 1..3 have key ``kvals``; ``pos = j``
    (integer), ``val`` a signed pseudo-random function of the position.  Score
    ``s_ij = c·key_j + slope·pos_j`` for every real query (``Q ≡ (1, …)``): structured with
    ``a = slope·j`` and groups by key; integer ``c`` and ``slope`` make exact ties."""
    d = 5
    E = np.zeros((4, d))
    E[0, 0] = 1.0
    for t in range(3):
        E[t + 1, 1] = 1.0
        E[t + 1, 2] = kvals[t]

    def positional(n: int) -> np.ndarray:
        P = np.zeros((n + 1, d))
        j = np.arange(1, n + 1, dtype=np.float64)
        P[1:, 3] = j
        P[1:, 4] = np.round(np.sin(1.7 * j) * 8) / 4  # dyadic, exactly representable
        return P

    WQ = np.zeros((d, 1)); WQ[1, 0] = 1.0; WQ[0, 0] = 1.0
    WK = np.zeros((d, 1)); WK[2, 0] = c; WK[3, 0] = slope
    WV = np.zeros((d, 1)) if wv is None else wv
    if wv is None:
        WV[4, 0] = 1.0
    WO = np.zeros((WV.shape[1], d))
    head = Head(name="h", W_Q=WQ, W_K=WK, W_V=WV, W_O=WO, mask=mask, rule=rule)
    return Transformer(alphabet=("x", "y", "z"), token_embedding=E, positional=positional,
                       blocks=[Block(heads=[head])], labels=["bos", "one", "key", "pos", "val"], outputs=["val"])


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("mask", MASKS)
def test_hand_heads_all_masks_and_rules_with_ties(mask, rule):
    rng = np.random.default_rng(MASKS.index(mask) * 7 + RULES.index(rule))
    slope = -1.0 if mask in ("strict_future", "future") else 1.0  # a increases towards the query
    ties_seen = 0
    for c in (-3.0, 0.0, 2.0, 5.0):
        m = _hand_model(mask, rule, c, slope)
        for n in (1, 2, 9, 64):
            tok = rng.integers(1, 4, size=(3, n))
            x = embed_cols(m, tok).transpose(1, 2, 0)
            h = m.blocks[0].heads[0]
            for inv_tau in (0.25, 1.0, 3.0, 1e7):
                td = run_head(h, x, soft=True, inv_tau=inv_tau, path="dense")
                ts = run_head(h, x, soft=True, inv_tau=inv_tau, path="structured")
                _assert_same_head(td, ts, inv_tau, n + 1)
                hd = run_head(h, x, soft=False, inv_tau=None, path="dense")
                hs = run_head(h, x, soft=False, inv_tau=None, path="structured")
                np.testing.assert_array_equal(hs.hard, hd.hard)
                np.testing.assert_array_equal(hs.ties, td.ties)
                ties_seen += int(np.sum(td.ties[:, 1:] > 1))
    assert ties_seen > 0  # the integer scores really produced ties


def test_hand_heads_dense_reference_definition():
    """The dense path itself against a direct implementation of THEORY §0 (mask matrix, argmax
    set, AHA mean / UHA pick, softmax, leak) on a multi-dimensional random head."""
    rng = np.random.default_rng(11)
    B, N, d, k, dv = 2, 23, 6, 3, 2
    x = np.round(rng.normal(size=(B, N, d)) * 4) / 4
    for mask in MASKS:
        for rule in RULES:
            head = Head(name="r", W_Q=np.round(rng.normal(size=(d, k)) * 2) / 2,
                        W_K=np.round(rng.normal(size=(d, k)) * 2) / 2, W_V=rng.normal(size=(d, dv)),
                        W_O=np.zeros((dv, d)), mask=mask, rule=rule)
            tr = run_head(head, x, soft=True, inv_tau=0.7, path="dense", chunk=5)
            Q, K, V = x @ head.W_Q, x @ head.W_K, x @ head.W_V
            valid = mask_matrix(mask, np.arange(N), N)
            for b in range(B):
                for i in range(N):
                    s = Q[b, i] @ K[b].T
                    s = np.where(valid[i], s, -np.inf)
                    A = np.flatnonzero(s == s.max())
                    assert tr.ties[b, i] == len(A)
                    if rule == "AHA":
                        want = V[b, A].mean(axis=0)
                    else:
                        want = V[b, A[0] if rule == "UHA-leftmost" else A[-1]]
                    np.testing.assert_allclose(tr.hard[b, i], want, rtol=1e-12, atol=1e-12)
                    w = np.exp((s - s.max()) * 0.7)
                    np.testing.assert_allclose(tr.soft[b, i], w @ V[b] / w.sum(), rtol=1e-9, atol=1e-12)
                    out = np.ones(N, dtype=bool)
                    out[A] = False
                    np.testing.assert_allclose(tr.leak[b, i], w[out].sum() / w.sum(), rtol=1e-9, atol=1e-300)


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("rule", ["UHA-leftmost", "UHA-rightmost"])
def test_dense_uha_pick_with_many_ties(mask, rule):
    """Boolean keys and an integer query make most argmax sets several positions wide: the dense
    path's UHA pick is the first / last member of the argmax set of the direct definition."""
    rng = np.random.default_rng(5)
    B, N = 3, 40
    x = np.zeros((B, N, 3))
    x[:, :, 0] = 1.0                                    # constant query coordinate
    x[:, :, 1] = rng.integers(0, 2, size=(B, N))        # Boolean key
    x[:, :, 2] = rng.normal(size=(B, N))                # value
    head = Head(name="t", W_Q=np.array([[1.0], [0.0], [0.0]]), W_K=np.array([[0.0], [1.0], [0.0]]),
                W_V=np.array([[0.0], [0.0], [1.0]]), W_O=np.zeros((1, 3)), mask=mask, rule=rule)
    tr = run_head(head, x, soft=False, inv_tau=None, path="dense", chunk=7)
    valid = mask_matrix(mask, np.arange(N), N)
    wide = 0
    for b in range(B):
        for i in range(N):
            s = np.where(valid[i], x[b, :, 1], -np.inf)
            A = np.flatnonzero(s == s.max())
            wide += len(A) > 1
            assert tr.ties[b, i] == len(A)
            assert tr.hard[b, i, 0] == x[b, A[0] if rule == "UHA-leftmost" else A[-1], 2]
    assert wide >= N  # the test exercises tied rows


def test_column_caches_follow_writes():
    """A key column read by a block-0 head, rewritten by the MLP, then read by a block-1 head: the
    engine's per-column caches (discrete levels, max |x|) must not serve the old values."""
    for mask in ("strict_past", "none", "future"):
        slope = -1.0 if mask == "future" else 1.0
        m = _hand_model(mask, "AHA", 2.0, slope)
        h = m.blocks[0].heads[0]
        d = m.d
        W1 = np.zeros((d, 1)); W1[2, 0] = 1.0  # relu(key)
        W2 = np.zeros((1, d)); W2[0, 2] = -3.0  # key ← key − 3·key = −2·key
        mlp = MLP(name="flip", W1=W1, b1=np.zeros(1), W2=W2, b2=np.zeros(d))
        h2 = Head(name="h2", W_Q=h.W_Q, W_K=h.W_K, W_V=h.W_V, W_O=np.zeros_like(h.W_O), mask=mask, rule="AHA")
        m.blocks = [Block(heads=[h], mlps=[mlp]), Block(heads=[h2])]
        tok = np.random.default_rng(8).integers(1, 4, size=(3, 17))
        for inv_tau in (0.5, 3.0):
            a = forward(m, tok, mode="soft", inv_tau=inv_tau)
            b = forward(m, tok, mode="soft", inv_tau=inv_tau, path="dense")
            assert a.heads["h2"].path == "structured"
            np.testing.assert_array_equal(a.heads["h2"].hard, b.heads["h2"].hard)
            np.testing.assert_allclose(a.heads["h2"].soft, b.heads["h2"].soft, rtol=1e-12, atol=1e-13)
            np.testing.assert_allclose(a.heads["h2"].leak, b.heads["h2"].leak, rtol=1e-12, atol=1e-300)


def test_weight_edited_between_passes_is_seen():
    """A forward pass checks each weight's sparsity once (residual.weights_fixed): an in-place edit
    between passes (a head now writing a column it did not) must be seen by the next pass, as by a
    fresh copy of the edited model, and within a pass a weight's facts are served by identity."""
    m = _model("a S b", "T")
    tok = np.random.default_rng(3).integers(1, 3, size=(4, 9))
    tr = forward(m, tok, mode="soft", inv_tau=2.0)
    h = next(h for b in m.blocks for h in b.heads)
    l = int(np.flatnonzero(np.any(tr.heads[h.name].soft != 0, axis=(0, 1)))[0])  # a value the head outputs
    zc = int(np.flatnonzero(~np.any(h.W_O != 0, axis=0))[0])  # a column it does not write
    with weights_fixed([h.W_O]):
        assert sparsity(h.W_O) is sparsity(h.W_O) and zc not in sparsity(h.W_O)["cols"]
    h.W_O[l, zc] = 1.0
    after = forward(m, tok, mode="soft", inv_tau=2.0).x
    np.testing.assert_array_equal(after, forward(copy.deepcopy(m), tok, mode="soft", inv_tau=2.0).x)
    assert not np.array_equal(after[..., zc], tr.x[..., zc])
    assert zc in sparsity(h.W_O)["cols"]


# ------------------------------------------------------------------------------------------------
# fallback to dense


def test_fallback_when_query_weight_varies_on_a_continuous_key():
    """Score pos_i·pos_j: a continuous key coordinate with a query-dependent weight."""
    m = _hand_model("strict_past", "AHA", 1.0, 1.0)
    h = m.blocks[0].heads[0]
    h2 = Head(name="g", W_Q=np.eye(5)[:, [3]], W_K=np.eye(5)[:, [3]] * 0.01, W_V=h.W_V, W_O=h.W_O,
              mask="strict_past", rule="AHA")
    x = embed_cols(m, np.random.default_rng(0).integers(1, 4, size=(2, 30))).transpose(1, 2, 0)
    tr = run_head(h2, x, soft=True, inv_tau=2.0)
    assert tr.path == "dense"
    with pytest.raises(ParameterError, match="structured form"):
        run_head(h2, x, soft=True, inv_tau=2.0, path="structured")


@pytest.mark.parametrize("mask", ["strict_past", "past", "strict_future", "future"])
def test_fallback_when_a_decreases_towards_the_query(mask):
    """Right form, wrong monotonicity (a decreases towards the query): the best key of a group is
    not its nearest member, so the engine must use the dense path — and still be right."""
    slope = 1.0 if mask in ("strict_future", "future") else -1.0
    m = _hand_model(mask, "UHA-rightmost", 2.0, slope)
    h = m.blocks[0].heads[0]
    x = embed_cols(m, np.random.default_rng(1).integers(1, 4, size=(2, 40))).transpose(1, 2, 0)
    tr = run_head(h, x, soft=True, inv_tau=1.5)
    assert tr.path == "dense"
    # the fallback recomputes the query projection (freed for the structured attempt): the same bits
    # as the dense path run directly
    d = run_head(h, x, soft=True, inv_tau=1.5, path="dense")
    for f in ("soft", "hard", "leak", "ties"):
        assert np.array_equal(getattr(tr, f), getattr(d, f)), f
    with pytest.raises(ParameterError):
        run_head(h, x, soft=True, inv_tau=1.5, path="structured")


def test_fallback_when_too_many_groups():
    """A key coordinate with more than max_levels values and a query-dependent weight."""
    m = _hand_model("strict_past", "AHA", 1.0, 1.0, kvals=(0.0, 1.0, 2.0))
    h = m.blocks[0].heads[0]
    WQ = np.zeros((5, 1)); WQ[3, 0] = 1.0  # query weight pos_i on the key: varies
    WK = np.zeros((5, 1)); WK[4, 0] = 1.0  # key: val, many values
    h2 = Head(name="v", W_Q=WQ, W_K=WK, W_V=h.W_V, W_O=h.W_O, mask="strict_past", rule="AHA")
    x = embed_cols(m, np.random.default_rng(2).integers(1, 4, size=(1, 50))).transpose(1, 2, 0)
    assert run_head(h2, x, soft=False, inv_tau=None).path == "dense"


# ------------------------------------------------------------------------------------------------
# dense path chunking


@pytest.mark.parametrize("mask", MASKS)
def test_dense_result_does_not_depend_on_chunk(mask):
    rng = np.random.default_rng(5)
    B, N, d = 2, 101, 5
    x = rng.normal(size=(B, N, d))
    head = Head(name="c", W_Q=rng.normal(size=(d, 2)), W_K=rng.normal(size=(d, 2)), W_V=rng.normal(size=(d, 3)),
                W_O=np.zeros((3, d)), mask=mask, rule="AHA")
    ref = run_head(head, x, soft=True, inv_tau=3.0, path="dense", chunk=N)
    for chunk in (1, 2, 7, 50, 100, 1000, None):
        tr = run_head(head, x, soft=True, inv_tau=3.0, path="dense", chunk=chunk)
        np.testing.assert_array_equal(tr.ties, ref.ties)
        np.testing.assert_array_equal(tr.hard, ref.hard)
        np.testing.assert_allclose(tr.soft, ref.soft, rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(tr.leak, ref.leak, rtol=1e-12, atol=0)
    with pytest.raises(ParameterError):
        run_head(head, x, soft=True, inv_tau=3.0, path="dense", chunk=-1)


@pytest.mark.parametrize("mask", MASKS)
def test_dense_batch_rows_are_independent(mask):
    """The dense path evaluates blocks of batch rows at once (ISSUE 16, dense13): every output of a
    batch — here 70 rows of 41 positions, two blocks at the default chunk, one at chunk 8 or 1
    (single query rows: matrix-vector products) — is
    bit-for-bit the output of its row run alone, for both rules' families and both score paths
    (k ≤ 2 elementwise, k = 3 matrix product), value dimensions 1 and 2, with ties."""
    rng = np.random.default_rng(13)
    B, N, d = 70, 41, 6
    x = np.round(rng.normal(size=(B, N, d)) * 2) / 2
    x[:, :, 5] = rng.normal(size=(B, N))
    for rule, k, dv, chunk in (("AHA", 1, 1, None), ("AHA", 2, 1, 1), ("UHA-rightmost", 3, 2, 8),
                               ("UHA-leftmost", 2, 1, 8), ("AHA", 3, 2, None), ("AHA", 3, 1, 8)):
        W_K = np.round(rng.normal(size=(d, k)))
        W_K[5] = 0.0  # keys from the quantised coordinates only: many tied scores
        head = Head(name="b", W_Q=np.round(rng.normal(size=(d, k))) + 0.5, W_K=W_K, W_V=rng.normal(size=(d, dv)),
                    W_O=np.zeros((dv, d)), mask=mask, rule=rule)
        tr = run_head(head, x, soft=True, inv_tau=2.0, path="dense", chunk=chunk)
        assert np.any(tr.ties[:, 1:] > 1)
        for b in (0, 1, 59, 60, 69):
            one = run_head(head, x[b:b + 1], soft=True, inv_tau=2.0, path="dense", chunk=chunk)
            for got, want in ((tr.soft, one.soft), (tr.hard, one.hard), (tr.leak, one.leak), (tr.ties, one.ties)):
                assert np.ascontiguousarray(got[b:b + 1]).tobytes() == np.ascontiguousarray(want).tobytes()


# ------------------------------------------------------------------------------------------------
# accuracy at 1/τ = 10^7: dense reference, exact scores + mpmath reference


def _exact_leak_rows(x: np.ndarray, head: Head, rows, inv_tau: float, b: int = 0) -> list:
    """Leak of query ``rows`` of batch ``b`` from the exact scores ``<x_i W_Q, x_j W_K>``
    (Fractions from the stored floats) and mpmath exponentials at 60 digits."""
    N = x.shape[1]
    F = np.vectorize(Fraction, otypes=[object])
    xq = F(x[b]) @ F(head.W_Q)
    xk = F(x[b]) @ F(head.W_K)
    valid = mask_matrix(head.mask, np.arange(N), N)
    out = []
    with mpmath.workdps(60):
        lam = mpmath.mpf(Fraction(inv_tau).numerator) / Fraction(inv_tau).denominator
        for i in rows:
            s = [sum(xq[i] * xk[j]) for j in range(N)]
            vis = [j for j in range(N) if valid[i, j]]
            smax = max(s[j] for j in vis)
            tot = rest = mpmath.mpf(0)
            for j in vis:
                dj = s[j] - smax
                w = mpmath.exp(mpmath.mpf(dj.numerator) / dj.denominator * lam)
                tot += w
                if s[j] != smax:
                    rest += w
            out.append(rest / tot)
    return out


@pytest.mark.parametrize("mask", ["strict_past", "strict_future", "past"])
def test_large_inv_tau_structured_vs_dense_and_exact(mask):
    """1/τ = 10^7 with score steps of 2^-24 (so leaks are neither 0 nor 1): the structured path
    agrees with the dense one and with the exact-score mpmath reference within the allowance."""
    slope = -(2.0 ** -24) if "future" in mask else 2.0 ** -24
    m = _hand_model(mask, "UHA-rightmost" if "past" in mask else "UHA-leftmost", 1.0, slope, kvals=(0.0, 1.0, 0.5))
    h = m.blocks[0].heads[0]
    inv_tau = 1e7
    rng = np.random.default_rng(6)
    n = 48
    tok = rng.integers(1, 4, size=(2, n))
    tok[1, :] = 2  # one long run of key = 1: the adversarial row
    x = embed_cols(m, tok).transpose(1, 2, 0)
    td = run_head(h, x, soft=True, inv_tau=inv_tau, path="dense")
    ts = run_head(h, x, soft=True, inv_tau=inv_tau, path="structured")
    _assert_same_head(td, ts, inv_tau, n + 1)
    assert 1e-3 < float(ts.leak.max()) < 1.0  # a non-trivial leak at this temperature
    rel = leak_rounding_allowance(ts.score_scale, ts.key_dim, inv_tau, n + 1, rounding_terms=ts.rounding_terms)
    rows = [n - 1, n // 2, 3] if "past" in mask else [1, n // 2, n - 3]
    for b in (0, 1):
        exact = _exact_leak_rows(x, h, rows, inv_tau, b)
        for i, ex in zip(rows, exact):
            for tr in (ts, td):
                err = abs(mpmath.mpf(float(tr.leak[b, i])) - ex)
                assert err <= rel * ex + _abs_floor(n + 1), (tr.path, b, i, float(err), float(ex), rel)
    # the structured path's exponents come from exact differences a_s − a_t here, so it is
    # far more accurate than the allowance (which must also cover the dense path)
    exact = _exact_leak_rows(x, h, rows, inv_tau, 1)
    for i, ex in zip(rows, exact):
        assert abs(mpmath.mpf(float(ts.leak[1, i])) - ex) <= 1e-12 * ex


def test_regime_T_selection_accuracy_at_required_temperature():
    """A regime-T selection at n = 3000 with 1/τ ≈ (n/β)·ln(1/η): each query's leak, computed by
    the O(n) scan, matches the exact-score mpmath value to ~1e-13 relative (a plain
    log-sum-exp accumulation of a/τ would lose ~n·u·|a|/τ ≈ 1e-9 here)."""
    m = _model("a S b", "T")
    n = 3000
    inv_tau = 4.0 * n * np.log(4.0) * 1.02
    rng = np.random.default_rng(7)
    tok = np.where(rng.random((1, n)) < 0.8, 2, 1)  # mostly b: long runs of key = 1
    tr = forward(m, tok, mode="soft", inv_tau=inv_tau, keep_residuals=True)
    h = m.blocks[1].heads[0]
    assert tr.heads[h.name].path == "structured"
    x = tr.residuals[1]  # the stream the head read
    leak = tr.heads[h.name].leak[0]
    rows = [n, n - 1, 1500, 700, 2]
    exact = _exact_leak_rows(x, h, rows, inv_tau)
    for i, ex in zip(rows, exact):
        got = mpmath.mpf(float(leak[i]))
        if ex > 1e-300:
            assert abs(got - ex) <= 1e-12 * ex, (i, float(got), float(ex))
        else:  # below the flush threshold: 0 up to the absolute floor of the allowance
            assert got <= _abs_floor(n + 1)


# ------------------------------------------------------------------------------------------------
# the O(n) scan


@pytest.mark.parametrize("m", [1, 2, 5, 48, 49, 100, 4095, 4096, 5000, 70001])
def test_affine_scan_matches_sequential(m):
    rng = np.random.default_rng(m)
    alpha = rng.random(m)
    alpha[rng.random(m) < 0.05] = 0.0  # resets (row breaks)
    alpha[rng.random(m) < 0.05] = 1.0
    betas = [rng.random(m), rng.normal(size=m)]
    got = affine_scan(alpha, betas)
    for beta, g in zip(betas, got):
        want = np.empty(m)
        z = 0.0
        for t in range(m):
            z = alpha[t] * z + beta[t]
            want[t] = z
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------------------------------
# observation runs: batching and threads do not change the summary


def test_observe_independent_of_batching_and_workers():
    """Threads change nothing (same batches); other batch sizes change the scan's blocking, so
    leaks may differ in the last bits (and a tie between words may resolve differently)."""
    m = _model("(a U b) | ((!a S b) & H (a | Y b))", "T")
    words = random_words(["a", "b"], 40, 30, seed=5, n_min=25) + [("b",) * 30, ("a", "b") * 15]

    def it(k):
        return 4.0 * k * 1.4

    ref = observe(m, words, it, batch=4)
    s = observe(m, words, it, batch=4, workers=2)
    assert (s.words, s.mismatches, s.max_output_deviation) == (ref.words, ref.mismatches, ref.max_output_deviation)
    for node, per_n in ref.heads.items():
        for k, ob in per_n.items():
            assert s.heads[node][k] == ob
    for kw in ({}, {"batch": 3}, {"max_positions": 64}):
        s = observe(m, words, it, **kw)
        assert (s.words, s.mismatches) == (ref.words, ref.mismatches)
        assert s.max_output_deviation == pytest.approx(ref.max_output_deviation, abs=1e-12)
        for node, per_n in ref.heads.items():
            for k, ob in per_n.items():
                o2 = s.heads[node][k]
                assert o2.inputs == ob.inputs
                assert o2.leak == pytest.approx(ob.leak, rel=1e-12, abs=1e-300)
                assert o2.output_error == pytest.approx(ob.output_error, rel=1e-12, abs=1e-300)


def test_leak_rounding_allowance_observed_floor():
    rel = leak_rounding_allowance(1.25, 1, 1e7, 1001)
    assert 0 < rel < 1e-6
    assert leak_rounding_allowance(1.25, 1, 1e7, 1001, observed=0.0) == rel
    assert leak_rounding_allowance(1.25, 1, 1e7, 1001, observed=0.2) == pytest.approx(rel, rel=1e-12)
    assert leak_rounding_allowance(1.25, 1, 1e7, 1001, observed=1e-290) > 1.1 * rel
    assert leak_rounding_allowance(1.25, 1, 1e7, 1001, observed=1e-300) == float("inf")
    # more roundings per score, a hotter scale or a longer row: a larger allowance
    assert leak_rounding_allowance(1.25, 1, 1e7, 1001, rounding_terms=9) > rel
    assert leak_rounding_allowance(2.5, 1, 1e7, 1001) > rel
    assert leak_rounding_allowance(1.25, 1, 1e7, 10**6) > rel


# ------------------------------------------------------------------------------------------------
# encoding


def test_encode_fast_path_matches_general_path():
    m = _model("a S b", "T")
    words = [("a", "b", "b"), "bab", ["a", "a", "a"]]
    np.testing.assert_array_equal(m.encode(words), [[1, 2, 2], [2, 1, 2], [1, 1, 1]])
    with pytest.raises(ParameterError, match="'c' is not in the alphabet"):
        m.encode(["abc"])
    with pytest.raises(ParameterError, match="same length"):
        m.encode(["ab", "a"])
    with pytest.raises(ParameterError, match="'ab' is not in the alphabet"):
        m.encode([("ab", "a")])


# ------------------------------------------------------------------------------------------------
# the clean-up ramp at eta close to 1/2 (issue 15 C2)


@pytest.mark.parametrize("formula,comparator", [("Y a", "head"), ("#a >= #b", "ln")])
def test_cleanup_ramp_at_eta_next_to_one_half(formula, comparator):
    """eta = 1/2 - 2^-53 (the closest to 1/2 float64 can represent; ramp width 2^-52): the clean-up
    MLP computes round_eta(y) = clamp((y - eta)/(1 - 2 eta), 0, 1) exactly at these points; a
    selection cleans y = raw, a layer norm y = raw/2 + 1/2.  Closer to 1/2 the transformer is
    refused with a ParameterError naming eta (it divided by zero: 1 - 2*float(eta) = 0)."""
    g = compile_formula(parse_formula(formula), ["a", "b"], comparator=comparator)
    eta = Fraction(1, 2) - Fraction(1, 2 ** 53)
    m = build_transformer(g, "T", eta=eta)
    node = g.graph["root"]
    mlp = next(mm for b in m.blocks for mm in b.mlps if node in mm.nodes and "ln" not in mm.name)
    ix = {lab: k for k, lab in enumerate(m.labels)}
    ys = [Fraction(0), Fraction(1), Fraction(1, 2), Fraction(1, 2) + Fraction(1, 2 ** 53), eta,
          Fraction(3, 4) - Fraction(1, 4) * eta]  # the last: (y - eta)/(1 - 2 eta) = 2^50 - 1/4 -> 1
    for y in ys:
        raw = y if comparator == "head" else 2 * y - 1
        x = np.zeros(len(m.labels))
        x[ix["one"]] = 1.0
        x[ix[f"raw:{node}"]] = float(raw)
        want = min(max((y - eta) / (1 - 2 * eta), Fraction(0)), Fraction(1))
        assert mlp(x)[ix[node]] == float(want), (y, want)
    for bad in (Fraction(1, 2) - Fraction(1, 10 ** 23), Fraction(1, 2) - Fraction(1, 2 ** 54)):
        with pytest.raises(ParameterError, match=r"^eta .*1/2 - eta .* below 2\^-53"):
            build_transformer(g, "T", eta=bad)


@pytest.mark.parametrize("n", [5, 10, 13])
def test_two_edge_words_are_the_words_constant_between_their_ends(n):
    """``two_edge_words(ab, n, 2)``: exactly the words whose positions 3 … n−2 hold one symbol
    (ends of length ≤ 2 on both sides), enumerated here over all 2^n words; tomita7's attaining
    ``1 0 1^{n−4} 0 1`` among them."""
    want = {w for w in itertools.product("01", repeat=n) if len(set(w[2:n - 2])) <= 1}
    got = two_edge_words(["0", "1"], n, max_edge=2)
    assert len(got) == len(set(got)) and set(got) == want and ("1", "0") + ("1",) * (n - 4) + ("0", "1") in want

