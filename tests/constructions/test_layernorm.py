"""Layer norm in model files (issue 17, item 2): the format, the float engine, the ball-arithmetic
hard engine and its gap/variance premises, the composed bound's layer-norm step, and hahn.

The reference values are computed independently: an mpmath forward pass at 60 digits written
here from the format's definition (no softhard engine code), and closed forms by hand."""

from __future__ import annotations

import copy
import itertools
import json
import math
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest

from softhard.bounds.composed import HeadPremise, composed_bound, hahn_bound
from softhard.bounds.core import n, tau
from softhard.bounds.propagation import ln_constants
from softhard.constructions.engine import forward
from softhard.constructions.errors import ModelFormatError
from softhard.constructions.exact import RArr
from softhard.constructions.exact_balls import PREC, exact_engine, layernorm_ball
from softhard.constructions.gaps import analyse_gaps
from softhard.constructions.hard_model import LNSpec
from softhard.constructions.modelfile import load_model, parse_model
from softhard.solver.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "models" / "contains_a_layernorm.json"


def _doc():
    return json.loads(EXAMPLE.read_text())


def _pre_norm_doc():
    """The example with layer 1's norm as a pre-norm: (s, half) normalised into new coordinates
    (ns, nh) that the head reads; the residual keeps s un-normalised."""
    doc = _doc()
    doc["residual"] += ["ns", "nh"]
    doc["d_model"] += 2
    for k in ("W_Q", "W_K", "W_V"):
        for L in doc["layers"]:
            for h in L["heads"]:
                h[k]["shape"][0] += 2
    for L in doc["layers"]:
        for h in L["heads"]:
            h["W_O"]["shape"][1] += 2
    doc["token_embedding"]["shape"][1] += 2
    doc["layers"][0].pop("layernorm")
    doc["layers"][1]["layernorm"] = [{"name": "pre1", "sublayer": "attention", "position": "pre",
                                      "coordinates": ["s", "half"], "target": ["ns", "nh"], "eps": "1/100000"}]
    doc["layers"][1]["heads"][0]["W_K"]["entries"] = [["ns", 0, 1]]
    doc["outputs"][0] = {"name": "contains_a", "type": "boolean", "coordinate": "ns", "threshold": 0, "at": "last"}
    return doc


def _mp_forward(spec, word):
    """Hard forward at 60 digits from the format's definition (dense, no canonical folding):
    the final residual rows, per head the (row, gap) pairs, per norm the input variances."""
    with mpmath.workdps(60):
        n, d = len(word), spec.d
        ids = [0] + [spec.alphabet.index(s) + 1 for s in word]
        x = [[mpmath.mpf(spec.token_embedding[t, a].numerator) / spec.token_embedding[t, a].denominator
              for a in range(d)] for t in ids]
        F = lambda q: mpmath.mpf(q.numerator) / q.denominator  # noqa: E731
        gaps, variances = {}, {}

        def norm(ln):
            nonlocal x
            new = [list(r) for r in x]
            for i, r in enumerate(x):
                v = [r[c] for c in ln.coords]
                mu = sum(v) / len(v)
                var = sum((t - mu) ** 2 for t in v) / len(v)
                variances.setdefault(ln.name, []).append(var)
                for k, t in enumerate(ln.target):
                    new[i][t] = F(ln.gamma[k]) * (v[k] - mu) / mpmath.sqrt(var + F(ln.eps)) + F(ln.beta[k])
            x = new

        for L in spec.layers:
            for ln in [ln for ln in L.lns if ln.point == "before_heads"]:
                norm(ln)
            upd = [[mpmath.mpf(0)] * d for _ in x]
            for h in L.heads:
                mat = lambda v, W: [sum(v[a] * F(W[a, c]) for a in range(W.shape[0])) for c in range(W.shape[1])]  # noqa: E731
                Q, K, V = ([mat(v, W) for v in x] for W in (h.W_Q, h.W_K, h.W_V))
                for i in range(n + 1):
                    js = [0] if i == 0 else sorted({0} | set({"past": range(0, i + 1), "none": range(0, n + 1)}[h.mask]))
                    s = {j: F(h.scale) * sum(q * k for q, k in zip(Q[i], K[j])) for j in js}
                    top = max(s.values())
                    A = [j for j in js if abs(s[j] - top) < mpmath.mpf(10) ** -40]
                    rest = [v for j, v in s.items() if j not in A]
                    if i >= 1 and rest:
                        gaps.setdefault(h.name, []).append(top - max(rest))
                    o = [sum(V[j][c] for j in A) / len(A) for c in range(len(V[0]))]
                    w = mat(o, h.W_O)
                    upd[i] = [a + b for a, b in zip(upd[i], w)]
            x = [[a + b for a, b in zip(r, u)] for r, u in zip(x, upd)]
            for ln in [ln for ln in L.lns if ln.point == "after_heads"]:
                norm(ln)
            assert not L.mlps
            for ln in [ln for ln in L.lns if ln.point == "after_mlps"]:
                norm(ln)
        return x, gaps, variances


# --------------------------------------------------------------------------------------------
# the format


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["layers"][0]["layernorm"][0].update(eps=0), r"layernorm\[0\]\.eps: must be > 0"),
    (lambda d: d["layers"][0]["layernorm"][0].update(sublayer="ffn"), r"sublayer: 'ffn' is not one of attention, mlp"),
    (lambda d: d["layers"][0]["layernorm"][0].update(position="pre"), r"a pre-norm needs \"target\""),
    (lambda d: d["layers"][0]["layernorm"][0].update(gamma=[1, 1, 1]), r"gamma: expected 2 entries"),
    (lambda d: d["layers"][0]["layernorm"][0].update(coordinates=["s", "nope"]), r"'nope' is not a residual label"),
    (lambda d: d.update(final_layernorm={"eps": 1, "position": "post"}), r"final_layernorm\.position: the final"),
])
def test_format_errors_are_one_line(edit, message):
    doc = _doc()
    edit(doc)
    with pytest.raises(ModelFormatError, match=message) as e:
        parse_model(doc, path="m.json")
    assert "\n" not in str(e.value) and str(e.value).startswith("m.json: ")


def test_format_reads_post_and_pre_norms():
    spec = load_model(EXAMPLE)
    (ln,) = spec.layers[0].lns
    assert (ln.point, ln.coords, ln.target, ln.eps) == ("after_heads", [5, 3], [5, 3], Fraction(1, 100000))
    pre = parse_model(_pre_norm_doc(), path="pre.json")
    (ln,) = pre.layers[1].lns
    assert (ln.point, ln.target) == ("before_heads", [7, 8])


# --------------------------------------------------------------------------------------------
# engines against the independent 60-digit forward pass


WORDS = ["a", "b", "ab", "bb", "bab", "bbbb", "abba", "bbbba"]


@pytest.mark.parametrize("make", [_doc, _pre_norm_doc])
def test_hard_engines_match_independent_forward(make):
    spec = parse_model(make(), path="m.json")
    hm = spec.canonical()
    tr = hm.transformer()
    eng = exact_engine(hm)
    for w in WORDS:
        ref, _, _ = _mp_forward(spec, w)
        run = eng.run(np.array([hm.encode(w)], dtype=np.int64))
        flo = forward(tr, tr.encode([w]), mode="hard").x[0]
        for i in range(len(w) + 1):
            for a in range(spec.d):
                c = Fraction(int(run.x.num[0, i, a]), run.x.den)
                r = Fraction(int(run.xr.num[0, i, a]), run.xr.den)
                with mpmath.workdps(60):
                    exact = mpmath.mpf(c.numerator) / c.denominator
                    assert abs(exact - ref[i][a]) <= mpmath.mpf(r.numerator) / r.denominator + mpmath.mpf(10) ** -50
                assert r < Fraction(1, 2**80)  # the balls are tight
                assert abs(flo[i, a] - float(ref[i][a])) < 1e-12  # float engine


def _ln_ball_by_fractions(x: RArr, xr, ln: LNSpec):
    """The module docstring's layer-norm ball, one Fraction per entry: centre
    ``⌊(β + γ·(x − μ)·s)·2^P⌋/2^P`` with ``s = ⌊2^P/√(v + eps)⌋/2^P``, radius
    ``⌈(|γ|·(|x − μ|/2^P + lip) + 2^-P)·2^P⌉/2^P``, ``lip = (⌊2^P/σ_lo⌋ + 1)/2^P·R`` (R the row's
    summed input radius, ``σ_lo² = v/4 + eps`` when ``4R² ≤ m·v``, else eps), and the first row
    with the least ``max(0, v − R(mv + 1)/m)``; as ``{(b, i, a): (centre, radius)}`` of every
    coordinate, the variance triple and the branches of σ_lo² taken."""
    P = 2**PREC
    B, N, d = x.num.shape
    m = len(ln.coords)
    out, best, branches = {}, None, set()
    for b in range(B):
        for i in range(N):
            xs = [Fraction(int(x.num[b, i, c]), x.den) for c in ln.coords]
            R = Fraction(0) if xr is None else sum(Fraction(int(xr.num[b, i, c]), xr.den) for c in ln.coords)
            mu = sum(xs) / m
            v = sum((z - mu) ** 2 for z in xs) / m
            q = v + ln.eps
            s = Fraction(math.isqrt(q.denominator * P * P // q.numerator), P)
            lip, vlow = Fraction(0), v
            if R:
                lo2 = v / 4 + ln.eps if 4 * R * R <= m * v else ln.eps
                branches.add("v/4 + eps" if 4 * R * R <= m * v else "eps")
                lip = Fraction(math.isqrt(lo2.denominator * P * P // lo2.numerator) + 1, P) * R
                vlow = max(Fraction(0), v - R * (m * v + 1) / m)
            if best is None or vlow < best[0]:
                best = (vlow, b, i)
            for a in range(d):
                c = Fraction(int(x.num[b, i, a]), x.den)
                r = Fraction(0) if xr is None else Fraction(int(xr.num[b, i, a]), xr.den)
                out[b, i, a] = (c, r)
            for k, t in enumerate(ln.target):
                g, be, dev = Fraction(ln.gamma[k]), Fraction(ln.beta[k]), xs[k] - mu
                cen = be + g * dev * s
                rad = abs(g) * (abs(dev) / P + lip) + Fraction(1, P)
                out[b, i, t] = (Fraction(math.floor(cen * P), P), Fraction(math.ceil(rad * P), P))
    return out, best, branches


@pytest.mark.parametrize("seed", range(6))
def test_layernorm_ball_equals_fraction_per_entry(seed):
    """layernorm_ball (integer numerators over shared denominators) gives exactly the rationals of
    the Fraction-per-entry evaluation above: pre- and post-norm, negative and zero γ, int64 numerators
    (whose squares overflow int64) and Python ints, rows of zero variance, no radius, zero and small
    radii (σ_lo² = v/4 + eps) and large ones (σ_lo² = eps); where the radii are small the variance
    lower bound is positive, so its value is compared, not only where a zero lies."""
    rng = np.random.default_rng(seed)
    B, N, d, m = 3, 4, 5, 3
    if seed % 2:  # int64 numerators, as the exact engine passes them; every row of positive variance
        x = RArr(rng.integers(-2**40, 2**40, size=(B, N, d)), int(rng.integers(1, 60)) * 2**30)  # squares overflow int64
    else:  # Python ints beyond int64, and a row of zero variance
        x = RArr(rng.integers(-40, 41, size=(B, N, d)).astype(object) * 10**30, int(rng.integers(1, 60)))
        x.num[0, 1, :] = 7
    if seed % 3 == 0:
        xr = None
    else:
        big = seed % 3 == 2
        xr = RArr(rng.integers(0, 5, size=(B, N, d)).astype(object) * (10**6 if big else 1),
                  (2**40 if not big else 3) * int(rng.integers(1, 9)))
        xr.num[1, 2, :] = 0  # an exact row inside a ball
    coords = [0, 2, 3]
    target = coords if seed % 2 else [1, 4, 0]
    gam = np.array([Fraction(int(rng.integers(-9, 10)), int(rng.integers(1, 7))) for _ in range(m)] , dtype=object)
    gam[1] = Fraction(0)
    beta = np.array([Fraction(int(rng.integers(-9, 10)), int(rng.integers(1, 7))) for _ in range(m)], dtype=object)
    ln = LNSpec(name="ln", coords=coords, target=target, gamma=gam, beta=beta,
                eps=Fraction(1, int(rng.integers(10, 10**5))), point="after_heads")
    want, want_best, branches = _ln_ball_by_fractions(x, xr, ln)
    yc, yr, best = layernorm_ball(x, xr, ln)
    got = {(b, i, a): (Fraction(int(yc.num[b, i, a]), yc.den), Fraction(int(yr.num[b, i, a]), yr.den))
           for b in range(B) for i in range(N) for a in range(d)}
    assert got == want
    assert best == want_best
    assert branches >= [set(), {"v/4 + eps"}, {"eps"}][seed % 3] and (xr is not None or not branches)
    if seed in (1, 3):  # the variance lower bound itself is compared, not only where a zero lies
        assert want_best[0] > 0


def test_gaps_margins_and_variance_premise():
    spec = load_model(EXAMPLE)
    rep = analyse_gaps(spec.canonical(), 5)
    assert rep.exhaustive and rep.simulable
    with mpmath.workdps(40):
        r = 1 / mpmath.sqrt(1 + 16 * mpmath.mpf(1) / 100000)  # (1/4)/sqrt(1/16 + eps): the normalised s at every row
        g = rep.heads["share_b"].gap
        assert 0 <= 2 * r - mpmath.mpf(g.numerator) / g.denominator < mpmath.mpf(2) ** -80  # a lower bound, tight
        m = rep.outputs["contains_a"].margin
        assert 0 <= r - mpmath.mpf(m.numerator) / m.denominator < mpmath.mpf(2) ** -80
    assert rep.heads["seen_a"].gap == Fraction(1, 4)
    # the variance of (s, half) is (1/4)^2 at every row: s in {0, 1}, half = 1/2
    assert rep.layernorms["ln0"].var == Fraction(1, 16)
    # every head's gap is the minimum the 60-digit forward pass sees over every word
    best = {}
    for length in range(1, 6):
        for w in itertools.product("ab", repeat=length):
            _, gaps, var = _mp_forward(spec, w)
            for h, gs in gaps.items():
                best[h] = min(gs + [best.get(h, mpmath.inf)])
            assert min(var["ln0"]) == mpmath.mpf(1) / 16
    for h, v in best.items():
        g = rep.heads[h].gap
        with mpmath.workdps(60):
            assert abs(mpmath.mpf(g.numerator) / g.denominator - v) < mpmath.mpf(2) ** -80


# --------------------------------------------------------------------------------------------
# the composed bound's layer-norm step


def test_layernorm_lipschitz_step_holds_on_random_perturbations():
    """|LN(z + δ) − LN(z)|_b ≤ |γ_b|·c1·φ(E) with φ = E + (c2/c1 − 1)·E²/ρ, E = Σ|δ_a|, for hard
    inputs z of variance ≥ v — for small and for large perturbations (both branches of φ)."""
    m, v, eps = 4, Fraction(1, 16), Fraction(1, 1000)
    ln = LNSpec(name="t", coords=list(range(m)), target=list(range(m)), gamma=np.full(m, Fraction(1), dtype=object),
                beta=np.full(m, Fraction(0), dtype=object), eps=eps, point="after_heads")
    c1, c2, rho = ln_constants(ln, v)
    assert float(c1) == pytest.approx(1 / np.sqrt(1 / 64 + 1e-3), rel=1e-12)
    assert float(c2) == pytest.approx(1 / np.sqrt(1e-3), rel=1e-12)
    assert float(rho) == pytest.approx(np.sqrt(m / 16) / 2, rel=1e-12)
    rng = np.random.default_rng(3)

    def LN(z):
        c = z - z.mean()
        return c / np.sqrt((c * c).mean() + 1e-3)

    worst, big = 0.0, 0
    for _ in range(4000):
        z = rng.normal(size=m)
        z *= np.sqrt(float(v)) / z.std() * (1 + rng.exponential(0.1))  # variance ≥ v
        delta = rng.normal(size=m) * 10.0 ** rng.uniform(-6, 1)
        E = np.abs(delta).sum()
        big += E > float(rho)
        phi = E + (float(c2) / float(c1) - 1) * E * E / float(rho)
        moved = np.abs(LN(z + delta) - LN(z)).max()
        assert moved <= float(c1) * phi * (1 + 1e-9)
        worst = max(worst, moved / (float(c1) * phi))
    assert big > 100 and worst > 0.2  # both branches sampled; the bound is not vacuous


def test_composed_bound_contains_layernorm_node():
    spec = load_model(EXAMPLE)
    hm = spec.canonical()
    rep = analyse_gaps(hm, 4)
    cb = composed_bound(hm, {k: HeadPremise(h.gap, h.ties_max) for k, h in rep.heads.items()}, 4,
                        {"ln0": rep.layernorms["ln0"].var})
    node = cb.graph.nodes["ln:ln0"]
    assert node["kind"] == "layernorm" and node["variance_min"] == "1/16"
    # no variance premise: the global constant 1/sqrt(eps) only
    cb0 = composed_bound(hm, {k: HeadPremise(h.gap, h.ties_max) for k, h in rep.heads.items()}, 4, {})
    a = float(cb.outputs["contains_a"].subs({n: 4, tau: Fraction(1, 40)}))
    b = float(cb0.outputs["contains_a"].subs({n: 4, tau: Fraction(1, 40)}))
    c1, c2, _ = ln_constants(spec.layers[0].lns[0], Fraction(1, 16))
    # where the error is small, the premise gains the factor c2/c1 = sqrt(1/64 + eps)/sqrt(eps) ≈ 39.5
    assert float(c2 / c1) == pytest.approx(np.sqrt(1 / 64 + 1e-5) / np.sqrt(1e-5), rel=1e-9)
    assert 0.9 * float(c2 / c1) < b / a <= float(c2 / c1) * (1 + 1e-9)


def test_hahn_says_why_layer_norm_escapes_the_lemma(capsys):
    hb = hahn_bound(load_model(EXAMPLE).canonical())
    assert not hb.applicable and "layer norms (ln0)" in hb.reason and "Lipschitz" in hb.reason
    assert main(["hahn", "--model", str(EXAMPLE), "--tau", "1/4"]) == 1
    out = capsys.readouterr().out
    assert "not applicable" in out and "Lipschitz" in out


def test_certify_and_verify_a_layernorm_model(tmp_path, capsys):
    out = tmp_path / "ln.json"
    assert main(["certify", "--model", str(EXAMPLE), "--n-max", "4", "--epsilon", "margin", "--find-tau",
                 "-o", str(out)]) == 0
    cert = json.loads(out.read_text())
    assert cert["status"] == "proved"
    (p,) = cert["premises"]["layernorms"]
    assert p["variance_min"] == "1/16" and p["status"].startswith("established")
    assert main(["verify", str(out)]) == 0
    # an edited premise is caught by the replay
    bad = copy.deepcopy(cert)
    bad["source"]["layernorm_premises"]["ln0"]["variance_min"] = "1/8"
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    assert main(["verify", str(tmp_path / "bad.json")]) == 2
    capsys.readouterr()
