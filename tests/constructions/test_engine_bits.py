"""The numeric confirmation's speed measures (ISSUE 16, numeric third pass) change no bit:
the stacked :func:`affine_scan` equals the one-beta-at-a-time scan it replaced, ``_group_tails``
skips the scan exactly when its result is +0 everywhere, the weight-sparsity memo gives what
``np.flatnonzero`` gives (also after an in-place edit),
``forward_pass(reduce=...)`` gives the same per-head results as the full traces,
:func:`adversarial_words` picks the words a search over the full traces picks, the level count
of ``_discrete_levels`` is ``np.unique``'s (and a forward pass loads no ``numpy.ma``), and
:func:`reuse_memory` leaves every computed array bit-identical and restores NumPy's huge-page
switch (also when nested or left by an exception)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from softhard.constructions import engine, simulate
from softhard.constructions.compile import assign_attention, compile_formula
from softhard.constructions.engine import forward, forward_pass, reuse_memory
from softhard.constructions.parse import parse_formula
from softhard.constructions.residual import _discrete_levels, nonzero_rows, sparsity
from softhard.constructions.simulate import SEARCH_BATCH_POSITIONS, adversarial_words, edge_words, periodic_words
from softhard.constructions.softmax import exp_flush
from softhard.constructions.structured_attention import _group_tails, _to_blocks, affine_scan, scan_tails
from softhard.constructions.weights import build_transformer

#: a formula with unique (Y, S) and average-hard (H) selections; dyck-like nesting of S
FORMULA = "((a & Y b) S (b & !Y a)) & H (!a | Y b) & (!(a | b) S (a & Y a))"
INV_TAU = 5.0e6


def _model():
    g = compile_formula(parse_formula(FORMULA), ["a", "b"])
    assign_attention(g, "T")  # average-hard heads where eligible (as the pipeline builds regime T)
    return build_transformer(g, "T")


def _search_reference(model, n, inv_tau):
    """The adversarial search as it was before ``reduce`` (every head's full trace kept)."""
    g = model.meta["graph"]
    outs = {v for v, a in g.nodes(data=True) if a.get("attention") == "average"}
    cands = list(dict.fromkeys(periodic_words(model.alphabet, n, 3) + (edge_words(model.alphabet, n) if outs else [])))
    soft = forward(model, model.encode(cands), mode="soft", inv_tau=inv_tau)
    best = {}
    for name, tr in soft.heads.items():
        crits = [(name, tr.leak[:, 1:].max(axis=1))]
        if name in outs:
            crits.append((name + ":output", np.abs(tr.soft[:, 1:] - tr.hard[:, 1:]).max(axis=(1, 2))))
        for key, per_word in crits:
            k = int(np.argmax(per_word))
            if key not in best or per_word[k] > best[key][0]:
                best[key] = (float(per_word[k]), k)
    return {name: cands[k] for name, (_, k) in best.items()}, outs


@pytest.mark.parametrize("n", [7, 300])
def test_reduce_gives_the_full_traces_values(n):
    model = _model()
    words = list(dict.fromkeys(periodic_words(model.alphabet, n, 3) + edge_words(model.alphabet, n)))
    tok = model.encode(words)
    full = forward(model, tok, mode="soft", inv_tau=INV_TAU)
    seen = []

    def red(name, tr):
        seen.append(name)
        return (tr.leak.copy(), tr.soft.copy(), tr.hard.copy(), tr.ties.copy(), tr.path)

    got, _, _ = forward_pass(model, tok, soft=True, inv_tau=INV_TAU, path="auto", chunk=None,
                             keep_residuals=False, pair=False, reduce=red)
    assert seen == list(full.heads) and len(seen) >= 4
    for name, tr in full.heads.items():
        leak, so, ha, ties, path = got.heads[name]
        assert np.array_equal(leak, tr.leak) and np.array_equal(so, tr.soft) and np.array_equal(ha, tr.hard)
        assert np.array_equal(ties, tr.ties) and path == tr.path
    assert np.array_equal(got.x, full.x)


def test_heads_only_gives_the_full_passes_head_traces():
    """forward_pass(heads_only=True) — the adversarial search's pass, which stops after the last
    attention sublayer — gives every head the trace of the full forward pass, bit for bit, and
    really skips the MLPs after the last head (its x differs from the model's output)."""
    model = _model()
    assert model.blocks[-1].heads and model.blocks[-1].mlps  # there is something to skip
    tok = model.encode(list(dict.fromkeys(periodic_words(model.alphabet, 40, 3) + edge_words(model.alphabet, 40))))
    for inv_tau in (INV_TAU, 3.0):
        full = forward(model, tok, mode="soft", inv_tau=inv_tau)
        got, _, _ = forward_pass(model, tok, soft=True, inv_tau=inv_tau, path="auto", chunk=None,
                                 keep_residuals=False, pair=False, heads_only=True)
        assert list(got.heads) == list(full.heads)
        for name, tr in full.heads.items():
            g = got.heads[name]
            for f in ("soft", "hard", "leak", "ties"):
                assert np.array_equal(getattr(g, f), getattr(tr, f)), (name, f)
            assert g.path == tr.path and g.score_scale == tr.score_scale
        assert not np.array_equal(got.x, full.x)


@pytest.mark.parametrize("n", [10, 100, 1000])
def test_adversarial_words_match_the_full_trace_search(n):
    """The search (in batches of SEARCH_BATCH_POSITIONS positions; at n = 1000 its 66 candidates
    take two) picks the words one full forward pass over all candidates picks."""
    model = _model()
    want, outs = _search_reference(model, n, INV_TAU)
    assert outs  # the formula has an average-hard head: the ":output" criterion is exercised
    cands = len(dict.fromkeys(periodic_words(model.alphabet, n, 3) + edge_words(model.alphabet, n)))
    assert (cands * (n + 1) > SEARCH_BATCH_POSITIONS) == (n == 1000)  # n = 1000: more than one batch
    assert adversarial_words(model, n, INV_TAU) == want


def test_adversarial_search_across_batches_picks_the_first_largest(monkeypatch):
    """The search's bookkeeping across its batches (offsets, the first of equal values, no batch
    lost): with a stand-in forward pass whose per-word criteria are fixed functions of the word's
    tokens (with ties, and maxima outside the first batch), the search in batches of 3 words picks,
    per criterion, the first candidate with the largest value over all candidates (one np.argmax
    here), and runs ceil(candidates / 3) passes."""
    model = _model()
    n = 12
    outs = sorted(v for v, a in model.meta["graph"].nodes(data=True) if a.get("attention") == "average")
    assert outs
    names = outs + ["plain"]
    cands = list(dict.fromkeys(periodic_words(model.alphabet, n, 3) + edge_words(model.alphabet, n)))
    weights = np.arange(1, n + 1)  # model.encode: (B, n) tokens, no BOS

    def leak_value(tok):  # (B, n) tokens -> (B,) in {0, 1/17, ..., 16/17}
        return ((tok * weights).sum(axis=1) % 17) / 17.0

    def output_value(tok):
        return ((tok * weights[::-1]).sum(axis=1) % 13) / 13.0

    passes = []

    def stand_in(m, tok, *, reduce, **kw):
        passes.append(len(tok))
        B = len(tok)
        heads = {}
        for name in names:
            leak = np.zeros((B, n + 1))
            leak[:, 1:] = leak_value(tok)[:, None]
            soft, hard = np.zeros((B, n + 1, 1)), np.zeros((B, n + 1, 1))
            soft[:, 1:, 0] = output_value(tok)[:, None]
            heads[name] = reduce(name, type("HeadTrace", (), {"leak": leak, "soft": soft, "hard": hard})())
        return type("Trace", (), {"heads": heads})(), None, None

    monkeypatch.setattr(simulate, "forward_pass", stand_in)
    monkeypatch.setattr(simulate, "SEARCH_BATCH_POSITIONS", 3 * (n + 1))
    got = adversarial_words(model, n, 1.0)
    tok = model.encode(cands)
    first_max = {"leak": int(np.argmax(leak_value(tok))), "output": int(np.argmax(output_value(tok)))}
    want = {name: cands[first_max["leak"]] for name in names}
    want.update({name + ":output": cands[first_max["output"]] for name in outs})
    assert got == want
    assert passes == [3] * (len(cands) // 3) + ([len(cands) % 3] if len(cands) % 3 else [])
    assert min(first_max.values()) >= 3 and len(set(first_max.values())) == 2  # outside the first batch
    for v in (leak_value(tok), output_value(tok)):  # and tied, in later batches too: the first must win
        assert np.flatnonzero(v == v.max())[-1] // 3 > np.argmax(v) // 3


def test_discrete_levels_count_is_np_unique_count():
    """_discrete_levels refuses a column exactly when its sample (first row's first 1024, last row's
    last 1024 real positions) has more distinct values than max_levels, as np.unique counts them
    (−0.0 and 0.0 one value), and otherwise finds the column's levels."""
    rng = np.random.default_rng(3)
    for trial in range(60):
        k = int(rng.integers(2, 7))
        levels = rng.choice(np.array([-0.0, 0.0, 1.0, 0.5, -2.0, 3.25, 1e-300, 7.0]), size=k, replace=False)
        x = rng.choice(levels, size=(int(rng.integers(1, 4)), int(rng.integers(2, 3000))))
        x[0, 0], x[-1, -1] = levels.min(), levels.max()  # lo != hi unless the levels are ±0 only
        sample = np.concatenate([x[0, :1024], x[-1, -1024:]])
        for max_levels in range(1, 8):
            res = _discrete_levels(x, max_levels)
            if x.min() == x.max():
                continue
            if len(np.unique(sample)) > max_levels:
                assert res is None
            elif res is not None:
                vals, idx = res
                assert np.array_equal(vals[idx], x) and len(vals) == len(np.unique(x))
            else:  # the sample fits, the whole column has more levels
                assert len(np.unique(x)) > max_levels


def test_forward_pass_loads_no_numpy_ma():
    """A fresh interpreter's forward pass over words whose key columns take two levels (the level
    count ran np.unique, whose masked-array check loads numpy.ma: ~10 ms of a certify's start) has
    no ``numpy.ma`` in ``sys.modules``; np.unique afterwards loads it (the probe can see it)."""
    probe = (
        "import sys, numpy as np\n"
        "from softhard.constructions.compile import compile_formula\n"
        "from softhard.constructions.engine import forward\n"
        "from softhard.constructions.parse import parse_formula\n"
        "from softhard.constructions.residual import _discrete_levels\n"
        "from softhard.constructions.weights import build_transformer\n"
        "m = build_transformer(compile_formula(parse_formula('P (a & Y b) | (!a S b)'), ['a', 'b']), 'T')\n"
        "forward(m, m.encode([tuple('abba' * 5), tuple('aabb' * 5)]), mode='soft', inv_tau=50.0)\n"
        "assert _discrete_levels(np.array([[0.0, 1.0, 0.5, 1.0]]), 4)[0].tolist() == [0.0, 0.5, 1.0]\n"
        "before = 'numpy.ma' in sys.modules\n"
        "np.unique(np.array([1.0, 2.0]))\n"
        "print(before, 'numpy.ma' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-500:]
    assert out.stdout.split() == ["False", "True"]


def test_reuse_memory_same_values_and_restores_the_switch():
    model = _model()
    tok = model.encode(periodic_words(model.alphabet, 2000, 3))  # (B, N) arrays of ~100 KB and more
    out = forward(model, tok, mode="soft", inv_tau=INV_TAU)
    before = engine._madvise_hugepage(True)  # the switch as NumPy had it (restored at the end)
    try:
        with reuse_memory():
            assert engine._madvise_hugepage(False) is False  # off inside
            with reuse_memory():  # nested: still off, and the outer exit restores
                inner = forward(model, tok, mode="soft", inv_tau=INV_TAU)
            assert engine._madvise_hugepage(False) is False
        assert engine._madvise_hugepage(True) is True  # restored on leaving the outermost block
        with pytest.raises(KeyError):
            with reuse_memory():
                raise KeyError("x")
        assert engine._madvise_hugepage(True) is True and engine._REUSE["depth"] == 0
    finally:
        engine._madvise_hugepage(bool(before))
    assert np.array_equal(inner.x, out.x)
    for name, tr in out.heads.items():
        assert np.array_equal(inner.heads[name].leak, tr.leak)
        assert np.array_equal(inner.heads[name].soft, tr.soft)


def _affine_scan_one_at_a_time(alpha, betas):
    """The blocked scan as it was before stacking (a265a9b and earlier): one beta at a time."""
    m = len(alpha)
    if m <= 48:
        outs = []
        for beta in betas:
            z, bl = 0.0, beta.tolist()
            for t in range(m):
                z = float(alpha[t]) * z + bl[t]
                bl[t] = z
            outs.append(np.array(bl))
        return outs
    b = 64 if m >= 4096 else max(8, int(np.sqrt(m)))
    nb = -(-m // b)
    A = _to_blocks(alpha, b, nb, 0.0)
    Ys = [A.copy() if beta is alpha else _to_blocks(beta, b, nb, 0.0) for beta in betas]
    tmp = np.empty(nb)
    for p in range(1, b):
        for Y in Ys:
            np.multiply(A[p], Y[p - 1], out=tmp)
            Y[p] += tmp
        A[p] *= A[p - 1]
    zbs = _affine_scan_one_at_a_time(A[b - 1].copy(), [Y[b - 1].copy() for Y in Ys])
    outs = []
    for Y, zb in zip(Ys, zbs):
        Y[:, 1:] += A[:, 1:] * zb[None, :-1]
        outs.append(np.ascontiguousarray(Y.T).reshape(-1)[:m])
    return outs


@pytest.mark.parametrize("m", [1, 30, 48, 49, 63, 64, 100, 1000, 4095, 4096, 5000, 70001])
@pytest.mark.parametrize("dv", [0, 1, 2])
def test_stacked_affine_scan_is_bit_identical(m, dv):
    """As _group_tails calls it: alpha = exp(−Δa/τ) with flushes and row breaks (0), E's beta is
    alpha itself, F's betas alpha·(previous member's value)."""
    rng = np.random.default_rng(m * 3 + dv)
    dif = rng.exponential(1e-6, size=max(m - 1, 0)) * rng.choice([1.0, 1e3], size=max(m - 1, 0))
    alpha = np.zeros(m)
    exp_flush(dif * -5.0e6, out=alpha[1:])
    alpha[1:][rng.random(max(m - 1, 0)) < 0.01] = 0.0  # batch-row breaks
    betas = [alpha]
    for _ in range(dv):
        v = rng.choice([0.0, 1.0, 0.25, 1 / 3], size=m)
        bl = np.zeros(m)
        np.multiply(alpha[1:], v[:-1], out=bl[1:])
        betas.append(bl)
    got = affine_scan(alpha, betas)
    want = _affine_scan_one_at_a_time(alpha, betas)
    assert len(got) == len(want) == dv + 1
    for g, w in zip(got, want):
        assert g.shape == (m,) and np.array_equal(g, w) and np.array_equal(np.signbit(g), np.signbit(w))


def _group_tails_by_scan(li, m, vm, dif, brk, inv_tau):
    """``_group_tails`` always through the scan (the path before the flushed-factor shortcut)."""
    alpha = np.zeros(m)
    if m > 1:
        exp_flush(np.multiply(dif, -inv_tau), out=alpha[1:])
        if brk is not None:
            alpha[1:][brk] = 0.0
    return scan_tails(li, alpha, vm)


@pytest.mark.parametrize("m", [1, 2, 40, 300, 5000])
@pytest.mark.parametrize("gap", [1e-7, 1e-3])  # 1/τ = 5·10^6: factors e^−0.5 (kept) or e^−5000 (flushed)
@pytest.mark.parametrize("values", ["bool", "negative zero", "all negative zero", "negative", "infinite", "none"])
def test_group_tails_flushed_shortcut_is_the_scan(m, gap, values):
    rng = np.random.default_rng(m)
    B = 4
    dif = np.full(m - 1, gap) if m > 1 else None
    brk = (rng.random(m - 1) < 0.05) if m > 1 else None
    li = np.sort(rng.integers(0, m, size=(B, 9)), axis=1)
    v = rng.choice([0.0, 1.0], size=m)
    if values == "negative zero":
        v[::3] = -0.0
    elif values == "all negative zero":  # β ≡ −0: the blocked scan keeps some −0 (+0·(−0) + (−0))
        v[:] = -0.0
    elif values == "negative":
        v[::5] = -0.5
    elif values == "infinite":  # +0·inf = NaN: the scan's result is not +0
        v[m // 2] = np.inf
    vm = [] if values == "none" else [v, v.copy()] if values == "infinite" else [v, 1.0 - v]
    with np.errstate(invalid="ignore"):  # (+0·inf in the "infinite" case)
        E, F = _group_tails(li, m, vm, dif, brk, 5.0e6)
        E0, F0 = _group_tails_by_scan(li, m, vm, dif, brk, 5.0e6)
    assert len(F) == len(F0) == len(vm)
    for g, w in zip([E, *F], [E0, *F0]):
        assert g.shape == li.shape and np.array_equal(g, w, equal_nan=True)
        assert np.array_equal(np.signbit(g), np.signbit(w))


def test_sparsity_memo_is_flatnonzero_and_follows_in_place_edits():
    model = _model()
    mats = [W for b in model.blocks for h in b.heads for W in (h.W_Q, h.W_K, h.W_V, h.W_O)]
    mats += [W for b in model.blocks for m in b.mlps if hasattr(m, "W1") for W in (m.W1, m.W2)]
    assert len(mats) > 10
    for _ in range(2):  # the second round is served by the memo
        for W in mats:
            sp = sparsity(W)
            assert np.array_equal(sp["rows"], np.flatnonzero(np.any(W != 0, axis=1)))
            assert np.array_equal(sp["cols"], np.flatnonzero(np.any(W != 0, axis=0)))
            assert sp["nnz"] == np.count_nonzero(W)
            assert all(np.array_equal(sp["in_col"][l], np.flatnonzero(W[:, l])) for l in range(W.shape[1]))
            assert all(np.array_equal(sp["in_row"][r], np.flatnonzero(W[r])) for r in range(W.shape[0]))
    W = np.zeros((5, 3))
    W[1, 2] = 0.5
    assert list(nonzero_rows(W)) == [1]
    W[4, 0] = -1.0  # edited in place: same object, new content
    assert list(nonzero_rows(W)) == [1, 4] and sparsity(W)["nnz"] == 2
    W[1, 2] = 0.0
    assert list(nonzero_rows(W)) == [4] and [list(x) for x in sparsity(W)["in_col"]] == [[4], [], []]
