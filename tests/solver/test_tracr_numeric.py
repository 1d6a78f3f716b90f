"""The Tracr numeric confirmation's 50-digit re-run (:func:`softhard.solver.tracr_numeric.mp_error`)
against an independent dense evaluation: the soft forward pass written out with
``mpmath.matrix`` products over every weight (zeros included) and a separate exact hard pass
(:class:`~softhard.constructions.exact.ExactEngine`), compared bit for bit (ISSUE 16: the sparse
evaluation must give the very values the dense one gives, so the measured ``observed_mp50`` keeps
its meaning)."""

from __future__ import annotations

import itertools
from fractions import Fraction
from pathlib import Path

import mpmath
import pytest

from softhard.constructions.exact import ExactEngine
from softhard.constructions.tracr_load import load_tracr
from softhard.solver.tracr import model_info
from softhard.solver.tracr_analysis import analyse
from softhard.solver.tracr_numeric import compiled_inv_tau_float, mp_error

DIR = Path(__file__).resolve().parents[2] / "examples" / "tracr"


def _q(v: Fraction) -> mpmath.mpf:
    return mpmath.mpf(v.numerator) / v.denominator


def _dense_mp_error(hm, word, lam: Fraction, dps: int = 50) -> mpmath.mpf:
    """max |soft − hard| on the output coordinates: every product an ``mpmath.matrix`` product."""
    o = hm.outputs[0]
    x_hard = ExactEngine(hm).run([hm.encode(word)]).x
    with mpmath.workdps(dps):
        lam_mp = _q(lam)
        N = len(word) + 1

        def M(a):
            return mpmath.matrix([[_q(v) for v in row] for row in a])
        P = hm.positional_exact(len(word))
        ids = [0] + hm.encode(word)
        x = mpmath.matrix(N, hm.d)
        for i, t in enumerate(ids):
            for a in range(hm.d):
                x[i, a] = _q(hm.token_embedding[t, a] + P[i, a])
        visible = {"none": lambda i, j: True, "past": lambda i, j: j <= i, "strict_past": lambda i, j: j < i,
                   "future": lambda i, j: j >= i, "strict_future": lambda i, j: j > i}
        for hs, ms in zip(hm.heads, hm.mlps):
            upd = mpmath.matrix(N, hm.d)
            for h in hs:
                Q, K, VO = x * M(h.W_Q), x * M(h.W_K), x * M(h.vo())
                sc = _q(h.scale)
                for i in range(N):
                    js = [0] if i == 0 else [j for j in range(N) if j == 0 or visible[h.mask](i, j)]
                    s = [sc * sum(Q[i, c] * K[j, c] for c in range(Q.cols)) for j in js]
                    top = max(s)
                    w = [mpmath.exp(lam_mp * (v - top)) for v in s]
                    z = sum(w)
                    for b in range(hm.d):
                        upd[i, b] += sum(wk * VO[j, b] for wk, j in zip(w, js)) / z
            x = x + upd
            for m in ms:
                pre = x * M(m.W1)
                for i in range(N):
                    for u in range(pre.cols):
                        pre[i, u] = max(pre[i, u] + _q(m.b1[u]), 0)
                out = pre * M(m.W2)
                for i in range(N):
                    for b in range(hm.d):
                        x[i, b] += out[i, b] + _q(m.b2[b])
        err = mpmath.mpf(0)
        for i in range(1, N):
            for c in o.coords:
                err = max(err, abs(x[i, c] - _q(Fraction(int(x_hard.num[0, i, c]), x_hard.den))))
        return +err


@pytest.mark.parametrize("name", ["frac_prevs", "hist"])
def test_mp_error_equals_the_dense_evaluation(name):
    tm = load_tracr(DIR / name)
    hm = tm.hard_model()
    an = analyse(hm, model_info(tm))
    N = an.n_table
    words = [w for L in (1, 2) for w in itertools.product(hm.alphabet, repeat=L)]
    words += [(s,) + (t,) * (N - 1) for s, t in itertools.permutations(hm.alphabet, 2)][:4]
    for lam in (Fraction(1), Fraction(compiled_inv_tau_float(an))):
        for w in words:
            got, want = mp_error(an, w, lam), _dense_mp_error(hm, w, lam)
            assert got == want, (w, lam, got, want)
    # resolves errors far below float64: at the compiled temperature the worst error is tiny but > 0
    worst = max(_dense_mp_error(hm, w, Fraction(compiled_inv_tau_float(an))) for w in words)
    assert 0 < worst
