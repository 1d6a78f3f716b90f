"""The fused compiled head kernel (constructions/head_kernel.py) against the NumPy structured
reference and against an independent 80-bit brute-force softmax, within the rounding allowance of
THEORY §7 (ISSUE 16).  numba is in the [test] extra: without it these tests fail (they do not skip).
The kernel's size threshold is lowered by monkeypatching ``head_kernel.MIN_POSITIONS``."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from softhard.constructions import head_kernel, structured_attention
from softhard.constructions.engine import run_head
from softhard.constructions.simulate import leak_rounding_allowance
from softhard.constructions.structured_attention import _Struct, structured_eval

MASKS = ["strict_past", "past", "strict_future", "future", "none"]
RULES = ["AHA", "UHA-leftmost", "UHA-rightmost"]


def brute(st: _Struct, V, mask, rule, inv_tau):
    """Soft, hard, leak, ties of every query by enumerating its visible keys: scores in float64
    exactly as the structure defines them (``a(j) + off_g(i)``, BOS ``bos(i)``), softmax in 80-bit
    long double.  Independent of both structured paths (no recurrence, no groups' best members)."""
    dv, B, N = V.shape
    soft = np.zeros((dv, B, N))
    hard = np.zeros((dv, B, N))
    leak = np.zeros((B, N))
    ties = np.zeros((B, N), dtype=np.int64)
    gidx = {u: k for k, (u, _) in enumerate(st.groups)}
    for b in range(B):
        for i in range(N):
            if i == 0:
                keys = []
            elif mask == "strict_past":
                keys = range(1, i)
            elif mask == "past":
                keys = range(1, i + 1)
            elif mask == "strict_future":
                keys = range(i + 1, N)
            elif mask == "future":
                keys = range(i, N)
            else:
                keys = range(1, N)
            pos, sc = [0], [st.bos[b, i]]
            for j in keys:
                g = 0 if st.code is None else gidx[int(st.code[b, j - 1])]
                off = st.groups[g][1]
                sc.append(st.a[b, j] + (off[b, i] if isinstance(off, np.ndarray) else off))
                pos.append(j)
            sc = np.array(sc)
            smax = sc.max()
            top = sc == smax
            w = np.exp((sc.astype(np.longdouble) - np.longdouble(smax)) * np.longdouble(inv_tau))
            vals = V[:, b, pos].astype(np.longdouble)
            soft[:, b, i] = (vals * w).sum(axis=1) / w.sum()
            leak[b, i] = w[~top].sum() / w.sum()
            ties[b, i] = top.sum()
            tp = np.array(pos)[top]
            if rule == "AHA":
                hard[:, b, i] = V[:, b, tp].mean(axis=1)
            else:
                hard[:, b, i] = V[:, b, tp.min() if rule == "UHA-leftmost" else tp.max()]
    return soft, hard, leak, ties


def structured_order_exists(st: _Struct, mask: str) -> bool:
    """Whether ``a`` strictly increases along every row within every group in an accumulation
    order the mask allows (forward for the past masks, backward for the future ones, either for
    none): exactly when a structured path must give a result."""
    B, N = st.a.shape
    dirs = {"strict_past": [1], "past": [1], "strict_future": [-1], "future": [-1], "none": [1, -1]}[mask]
    for d in dirs:
        ok = True
        for b in range(B):
            for u, _ in st.groups:
                pos = [j for j in range(1, N) if st.code is None or st.code[b, j - 1] == u][::d]
                if any(st.a[b, q] <= st.a[b, p] for p, q in zip(pos, pos[1:])):
                    ok = False
        if ok:
            return True
    return False


def random_struct(rng, B, N, G, dv, increasing, integer, array_offsets):
    """A structure with ``a`` strictly increasing (or decreasing) along every row — hence within
    every group — small integer scores where ties between groups and BOS are frequent."""
    steps = rng.integers(1, 4, size=(B, N)).astype(float) if integer else rng.uniform(0.01, 1.0, size=(B, N))
    a = np.cumsum(steps, axis=1)
    if not increasing:
        a = a[:, ::-1].copy()
    codes = rng.choice([3, 7, 12], size=G, replace=False)
    code = None if G == 1 and rng.random() < 0.5 else rng.choice(codes, size=(B, N - 1)).astype(np.int32)
    present = [0] if code is None else sorted(set(code.ravel().tolist()))
    groups = []
    for u in present:
        if array_offsets and rng.random() < 0.5:
            off = rng.integers(-2, 3, size=(B, N)).astype(float)
        else:
            off = float(rng.integers(-2, 3))
        groups.append((int(u), off))
    bos = np.round(a + rng.integers(-3, 4, size=(B, N))) if integer else a + rng.uniform(-1, 1, size=(B, N))
    V = rng.choice([0.0, 1.0, 0.5, -2.0], size=(dv, B, N))
    return _Struct(a=a, code=code, groups=groups, bos=bos), V


def run_both(monkeypatch, st, V, mask, rule, inv_tau, soft):
    monkeypatch.setattr(head_kernel, "MIN_POSITIONS", 0)
    assert head_kernel.applies(st, rule, V.shape[2])
    calls = []
    real = structured_attention.fused_eval
    monkeypatch.setattr(structured_attention, "fused_eval", lambda *a: calls.append(1) or real(*a))
    fast = structured_eval(st, V, mask, rule, inv_tau, soft)
    assert calls  # the kernel ran
    monkeypatch.setattr(head_kernel, "MIN_POSITIONS", 10**12)
    assert not head_kernel.applies(st, rule, V.shape[2])
    ref = structured_eval(st, V, mask, rule, inv_tau, soft)
    monkeypatch.undo()
    return fast, ref


@settings(max_examples=60, deadline=None)
@given(B=hs.integers(1, 3), N=hs.integers(2, 24), G=hs.integers(1, 3), dv=hs.integers(1, 2),
       mask=hs.sampled_from(MASKS), rule=hs.sampled_from(RULES), increasing=hs.booleans(),
       integer=hs.booleans(), array_offsets=hs.booleans(),
       inv_tau=hs.sampled_from([0.25, 1.0, 3.0, 40.0, 1e3]), seed=hs.integers(0, 2**31))
def test_kernel_equals_reference_and_80_bit_softmax(monkeypatch_session, B, N, G, dv, mask, rule, increasing,
                                                    integer, array_offsets, inv_tau, seed):
    rng = np.random.default_rng(seed)
    st, V = random_struct(rng, B, N, G, dv, increasing, integer, array_offsets)
    fast, ref = run_both(monkeypatch_session, st, V, mask, rule, inv_tau, True)
    assert (fast is None) == (ref is None) == (not structured_order_exists(st, mask))
    if fast is None:
        return
    s_ex, h_ex, l_ex, t_ex = brute(st, V, mask, rule, inv_tau)
    # hard outputs and tie counts: no rounding beyond the (identical) scores: equal
    assert np.array_equal(fast[1], h_ex) and np.array_equal(ref[1], h_ex)
    assert np.array_equal(fast[3], t_ex) and np.array_equal(ref[3], t_ex)
    scores = [np.abs(st.a).max(), np.abs(st.bos).max()] + [np.abs(o).max() for _, o in st.groups]
    allow = leak_rounding_allowance(float(2 * max(scores)), 1, inv_tau, N)
    abs_err = (10 * N + 64) * (N + 1) * 2.0 ** -1016
    vmax = float(np.abs(V).max(initial=0.0))
    for soft, _, leak, _ in (fast, ref):
        # leak: a sum of non-negative terms over another: relative allowance (THEORY §7)
        assert np.all(np.abs(leak - l_ex) <= allow * l_ex + abs_err)
        # soft = num/tot with |num^ − num| ≤ r·Σw|v|, |tot^ − tot| ≤ r·tot: error ≤ 2r·max|v|/(1 − r)
        assert np.all(np.abs(soft - s_ex) <= 2 * allow * vmax / (1 - allow) + abs_err)
    # kernel against reference: both within the allowance of the exact value
    assert np.all(np.abs(fast[2] - ref[2]) <= 2 * allow * l_ex + 2 * abs_err)


@pytest.fixture(scope="module")
def monkeypatch_session():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


@pytest.mark.parametrize("mask", MASKS)
def test_kernel_without_value_columns_still_gives_ties_and_leak(monkeypatch, mask):
    # dv = 0 (the NumPy reference needs a value column): the kernel runs once on a stand-in column
    rng = np.random.default_rng(7)
    st, V = random_struct(rng, 2, 20, 2, 0, mask not in ("strict_future", "future"), True, False)
    monkeypatch.setattr(head_kernel, "MIN_POSITIONS", 0)
    soft, hard, leak, ties = structured_eval(st, V, mask, "AHA", 1.0, True)
    _, _, l_ex, t_ex = brute(st, V, mask, "AHA", 1.0)
    assert soft.shape == hard.shape == (0, 2, 20)
    assert np.array_equal(ties, t_ex)
    allow = leak_rounding_allowance(float(2 * max(np.abs(st.a).max(), np.abs(st.bos).max(), 2.0)), 1, 1.0, 20)
    assert np.all(np.abs(leak - l_ex) <= allow * l_ex) and float(l_ex.max()) > 0.01


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("rule", RULES)
def test_hard_only_kernel_equals_reference(monkeypatch, mask, rule):
    rng = np.random.default_rng(11)
    st, V = random_struct(rng, 2, 30, 3, 2, mask not in ("strict_future", "future"), True, True)
    fast, ref = run_both(monkeypatch, st, V, mask, rule, 1.0, False)
    assert fast[0] is None and fast[2] is None and ref[0] is None
    _, h_ex, _, t_ex = brute(st, V, mask, rule, 1.0)
    assert np.array_equal(fast[1], h_ex) and np.array_equal(fast[3], t_ex)
    assert np.array_equal(ref[1], h_ex) and np.array_equal(ref[3], t_ex)


def test_head_on_fused_kernel_matches_numpy_path_within_leak_allowance(monkeypatch, s_head_input):
    # the `!a S b` head (strict past, UHA-rightmost, one group) on one random word, at its 1/τ scale
    n = 20_000
    head, x = s_head_input(n, 5)
    inv_tau = 4.0 * n
    calls = []
    real = structured_attention.fused_eval
    monkeypatch.setattr(structured_attention, "fused_eval", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(head_kernel, "MIN_POSITIONS", 1000)
    fast = run_head(head, x, soft=True, inv_tau=inv_tau, path="structured")
    assert calls  # the fused kernel ran
    monkeypatch.setattr(head_kernel, "MIN_POSITIONS", 10**12)
    ref = run_head(head, x, soft=True, inv_tau=inv_tau, path="structured")
    assert len(calls) == 1 and fast.path == ref.path == "structured"
    allow = leak_rounding_allowance(ref.score_scale, ref.key_dim, inv_tau, n + 1,
                                    rounding_terms=ref.rounding_terms or None)
    assert 0 < allow < 1e-6
    assert np.array_equal(fast.hard, ref.hard) and np.array_equal(fast.ties, ref.ties)
    assert np.all(np.abs(fast.leak - ref.leak) <= 2 * allow * np.abs(ref.leak) + 1e-300)
    assert np.all(np.abs(fast.soft - ref.soft) <= 2 * allow * np.maximum(np.abs(ref.soft), 1.0))
    assert float(np.max(ref.leak)) > 1e-3  # real leaks were compared, not only zeros


def test_threshold_and_switch_off():
    st = _Struct(a=np.arange(5.0)[None], code=None, groups=[(0, 0.0)], bos=np.zeros((1, 5)))
    assert not head_kernel.applies(st, "AHA", head_kernel.MIN_POSITIONS - 1)
    assert head_kernel.applies(st, "AHA", head_kernel.MIN_POSITIONS)
    assert not head_kernel.applies(_Struct(a=None, code=None, groups=[(0, 0.0)], bos=st.bos), "AHA",
                                   head_kernel.MIN_POSITIONS)
    code = ("import sys; from softhard.constructions import head_kernel as k, structured_attention as s; "
            "import numpy as np; st = s._Struct(a=np.arange(5.0)[None], code=None, groups=[(0, 0.0)], "
            "bos=np.zeros((1, 5))); print(k.applies(st, 'AHA', k.MIN_POSITIONS), 'numba' in sys.modules)")
    env = dict(os.environ, SOFTHARD_NUMBA="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]  # forced NumPy path, numba never imported


def test_numba_cache_shared_by_concurrent_processes(tmp_path):
    # two processes (as two xdist workers) compile into one empty cache at once; both succeed, and a
    # third loads the kernel from the cache without compiling (a cache key that changed per process,
    # e.g. from a closed-over jitted helper, would make every process recompile for ~2.5 s)
    code = ("from softhard.constructions import head_kernel as k; f = k._kernel(); "
            "print(sum(f.stats.cache_hits.values()), sum(f.stats.cache_misses.values()))")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    env.pop("SOFTHARD_NUMBA", None)
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    # each compiled, or (started late under load) found the other's complete entry
    assert all(o.split() in (["0", "1"], ["1", "0"]) for o in outs)
    third = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert third.stdout.split() == ["1", "0"]  # a cache hit, no compilation
    assert len(list(tmp_path.rglob("*.nbi"))) == 1
