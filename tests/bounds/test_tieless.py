"""The uniform-tieless check (issue 13 item 5; THEORY §6): per head, every analysed row uniform (all
scores equal) or with a unique maximum, and the composed bound's tie-free mixing atom where it holds.

Two tiny two-layer models over {a, b} (residual: bos, one, a, pos, pa, s1):

* layer 0, head ``prev`` (strict past, score j): reads the previous symbol, ``pa(i) = [w_{i-1} = a]``
  (row 1 sees BOS only);
* layer 1, head ``follow`` (past): score ``pa(i)·j`` in model TIELESS — rows with pa = 0 are uniform,
  rows with pa = 1 have the unique maximum j = i — and ``pa(i)·[w_j = a]`` in model TIED — a row with
  pa = 1 and two a's in 1..i ties them with BOS as a competitor.  Value: ``[w_j = a]``, written to s1.

Expected values are computed here from these definitions (exact row classification by direct
enumeration, an mpmath softmax of the two layers), not read from the code under test.
"""

from __future__ import annotations

import itertools

import mpmath
import sympy as sp

from softhard.bounds.composed import HeadPremise, composed_bound
from softhard.bounds.core import n as n_sym, tau
from softhard.constructions.gaps import analyse_gaps
from softhard.constructions.modelfile import parse_model

from models_util import follow_doc as model_doc

N = 6


def words(n_max: int):
    """Every word of length 1..n_max, by length, in itertools.product order (the analysis's order)."""
    for n in range(1, n_max + 1):
        yield from itertools.product("ab", repeat=n)


def classify(w, tied: bool) -> dict[str, list[str]]:
    """Per head, per row i = 1..n: 'uniform' | 'unique' | 'tied', from the exact scores."""
    a = [0] + [int(s == "a") for s in w]  # a[0]: BOS
    out = {"prev": [], "follow": []}
    for i in range(1, len(w) + 1):
        out["prev"].append(kind({j: j for j in range(i)}))  # strict past, score j
        pa = a[i - 1] if i >= 2 else 0
        out["follow"].append(kind({j: pa * (a[j] if tied else j) for j in range(i + 1)}))
    return out


def kind(scores: dict[int, int]) -> str:
    top = max(scores.values())
    arg = [j for j, s in scores.items() if s == top]
    if len(arg) == len(scores):
        return "uniform"
    return "unique" if len(arg) == 1 else "tied"


def expected_counts(tied: bool):
    counts = {h: {"uniform": 0, "unique": 0, "tied": 0} for h in ("prev", "follow")}
    first = {h: None for h in counts}
    for w in words(N):
        for h, ks in classify(w, tied).items():
            for i, k in enumerate(ks, start=1):
                counts[h][k] += 1
                if k == "tied" and first[h] is None:
                    first[h] = (w, i)
    return counts, first


def analysed(tied: bool):
    hm = parse_model(model_doc(tied)).canonical()
    return hm, analyse_gaps(hm, N, method="exhaustive")


def test_gap_report_counts_rows_as_an_independent_classification():
    for tied in (False, True):
        _, rep = analysed(tied)
        counts, first = expected_counts(tied)
        for h in ("prev", "follow"):
            hg = rep.heads[h]
            assert (hg.rows_uniform, hg.rows_unique, hg.rows_tied) == (
                counts[h]["uniform"], counts[h]["unique"], counts[h]["tied"]), (tied, h)
            assert hg.tieless == (counts[h]["tied"] == 0)
            assert (hg.word_tied, hg.row_tied if hg.word_tied else None) == (first[h] or (None, None))
            j = hg.to_json()
            assert j["tieless"] == hg.tieless and j["rows"]["tied"] == counts[h]["tied"]
    assert analysed(False)[1].heads["follow"].tieless and not analysed(True)[1].heads["follow"].tieless
    assert analysed(True)[1].heads["follow"].word_tied == ("a", "a")  # row 2: pa = 1, two a's, BOS below


def soft_follow(w, inv_tau, tied: bool):
    """mpmath evaluation of the soft run (both layers at 1/τ = inv_tau): s1 at rows 1..n."""
    a = [0] + [int(s == "a") for s in w]
    out = []
    for i in range(1, len(w) + 1):
        e0 = [mpmath.exp(j * inv_tau) for j in range(i)]
        pa = sum(x * a[j] for j, x in enumerate(e0)) / sum(e0)
        sc = [pa * (a[j] if tied else j) for j in range(i + 1)]
        top = max(sc)
        e1 = [mpmath.exp((s - top) * inv_tau) for s in sc]
        out.append(sum(x * a[j] for j, x in enumerate(e1)) / sum(e1))
    return out


def hard_follow(w, tied: bool):
    """Exact AHA output of ``follow`` at rows 1..n (Fractions via mpmath.mpf of exact ratios)."""
    a = [0] + [int(s == "a") for s in w]
    out = []
    for i in range(1, len(w) + 1):
        pa = a[i - 1] if i >= 2 else 0
        sc = [pa * (a[j] if tied else j) for j in range(i + 1)]
        arg = [j for j in range(i + 1) if sc[j] == max(sc)]
        out.append(mpmath.mpf(sum(a[j] for j in arg)) / len(arg))
    return out


def test_tieless_bound_is_sound_and_below_the_tied_form():
    """TIELESS: the head ``follow`` gets Θ = max(t/(1+t), 1 − e^{−2σ/τ}) (σ ≠ 0: it reads pa, which
    carries layer 0's leak); it is below the tied form 1 − e^{−2σ/τ}/(1+t), and above the largest
    |soft − hard| of s1 over every word of length ≤ N (mpmath softmax, 50 digits)."""
    mpmath.mp.dps = 50
    hm, rep = analysed(False)
    prem = {h: HeadPremise(g.gap, g.ties_max, g.tieless) for h, g in rep.heads.items()}
    assert prem["follow"].ties >= 2 and prem["follow"].tieless
    cb = composed_bound(hm, prem, N)
    th = cb.heads["follow"]["theta"]
    assert isinstance(th, sp.Max) and "uniform-tieless" in cb.graph.nodes["head:follow"]["local"]
    old = composed_bound(hm, {h: HeadPremise(p.gap, p.ties, False) for h, p in prem.items()}, N)
    bound_s1 = cb.outputs["s1"]
    for it in (8, 14, 20):
        subs = {n_sym: N, tau: sp.Rational(1, it)}
        new_v = sp.N(bound_s1.subs(subs), 30)
        old_v = sp.N(old.outputs["s1"].subs(subs), 30)
        assert new_v < old_v, (it, new_v, old_v)
        worst = max(abs(s - h) for w in words(N) for s, h in zip(soft_follow(w, it, False), hard_follow(w, False)))
        assert worst <= mpmath.mpf(str(new_v)), (it, worst, new_v)
        assert worst > 0  # the uniform rows' distortion is real once pa carries a leak


def test_tied_model_keeps_the_tied_form_and_stays_sound():
    """TIED: ``follow`` has a row with a tie and a competitor, so the bound keeps
    1 − e^{−2σ/τ}/(1+t); it is above the observed error (mpmath softmax)."""
    mpmath.mp.dps = 50
    hm, rep = analysed(True)
    prem = {h: HeadPremise(g.gap, g.ties_max, g.tieless) for h, g in rep.heads.items()}
    assert not prem["follow"].tieless and prem["follow"].ties >= 2
    cb = composed_bound(hm, prem, N)
    assert not isinstance(cb.heads["follow"]["theta"], sp.Max)
    assert "uniform-tieless" not in cb.graph.nodes["head:follow"]["local"]
    for it in (8, 20):
        v = sp.N(cb.outputs["s1"].subs({n_sym: N, tau: sp.Rational(1, it)}), 30)
        worst = max(abs(s - h) for w in words(N) for s, h in zip(soft_follow(w, it, True), hard_follow(w, True)))
        assert 0 < worst <= mpmath.mpf(str(v))
