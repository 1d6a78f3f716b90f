"""Composed soft-vs-hard error bound of a hard-attention transformer (THEORY §2, §6), and Hahn's
sensitivity bound (THEORY §1).

**Setting.**  A canonical model (:class:`~softhard.constructions.hard_model.HardModel`) is run hard
and soft (temperature τ) on the same word of length n.  ``e_a`` bounds ``|x̃_ia − x_ia|`` at every
position i for residual coordinate a (the embedding is exact: e = 0).  This is THEORY §6's
recursion kept *per coordinate* — §6 is the special case where every coordinate carries the same
max-norm error — which is sound for the same reasons and much tighter when heads write and read
few coordinates.  Every error is a nonnegative rational combination of one *atom* Θ_h per head.

**Head h** (scores ``s_ij = x_i M x_jᵀ``, ``M = scale·W_Q W_Kᵀ``; written vectors
``x_j·(W_V W_O)``; premise: gap ≥ γ_h and argmax sets of size ≤ a_h on every input of length ≤ N):

* score perturbation ``σ_h = Σ_ab |M_ab| (e_a B_b + B_a e_b + e_a e_b)`` with ``B`` bounding
  ``|x_a|`` (interval propagation below);
* leak (THEORY §2): with ``t = (m−1)·exp(−(γ_h − 2σ_h)/τ)``, the soft weight outside the argmax set
  is ``δ̃ ≤ t/(1+t)`` (``m−1 = n`` for masks none/past/future, ``n−1`` for strict masks);
* distortion inside a tie set: tied scores differ by ≤ 2σ after perturbation, so the weights
  inside the set are within total variation ``1 − exp(−2σ_h/τ)`` of uniform;
* mixing atom ``Θ_h = t/(1+t)`` if a_h = 1, else ``Θ_h = 1 − exp(−2σ_h/τ)/(1 + t)``
  (``= δ̃ + (1−δ̃)(1−e^{−2σ/τ})`` at the worst δ̃; always ≤ 1; this refines THEORY §6's
  ``(m−1)e^{−(γ−2σ)/τ} + (e^{2σ/τ} − 1)``);
* the head's written error in coordinate b: ``Σ_a |(W_V W_O)_ab| e_a + D_b·Θ_h``, where ``D_b``
  bounds the spread of ``(x_j W_V W_O)_b`` over attendable positions.

**Residual add**: ``e_b ← e_b + Σ_h (written error of h in b)`` (heads run in parallel).
**ReLU MLP** ``x + relu(x W1 + b1) W2 + b2``: units whose input weights on the error-carrying
coordinates are multiples ``α_u·r_g`` of one direction ``r_g`` move together (relu is monotone and
1-Lipschitz, so ``Δrelu_u = θ_u α_u Δz_g`` with ``θ_u ∈ [0, 1]``), hence
``e_b ← e_b + Σ_g max(Σ_u (α_u W2_ub)⁺, Σ_u (α_u W2_ub)⁻)·Σ_a |r_ga| e_a``; a clean-up pair
``(relu(z−η) − relu(z−1+η))/(1−2η)`` gets Lipschitz constant ``1/(1−2η)``, not twice that.
**Output** o: ``max_{b ∈ coords(o)} e_b``.

Every constant is an exact rational computed from the exact weights and then rounded *outward*
to 12 significant digits (up for norms, spreads and Lipschitz coefficients, down for gaps), so
the bound stays rigorous and the claims stay small.  Substituting each atom's expression into
its children gives, per output, one SymPy expression in ``n`` and ``τ`` only.

**Activation boxes** ``[lo_a, hi_a]`` for the BOS row and for the other rows are propagated by
interval arithmetic through every layer; an attention output (hard *or* soft) is a convex
combination of attendable values, so the boxes hold for both runs.  Unbounded positional
families are bounded using ``n ≤ N``.

**Hahn's bound** (THEORY §1): two *soft* runs on words differing only at position k; for rows
i ≠ k the weight of k is ``λ ≤ 1/(1 + M·e^{−R/τ})`` (R: range of a row's scores over non-BOS
keys, M: number of other non-BOS positions every row that sees k also sees), and the rest of
the row moves by the σ/TV argument above.  Writing each run's row as a mixture of the point
mass at k (weight ``a``, resp. ``a'``, both ≤ λ) and its conditional distribution Q (Q') on the
other keys, ``TV ≤ ½|a − a'| + (1 − a)·TV(Q, Q') + ½(a + a') ≤ λ + (1 − e^{−2σ/τ})`` — whatever
value k carries in either run — so a head adds ``Σ_a |(W_VW_O)_ab| ε_a + D_b·(λ + (1 − e^{−2σ/τ}))``
(an earlier version used ``2λ``; found by review).  The output's sensitivity is O(1/n) when M
grows with n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import networkx as nx
import numpy as np
import sympy as sp

from ..constructions.hard_model import CanonHead, HardModel
from ..constructions.positional import family_range
from .core import n, tau

DIGITS = 12


# --------------------------------------------------------------------------------------------
# directed rounding


def up(x: Fraction, digits: int = DIGITS) -> sp.Rational:
    """Smallest decimal with ``digits`` significant digits that is ≥ x (exact SymPy Rational)."""
    return _round(x, digits, True)


def down(x: Fraction, digits: int = DIGITS) -> sp.Rational:
    """Largest decimal with ``digits`` significant digits that is ≤ x."""
    return _round(x, digits, False)


def _round(x: Fraction, digits: int, upward: bool) -> sp.Rational:
    x = Fraction(x)
    if x == 0:
        return sp.Integer(0)
    neg = x < 0
    a = -x if neg else x
    e = math.floor(math.log10(a.numerator) - math.log10(a.denominator))
    # guard against floating error in e
    while Fraction(10) ** e > a:
        e -= 1
    while Fraction(10) ** (e + 1) <= a:
        e += 1
    s = digits - 1 - e
    scale = Fraction(10) ** s
    v = a * scale
    fl = v.numerator // v.denominator
    mag_up = (upward and not neg) or (not upward and neg)
    k = fl if (not mag_up or fl == v) else fl + 1
    r = Fraction(k) / scale
    r = -r if neg else r
    return sp.Rational(r.numerator, r.denominator)


def _rd(x: Fraction) -> Fraction:
    """Outward rounding helper for interval endpoints: to 2^-64 below."""
    return Fraction(math.floor(x * 2**64), 2**64)


def _ru(x: Fraction) -> Fraction:
    return Fraction(-math.floor(-x * 2**64), 2**64)


# --------------------------------------------------------------------------------------------
# interval activation bounds


@dataclass
class Box:
    """Per-coordinate intervals: ``bos_lo/bos_hi`` (the BOS row), ``lo/hi`` (every other row)."""

    bos_lo: list[Fraction]
    bos_hi: list[Fraction]
    lo: list[Fraction]
    hi: list[Fraction]

    def hull(self) -> tuple[list[Fraction], list[Fraction]]:
        return ([min(a, b) for a, b in zip(self.bos_lo, self.lo)], [max(a, b) for a, b in zip(self.bos_hi, self.hi)])

    def magnitude(self) -> list[Fraction]:
        lo, hi = self.hull()
        return [max(abs(a), abs(b)) for a, b in zip(lo, hi)]


def _imul(lo: list[Fraction], hi: list[Fraction], W: np.ndarray) -> tuple[list[Fraction], list[Fraction]]:
    """Interval of ``x W`` for ``x`` in the box ``[lo, hi]`` (exact, then rounded outward)."""
    d, c = W.shape
    olo, ohi = [Fraction(0)] * c, [Fraction(0)] * c
    for a in range(d):
        la, ha = lo[a], hi[a]
        for j in range(c):
            w = W[a, j]
            if w == 0:
                continue
            p, q = w * la, w * ha
            if p <= q:
                olo[j] += p
                ohi[j] += q
            else:
                olo[j] += q
                ohi[j] += p
    return [_rd(v) for v in olo], [_ru(v) for v in ohi]


def _iadd(a: tuple, b: tuple) -> tuple[list[Fraction], list[Fraction]]:
    return [x + y for x, y in zip(a[0], b[0])], [x + y for x, y in zip(a[1], b[1])]


def _relu(iv: tuple) -> tuple[list[Fraction], list[Fraction]]:
    return [max(x, Fraction(0)) for x in iv[0]], [max(x, Fraction(0)) for x in iv[1]]


def embedding_box(hm: HardModel, n_max: int | None) -> Box:
    """Box of the embedding for words of length ≤ ``n_max`` (``None``: every length; bounded
    positional embeddings only).  Raises ``ValueError`` for an unbounded family with ``n_max=None``."""
    d = hm.d
    E = hm.token_embedding
    bos = [E[0, a] for a in range(d)]
    lo = [min(E[t, a] for t in range(1, E.shape[0])) for a in range(d)]
    hi = [max(E[t, a] for t in range(1, E.shape[0])) for a in range(d)]
    plo, phi = [Fraction(0)] * d, [Fraction(0)] * d
    if hm.table is not None:
        T = hm.table
        last = T.shape[0] - 1 if n_max is None else min(n_max, T.shape[0] - 1)
        for a in range(d):
            bos[a] += T[0, a]
            col = [T[j, a] for j in range(1, last + 1)]
            plo[a] += min(col)
            phi[a] += max(col)
    for f in hm.features:
        flo, fhi = family_range(f, n_max)
        for a in range(d):
            c = f.vector[a]
            if c == 0:
                continue
            p, q = c * flo, c * fhi
            plo[a] += min(p, q)
            phi[a] += max(p, q)
    return Box(bos_lo=list(bos), bos_hi=list(bos), lo=[x + y for x, y in zip(lo, plo)],
               hi=[x + y for x, y in zip(hi, phi)])


def _mlp_box(lo: list[Fraction], hi: list[Fraction], m) -> tuple[list[Fraction], list[Fraction]]:
    """Interval of ``relu(x W1 + b1) W2 + b2`` over the box, tighter than plain interval arithmetic:
    coordinates fixed in the box are folded into the biases; units whose remaining input weights
    are multiples of one direction ``r`` are functions of the single scalar ``z = r·x``, and their
    summed contribution to each output (a piecewise-linear function of z) is bounded exactly by
    its values at the ends of z's interval and at its breakpoints."""
    d = len(lo)
    W1, W2 = m.W1, m.W2
    h = W1.shape[1]
    var = [a for a in range(d) if lo[a] != hi[a]]
    bias = [m.b1[u] + sum((W1[a, u] * lo[a] for a in range(d) if lo[a] == hi[a] and W1[a, u] != 0), Fraction(0))
            for u in range(h)]
    olo, ohi = list(m.b2), list(m.b2)
    groups: dict[tuple, list[tuple[int, Fraction]]] = {}
    for u in range(h):
        col = [W1[a, u] for a in var]
        piv = next((x for x in col if x != 0), None)
        if piv is None:
            r = max(bias[u], Fraction(0))
            if r:
                for b in range(d):
                    if W2[u, b]:
                        olo[b] += W2[u, b] * r
                        ohi[b] += W2[u, b] * r
            continue
        groups.setdefault(tuple(x / piv for x in col), []).append((u, piv))
    for key, units in groups.items():
        zlo, zhi = Fraction(0), Fraction(0)
        for a, r in zip(var, key):
            p, q = r * lo[a], r * hi[a]
            zlo += min(p, q)
            zhi += max(p, q)
        pts = {zlo, zhi}
        for u, al in units:
            z0 = -bias[u] / al
            if zlo < z0 < zhi:
                pts.add(z0)
        outs = [b for b in range(d) if any(W2[u, b] != 0 for u, _ in units)]
        for b in outs:
            vals = [sum((W2[u, b] * max(al * z + bias[u], Fraction(0)) for u, al in units), Fraction(0)) for z in pts]
            olo[b] += min(vals)
            ohi[b] += max(vals)
    return [_rd(v) for v in olo], [_ru(v) for v in ohi]


@dataclass
class Stage:
    """The box entering one sublayer: ``kind`` "attn" (layer's heads) or "mlp" (index ``k``)."""

    layer: int
    kind: str
    k: int
    box: Box


def activation_boxes(hm: HardModel, n_max: int | None) -> list[Stage]:
    """Boxes entering every sublayer, in order (heads of layer ℓ, then its MLPs), plus the final
    one (kind "out").  Valid for hard and soft runs (module docstring)."""
    box = embedding_box(hm, n_max)
    stages = []
    for li, (hs, ms) in enumerate(zip(hm.heads, hm.mlps)):
        stages.append(Stage(li, "attn", 0, box))
        if hs:
            bl, bh = list(box.bos_lo), list(box.bos_hi)
            nl, nh = list(box.lo), list(box.hi)
            hl, hh = box.hull()
            for h in hs:
                VO = h.vo()
                wb = _imul(box.bos_lo, box.bos_hi, VO)
                wa = _imul(hl, hh, VO)
                bl, bh = _iadd((bl, bh), wb)
                nl, nh = _iadd((nl, nh), wa)
            box = Box(bl, bh, nl, nh)
        for mi, m in enumerate(ms):
            stages.append(Stage(li, "mlp", mi, box))
            out = [_iadd((lo, hi), _mlp_box(lo, hi, m)) for lo, hi in ((box.bos_lo, box.bos_hi), (box.lo, box.hi))]
            box = Box(out[0][0], out[0][1], out[1][0], out[1][1])
    stages.append(Stage(len(hm.heads), "out", 0, box))
    return stages


# --------------------------------------------------------------------------------------------
# linear forms over atoms


LinForm = dict  # atom index -> Fraction (nonnegative)


def _lin_add(a: LinForm, b: LinForm, c: Fraction = Fraction(1)) -> LinForm:
    out = dict(a)
    if c == 0:
        return out
    for t, v in b.items():
        out[t] = out.get(t, Fraction(0)) + c * v
    return out


def _lin_expr(f: LinForm, atoms: list[sp.Expr]) -> sp.Expr:
    return sp.Add(*[up(c) * atoms[t] for t, c in sorted(f.items()) if c != 0])


def _max_expr(forms: list[LinForm], atoms: list[sp.Expr]) -> sp.Expr:
    """Max over linear forms, dropping duplicates and forms dominated coefficientwise."""
    uniq: list[LinForm] = []
    for f in forms:
        f = {t: c for t, c in f.items() if c != 0}
        if any(f == g for g in uniq):
            continue
        uniq.append(f)
    keep = []
    for i, f in enumerate(uniq):
        dominated = any(j != i and all(g.get(t, 0) >= c for t, c in f.items()) and g != f for j, g in enumerate(uniq))
        if not dominated:
            keep.append(f)
    exprs = [_lin_expr(f, atoms) for f in keep]
    exprs = [e for e in exprs if e != 0]
    if not exprs:
        return sp.Integer(0)
    return exprs[0] if len(exprs) == 1 else sp.Max(*exprs)


def _strict(mask: str) -> bool:
    return mask in ("strict_past", "strict_future")


# --------------------------------------------------------------------------------------------
# the composed bound


@dataclass
class HeadPremise:
    """The premise of one head: gap ≥ ``gap`` (None: no competitor ever) and argmax sets of size ≤ ``ties``."""

    gap: Fraction | None
    ties: int


@dataclass
class ComposedBound:
    """Per output: the error bound ``expr(n, τ)``; per head: σ and Θ; the model graph (networkx,
    plain attributes, serialisable by ``node_link_data``)."""

    outputs: dict[str, sp.Expr]
    heads: dict[str, dict]
    graph: nx.DiGraph
    atoms: list[sp.Expr] = field(default_factory=list)


def _sigma(h: CanonHead, e: list[LinForm], B: list[Fraction], atoms: list[sp.Expr]) -> tuple[sp.Expr, LinForm, dict]:
    """Score perturbation σ_h (module docstring) as an expression, plus its linear part and quadratic coefficients."""
    dirty = [a for a in range(len(e)) if e[a]]
    if not dirty:
        return sp.Integer(0), {}, {}
    M = h.qk()
    d = M.shape[0]
    lin: LinForm = {}
    for a in dirty:
        u = sum((abs(M[a, b]) * B[b] for b in range(d) if M[a, b] != 0), Fraction(0))
        w = sum((B[b] * abs(M[b, a]) for b in range(d) if M[b, a] != 0), Fraction(0))
        if u + w:
            lin = _lin_add(lin, e[a], u + w)
    quad: dict[tuple[int, int], Fraction] = {}
    for a in dirty:
        for b in dirty:
            m = abs(M[a, b])
            if m == 0:
                continue
            for t, ca in e[a].items():
                for s, cb in e[b].items():
                    key = (min(t, s), max(t, s))
                    quad[key] = quad.get(key, Fraction(0)) + m * ca * cb
    expr = _lin_expr(lin, atoms) + sp.Add(*[up(c) * atoms[t] * atoms[s] for (t, s), c in sorted(quad.items()) if c])
    return expr, lin, quad


def _written(h: CanonHead, e: list[LinForm], D: list[Fraction], atom: int) -> list[LinForm]:
    """Error the head writes into each residual coordinate (module docstring)."""
    VO = h.vo()
    d = VO.shape[0]
    out = []
    dirty = [a for a in range(d) if e[a]]
    for b in range(d):
        f: LinForm = {}
        for a in dirty:
            c = abs(VO[a, b])
            if c:
                f = _lin_add(f, e[a], c)
        if D[b]:
            f[atom] = f.get(atom, Fraction(0)) + D[b]
        out.append(f)
    return out


def _spread(h: CanonHead, box: Box) -> list[Fraction]:
    """``D_b``: width of the hull of the written vectors ``x_j W_V W_O`` over attendable positions."""
    VO = h.vo()
    hl, hh = box.hull()
    lo, hi = _imul(hl, hh, VO)
    return [b - a for a, b in zip(lo, hi)]


def _mlp_groups(m, e: list[LinForm]) -> list[tuple[dict[int, Fraction], dict[int, Fraction]]]:
    """Units of a ReLU MLP grouped by their input direction on the error-carrying coordinates:
    per group, ``(|r_ga| by coordinate a, max(P_gb, N_gb) by output coordinate b)`` (module docstring)."""
    d = len(e)
    dirty = [a for a in range(d) if e[a]]
    if not dirty:
        return []
    W1, W2 = m.W1, m.W2
    groups: dict[tuple, list[tuple[int, Fraction]]] = {}
    for u in range(W1.shape[1]):
        col = [W1[a, u] for a in dirty]
        piv = next((x for x in col if x != 0), None)
        if piv is None:
            continue
        groups.setdefault(tuple(x / piv for x in col), []).append((u, piv))
    out = []
    for key, units in groups.items():
        r = {a: abs(x) for a, x in zip(dirty, key) if x}
        coefs = {}
        for b in range(d):
            P = sum((max(Fraction(0), al * W2[u, b]) for u, al in units), Fraction(0))
            N_ = sum((max(Fraction(0), -al * W2[u, b]) for u, al in units), Fraction(0))
            if max(P, N_):
                coefs[b] = max(P, N_)
        out.append((r, coefs))
    return out


def _mlp_step(m, e: list[LinForm]) -> tuple[list[LinForm], list[tuple]]:
    """Error after a residual ReLU MLP (module docstring); also returns the unit groups."""
    groups = _mlp_groups(m, e)
    out = [dict(f) for f in e]
    for r, coefs in groups:
        dz: LinForm = {}
        for a, ra in r.items():
            dz = _lin_add(dz, e[a], ra)
        for b, c in coefs.items():
            out[b] = _lin_add(out[b], dz, c)
    return out, groups


def _local_mlp(groups, e: list[LinForm], esym: dict) -> dict[str, str]:
    """The MLP's rule per changed coordinate, in the parent's per-coordinate errors ``e_<label>``."""
    rules: dict[int, sp.Expr] = {}
    for r, coefs in groups:
        dz = sp.Add(*[up(ra) * esym[a] for a, ra in sorted(r.items())])
        for b, c in coefs.items():
            rules[b] = rules.get(b, esym[b] if e[b] else sp.Integer(0)) + up(c) * dz
    return {str(esym[b]): str(v) for b, v in sorted(rules.items())}


def _local_head(h: CanonHead, e: list[LinForm], B: list[Fraction], D: list[Fraction], esym: dict,
                th: sp.Symbol) -> tuple[str, dict[str, str]]:
    """The head's rule in the parent's per-coordinate errors: σ (full, with the quadratic terms) and
    the error written into each coordinate (in terms of its mixing atom ``th``)."""
    M = h.qk()
    d = M.shape[0]
    dirty = [a for a in range(d) if e[a]]
    sig = sp.Add(*[up(_coef_lin(h, a, B)) * esym[a] for a in dirty if _coef_lin(h, a, B)])
    sig += sp.Add(*[up(abs(M[a, b])) * esym[a] * esym[b] for a in dirty for b in dirty if M[a, b] != 0])
    VO = h.vo()
    written = {}
    for b in range(d):
        ex = sp.Add(*[up(abs(VO[a, b])) * esym[a] for a in dirty if VO[a, b] != 0]) + (up(D[b]) * th if D[b] else 0)
        if ex != 0:
            written[str(esym[b])] = str(ex)
    return str(sig), written


def composed_bound(hm: HardModel, premises: dict[str, HeadPremise], n_max: int) -> ComposedBound:
    """The per-output error bound of THEORY §6 (module docstring), valid for words of length
    ``n ≤ n_max`` on which every head's premise holds.

    ``premises``: per head name, the gap γ and tie size from :mod:`softhard.constructions.gaps`.
    Returns a :class:`ComposedBound` whose output expressions contain only ``n`` and ``tau``
    (exact rational constants).  Raises ``KeyError`` if a head has no premise.
    """
    stages = activation_boxes(hm, n_max)
    st_iter = iter(stages)
    d = hm.d
    e: list[LinForm] = [dict() for _ in range(d)]
    atoms: list[sp.Expr] = []
    g = nx.DiGraph()
    g.graph.update(kind="model", name=hm.spec.name, n_max=n_max, d=d, labels=list(hm.labels))
    g.add_node("embed", kind="embed", layer=0, error="0")
    prev = "embed"
    heads_info: dict[str, dict] = {}
    esym = {a: sp.Symbol(f"e[{lab}]") for a, lab in enumerate(hm.labels)}
    for li, (hs, ms) in enumerate(zip(hm.heads, hm.mlps)):
        st = next(st_iter)
        box = st.box
        B = box.magnitude()
        new = [dict(f) for f in e]
        add_node = f"L{li}.add"
        for h in hs:
            pr = premises[h.name]
            sig, lin, quad = _sigma(h, e, B, atoms)
            m1 = (n - 1) if _strict(h.mask) else n
            ties = pr.ties >= 2
            if pr.gap is None:
                t = sp.Integer(0)
            else:
                gam = down(pr.gap)
                t = m1 * sp.exp(-(gam - 2 * sig) / tau)
            if sig == 0 or not ties:
                theta = t / (1 + t) if t != 0 else sp.Integer(0)
            else:
                theta = 1 - sp.exp(-2 * sig / tau) / (1 + t)
            idx = len(atoms)
            atoms.append(theta)
            D = _spread(h, box)
            w = _written(h, e, D, idx)
            for b in range(d):
                new[b] = _lin_add(new[b], w[b])
            node = f"head:{h.name}"
            local_sigma, local_written = _local_head(h, e, B, D, esym, sp.Symbol(f"theta[{h.name}]"))
            local = (f"sigma = {local_sigma}; theta[{h.name}] = "
                     + ("t/(1+t)" if not ties or sig == 0 else "1 - exp(-2*sigma/tau)/(1+t)")
                     + (f", t = {m1}*exp(-({down(pr.gap)} - 2*sigma)/tau)" if pr.gap is not None else ", t = 0"))
            head_err = _max_expr(w, atoms)
            g.add_node(node, kind="attn", layer=li, head=h.name, mask=h.mask, rule=h.rule,
                       gap=(None if pr.gap is None else str(down(pr.gap))), ties_max=int(pr.ties),
                       m_minus_1=str(m1), spread_max=str(up(max(D))) if D else "0",
                       tie_break=str(h.tie_break), local=local, written=local_written, sigma=str(sig),
                       theta=str(theta), error=str(head_err))
            g.add_edge(prev, node)
            g.add_edge(node, add_node)
            heads_info[h.name] = {"sigma": sig, "theta": theta, "t": t, "atom": idx, "node": node,
                                  "spread": [str(up(x)) for x in D], "error": head_err}
        e = new
        if hs:
            g.add_node(add_node, kind="residual-add", layer=li,
                       local="e[b] <- e[b] + sum over this layer's heads of their 'written' rule for b",
                       error=str(_max_expr(e, atoms)))
            g.add_edge(prev, add_node)
            prev = add_node
        for mi, m in enumerate(ms):
            next(st_iter)
            e_in = e
            e, groups = _mlp_step(m, e)
            node = f"L{li}.{m.name}"
            g.add_node(node, kind="ffn", layer=li, groups=len(groups), local=_local_mlp(groups, e_in, esym),
                       error=str(_max_expr(e, atoms)))
            g.add_edge(prev, node)
            prev = node
    outputs = {}
    for o in hm.outputs:
        expr = _max_expr([e[c] for c in o.coords], atoms)
        node = f"out:{o.name}"
        g.add_node(node, kind="output", layer=len(hm.heads), type=o.type,
                   coordinates=[hm.labels[c] for c in o.coords], at=o.at, error=str(expr))
        g.add_edge(prev, node)
        outputs[o.name] = expr
    return ComposedBound(outputs=outputs, heads=heads_info, graph=g, atoms=atoms)


def _coef_lin(h: CanonHead, a: int, B: list[Fraction]) -> Fraction:
    M = h.qk()
    d = M.shape[0]
    return (sum((abs(M[a, b]) * B[b] for b in range(d)), Fraction(0))
            + sum((B[b] * abs(M[b, a]) for b in range(d)), Fraction(0)))


# --------------------------------------------------------------------------------------------
# Hahn's sensitivity bound (THEORY §1)


def others_seen(mask: str, change_at: tuple[str, int]) -> sp.Expr:
    """``M``: a lower bound on the number of non-BOS positions other than k that every row i ≠ k
    attending to k also attends to, as an expression in n.  ``change_at``: ("end", c) for
    k = n − c, ("start", c) for k = c."""
    where, c = change_at
    k = (n - c) if where == "end" else sp.Integer(c)
    if mask == "none":
        return n - 1
    if mask == "past":
        return k
    if mask == "strict_past":
        return k - 1
    if mask == "future":
        return n - k + 1
    return n - k  # strict_future


@dataclass
class HahnBound:
    """``sensitivity``: per output, a bound on ``|out(w) − out(w')|`` at any row ≠ k for words w, w'
    differing only at position k, both run soft at temperature τ (an expression in n, τ);
    ``score_range``: R per head; ``applicable``: False with ``reason`` when the model has
    unbounded positional features (Hahn's lemma needs bounded scores)."""

    sensitivity: dict[str, sp.Expr]
    score_range: dict[str, str]
    others: dict[str, str]
    applicable: bool = True
    reason: str = ""
    n_valid: int = 1


def hahn_bound(hm: HardModel, change_at: tuple[str, int] = ("end", 1)) -> HahnBound:
    """Hahn sensitivity bound (module docstring; THEORY §1) for a bounded-PE model, valid for every
    ``n ≥ n_valid`` (the least n at which the changed position exists, is not the last one read
    when counted from the end, and every count M of other positions is ≥ 0).

    Raises nothing for an unbounded model: returns ``applicable=False`` with the reason.
    """
    if not hm.bounded:
        fams = sorted({f.family for f in hm.features if not f.bounded})
        return HahnBound({}, {}, {}, applicable=False,
                         reason=f"unbounded positional families ({', '.join(fams)}): scores grow with n, so "
                                "Hahn's lemma does not apply (regime U)")
    if hm.table is not None:
        return HahnBound({}, {}, {}, applicable=False,
                         reason=f"a positional table is defined only for n <= {hm.n_max}; Hahn's lemma is about all n")
    stages = activation_boxes(hm, None)
    st_iter = iter(stages)
    d = hm.d
    e: list[LinForm] = [dict() for _ in range(d)]
    atoms: list[sp.Expr] = []
    ranges, others = {}, {}
    Ms: list[sp.Expr] = []
    for li, (hs, ms) in enumerate(zip(hm.heads, hm.mlps)):
        box = next(st_iter).box
        B = box.magnitude()
        new = [dict(f) for f in e]
        for h in hs:
            sig, _, _ = _sigma(h, e, B, atoms)
            M = h.qk()
            qlo, qhi = _imul(box.lo, box.hi, M)  # (x_i M) over non-BOS query rows
            width = [b - a for a, b in zip(box.lo, box.hi)]
            R = sum((max(abs(a), abs(b)) * w for a, b, w in zip(qlo, qhi, width)), Fraction(0))
            Ru = up(R)
            Mo = others_seen(h.mask, change_at)
            Ms.append(Mo)
            lam = 1 / (1 + Mo * sp.exp(-Ru / tau))
            phi = (1 - sp.exp(-2 * sig / tau)) + lam if sig != 0 else lam  # TV of the row (module docstring)
            idx = len(atoms)
            atoms.append(phi)
            D = _spread(h, box)
            w = _written(h, e, D, idx)
            for b in range(d):
                new[b] = _lin_add(new[b], w[b])
            ranges[h.name] = str(Ru)
            others[h.name] = str(Mo)
        e = new
        for m in ms:
            next(st_iter)
            e, _ = _mlp_step(m, e)
    sens = {o.name: _max_expr([e[c] for c in o.coords], atoms) for o in hm.outputs}
    where, c = change_at
    n_valid = max(2, c + 1)
    while any(M.subs(n, n_valid) < 0 for M in Ms) or (where == "start" and n_valid < c):
        n_valid += 1
    return HahnBound(sensitivity=sens, score_range=ranges, others=others, n_valid=n_valid)
