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
* **uniform-tieless heads** (every analysed row is uniform — its argmax set is the whole mask —
  or has a unique maximum; the condition of arXiv 2412.09925v1): a row never has both a leak and
  a tie set.  A unique-maximum row has only the leak ``t/(1+t)``; a uniform row has no position
  outside its argmax set, so no leak, and only the distortion ``1 − e^{−2σ/τ}`` (0 when σ_h = 0:
  soft attention over equal scores *is* the AHA average).  So ``Θ_h = max(t/(1+t), 1 − e^{−2σ_h/τ})``
  (``t/(1+t)`` when σ_h = 0), never more than the tied form above (THEORY §6);
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

from dataclasses import dataclass, field
from fractions import Fraction

import networkx as nx
import sympy as sp

from ..constructions.hard_model import CanonHead, HardModel
from ..constructions.parameters import to_fraction
from .core import n, tau
from .intervals import activation_boxes, down, interval_matmul, up
from .propagation import LinForm, lin_add, lin_expr, ln_step, max_expr, mlp_step, spread, written_error


def _strict(mask: str) -> bool:
    return mask in ("strict_past", "strict_future")


# --------------------------------------------------------------------------------------------
# the composed bound


@dataclass
class HeadPremise:
    """The premise of one head: gap ≥ ``gap`` (None: no competitor ever), argmax sets of size ≤
    ``ties``, and ``tieless``: every row uniform or with a unique maximum (module docstring)."""

    gap: Fraction | None
    ties: int
    tieless: bool = False


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
            lin = lin_add(lin, e[a], u + w)
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
    expr = lin_expr(lin, atoms) + sp.Add(*[up(c) * atoms[t] * atoms[s] for (t, s), c in sorted(quad.items()) if c])
    return expr, lin, quad


def _local_mlp(groups, e: list[LinForm], esym: dict) -> dict[str, str]:
    """The MLP's rule per changed coordinate, in the parent's per-coordinate errors ``e_<label>``:
    ``e_b`` (when it carries an error) ``+ Σ_g up(c_gb)·Σ_a up(r_ga)·e_a``, the same exact rationals
    as summing the SymPy terms one by one (a Rational times an Add distributes, like terms
    combine), each coordinate's sum built once (the one-by-one sums were quadratic in the terms;
    ISSUE 16: 3.06 → 0.81 s CPU over 79 calls, benchmarks/README.md; tests/bounds/test_models_bounds.py)."""
    rules: dict[int, dict[int, Fraction]] = {}
    for r, coefs in groups:
        dz = [(a, q) for a, ra in sorted(r.items()) if (q := to_fraction(up(ra))) != 0]
        for b, c in coefs.items():
            rule = rules.get(b)
            if rule is None:
                rule = rules[b] = {b: Fraction(1)} if e[b] else {}
            k = to_fraction(up(c))
            for a, ra in dz:
                rule[a] = rule.get(a, Fraction(0)) + k * ra
    return {str(esym[b]): str(sp.Add(*[sp.Rational(v.numerator, v.denominator) * esym[a]
                                       for a, v in sorted(rule.items()) if v != 0]))
            for b, rule in sorted(rules.items())}


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


def composed_bound(hm: HardModel, premises: dict[str, HeadPremise], n_max: int,
                   ln_premises: dict[str, Fraction | None] | None = None) -> ComposedBound:
    """The per-output error bound of THEORY §6 (module docstring), valid for words of length
    ``n ≤ n_max`` on which every head's premise holds.

    ``premises``: per head name, the gap γ and tie size from :mod:`softhard.constructions.gaps`;
    ``ln_premises``: per layer norm, the smallest variance of its input over the analysed inputs
    (the premise of its local Lipschitz bound, :func:`~softhard.bounds.propagation.ln_step`; a
    missing entry uses the global constant 1/√eps).
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
    ln_premises = ln_premises or {}

    def norms(li: int, point: str) -> None:
        nonlocal e, prev
        for ln in hm.lns_at(li, point):
            next(st_iter)
            e, info = ln_step(ln, e, ln_premises.get(ln.name), atoms)
            node = f"ln:{ln.name}"
            g.add_node(node, kind="layernorm", layer=li, sublayer=ln.sublayer, position=ln.position,
                       local=info.get("local", "exact input: no error"), c1=info["c1"], c2=info["c2"],
                       rho=info["rho"], variance_min=info["variance_min"], phi=info["phi"],
                       error=str(max_expr([e[t] for t in ln.target], atoms)))
            g.add_edge(prev, node)
            prev = node

    for li, (hs, ms) in enumerate(zip(hm.heads, hm.mlps)):
        norms(li, "before_heads")
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
            leak = t / (1 + t) if t != 0 else sp.Integer(0)
            if sig == 0 or not ties:
                form, theta = "t/(1+t)", leak
            elif pr.tieless:  # a row is uniform (distortion only) or has a unique maximum (leak only)
                form = "max(t/(1+t), 1 - exp(-2*sigma/tau)) (uniform-tieless)"
                theta = sp.Max(leak, 1 - sp.exp(-2 * sig / tau)) if t != 0 else 1 - sp.exp(-2 * sig / tau)
            else:
                form, theta = "1 - exp(-2*sigma/tau)/(1+t)", 1 - sp.exp(-2 * sig / tau) / (1 + t)
            idx = len(atoms)
            atoms.append(theta)
            D = spread(h, box)
            w = written_error(h, e, D, idx)
            for b in range(d):
                new[b] = lin_add(new[b], w[b])
            node = f"head:{h.name}"
            local_sigma, local_written = _local_head(h, e, B, D, esym, sp.Symbol(f"theta[{h.name}]"))
            local = (f"sigma = {local_sigma}; theta[{h.name}] = " + form
                     + (f", t = {m1}*exp(-({down(pr.gap)} - 2*sigma)/tau)" if pr.gap is not None else ", t = 0"))
            head_err = max_expr(w, atoms)
            g.add_node(node, kind="attn", layer=li, head=h.name, mask=h.mask, rule=h.rule,
                       gap=(None if pr.gap is None else str(down(pr.gap))), ties_max=int(pr.ties),
                       tieless=bool(pr.tieless),
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
                       error=str(max_expr(e, atoms)))
            g.add_edge(prev, add_node)
            prev = add_node
        norms(li, "after_heads")
        for mi, m in enumerate(ms):
            next(st_iter)
            e_in = e
            e, groups = mlp_step(m, e)
            node = f"L{li}.{m.name}"
            g.add_node(node, kind="ffn", layer=li, groups=len(groups), local=_local_mlp(groups, e_in, esym),
                       error=str(max_expr(e, atoms)))
            g.add_edge(prev, node)
            prev = node
        norms(li, "after_mlps")
    outputs = {}
    for o in hm.outputs:
        expr = max_expr([e[c] for c in o.coords], atoms)
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
    if hm.has_layernorm:
        names = ", ".join(ln.name for lns in hm.lns for ln in lns)
        return HahnBound({}, {}, {}, applicable=False,
                         reason=f"the model has layer norms ({names}): Hahn's lemma needs every layer to be Lipschitz "
                                "with a constant independent of n, and a layer norm's constant 1/sqrt(var + eps) is "
                                "not: dividing by a variance that shrinks with n amplifies the O(1/n) change one position makes "
                                "back to O(1) (Chiang & Cholak 2022), so the lemma does not cover this model")
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
            qlo, qhi = interval_matmul(box.lo, box.hi, M)  # (x_i M) over non-BOS query rows
            width = [b - a for a, b in zip(box.lo, box.hi)]
            R = sum((max(abs(a), abs(b)) * w for a, b, w in zip(qlo, qhi, width)), Fraction(0))
            Ru = up(R)
            Mo = others_seen(h.mask, change_at)
            Ms.append(Mo)
            lam = 1 / (1 + Mo * sp.exp(-Ru / tau))
            phi = (1 - sp.exp(-2 * sig / tau)) + lam if sig != 0 else lam  # TV of the row (module docstring)
            idx = len(atoms)
            atoms.append(phi)
            D = spread(h, box)
            w = written_error(h, e, D, idx)
            for b in range(d):
                new[b] = lin_add(new[b], w[b])
            ranges[h.name] = str(Ru)
            others[h.name] = str(Mo)
        e = new
        for m in ms:
            next(st_iter)
            e, _ = mlp_step(m, e)
    sens = {o.name: max_expr([e[c] for c in o.coords], atoms) for o in hm.outputs}
    where, c = change_at
    n_valid = max(2, c + 1)
    while any(M.subs(n, n_valid) < 0 for M in Ms) or (where == "start" and n_valid < c):
        n_valid += 1
    return HahnBound(sensitivity=sens, score_range=ranges, others=others, n_valid=n_valid)
