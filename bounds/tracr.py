"""Bounds for compiled (Tracr) transformers: logit tables, structured leaks, MLP discretisation
margins, and their composition along the model graph (THEORY §2, §3, §6).

The inverse temperature ``1/τ`` is Tracr's *effective coldness* λ (scores are unit scores; see
:mod:`softhard.constructions.tracr`).  Everything here is exact (Fractions, SymPy Rationals) and
the expressions contain only the symbols ``n`` and ``tau``.

**Logit table** (per head): the unit score ``s(q, k) = scale·(q W_Q)(k W_K)ᵀ`` for every query
state q and key state k (the residual restricted to the coordinates ``W_Q``/``W_K`` read) that
occurs, plus the BOS key.  From the table and the pairs (query state, own key state) that occur
in one row — every row attends to itself — the *table-level premise* bounds, for any input whose
rows have these states, BOS's gap as a competitor ``g_B``, the other competitors' gap ``g_N`` and
the argmax size ``a``, separately for rows where BOS is a competitor and rows where BOS is in the
argmax.  The *data-level premise* (:mod:`softhard.constructions.tracr_gaps`, exhaustive over the
lengths ≤ N) has the same shape.

**Structured leak** (THEORY §2 gap lemma, "bound S by summing"): with ``S`` the competitors'
weight relative to one maximal key, the exact leak is ``δ = S/(a+S)``.  In a row where BOS is a
competitor, ``S ≤ e^{−g_B λ} + (n − a)·e^{−g_N λ}`` (BOS is one key, the other competitors are the
``n − a`` non-BOS keys outside A); where BOS is in A, ``S ≤ (n + 1 − a)·e^{−g_N λ}``.  ``δ`` is
increasing in S and decreasing in a, so ``Θ = max_case t/(a_min + t)`` bounds it.  A head's error
in written coordinate b is ``δ·|v̄_rest − v̄_A|_b ≤ Θ·D_b`` (D_b the spread of the written values)
plus ``Σ_a |(W_V W_O)_ab| e_a`` for error already in the values.  Every exponent is ``−g·λ`` with
g > 0, so the bound is *decreasing in λ* — proving it at a rational ``λ⁻ ≤ λ`` proves it at λ.

**MLP discretisation** (THEORY §3 clean-up, generalised): a ReLU MLP whose error-carrying inputs
enter every hidden unit along one direction ``z = r·x`` is piecewise linear in z with kinks where a
unit's pre-activation is 0.  For each hard *context* (the vector ``P`` of hard pre-activations at a
row) the MLP is affine in z for ``|Δz| ≤ r(P) = min_{u: P_u ≠ 0} |P_u|/|α_u|`` (the distance to
the nearest kink; α_u the unit's weight along r): if the input error ``e_z ≤ r_min = min_P r(P)``,
the output moves by at most ``s_b·e_z`` in coordinate b with ``s_b = max_P |Σ_{P_u>0} α_u W2_ub
+ Σ_{P_u=0, σα_u>0} α_u W2_ub|`` (max over σ = ±1) — 0 where every hard value sits on a flat
step: the MLP then *absorbs* the attention error.  ``e_z ≤ r_min`` is the MLP's *resolution
condition*, a claim of its own.  An MLP reading several independent error directions falls back to
the Lipschitz rule of :mod:`softhard.bounds.composed`.

**Composition** (THEORY §6, per coordinate as in :mod:`softhard.bounds.composed`): errors are
nonnegative rational combinations of the heads' atoms Θ; residual adds sum; the output error is
the max over its coordinates.  A head whose query or key reads an error-carrying coordinate
(score perturbation σ > 0) is not supported here (:class:`~softhard.constructions.tracr.UnsupportedModel`).

Extrapolation beyond the analysed lengths is in :mod:`softhard.bounds.tracr_extrapolation`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import networkx as nx
import sympy as sp

from ..constructions.hard_model import HardModel
from ..constructions.tracr import UnsupportedModel
from ..constructions.tracr_gaps import CaseStats, HeadStats
from .core import n, tau
from .intervals import activation_boxes, down, up
from .propagation import LinForm, lin_add, lin_expr, max_expr, mlp_step, spread, written_error
from .tracr_region import tolerance_region


def fs(x: Fraction | None) -> str | None:
    """Exact text of a Fraction (``p/q`` or ``p``); None stays None."""
    if x is None:
        return None
    return f"{x.numerator}/{x.denominator}" if x.denominator != 1 else str(x.numerator)


# --------------------------------------------------------------------------------------------
# logit tables


def describe_state(labels: list[str], coords: list[int], state: tuple) -> str:
    """Readable state: ``indices=3, one=1`` (categorical blocks by their hot value)."""
    parts = []
    cat: dict[str, list[str]] = {}
    for a, v in zip(coords, state):
        lab = labels[a]
        if ":" in lab:
            name, val = lab.split(":", 1)
            cat.setdefault(name, [])
            if v != 0:
                cat[name].append(val if v == 1 else f"{val}*{fs(v)}")
        else:
            parts.append(f"{lab}={fs(v)}")
    out = [f"{k}={'|'.join(v) if v else '-'}" for k, v in cat.items()]
    return ", ".join(out + parts) or "(none)"


@dataclass
class LogitTable:
    """One head's table: ``rows`` (query states, non-BOS), ``cols`` (key states, non-BOS), ``bos``
    (the BOS key state), ``scores[i][j]`` = s(row i, col j) and ``bos_scores[i]`` = s(row i, BOS)
    (exact, unit scores); ``bos_row`` the BOS query's scores (cols, then BOS); ``self_pairs``
    (row index, col index) occurring in one row; ``sees``: per row the columns it meets under the
    mask; ``levels``; ``pattern``; ``premise`` (the table-level (BOS competitor, BOS in argmax)
    :class:`CaseStats`)."""

    head: str
    rows: list[tuple]
    cols: list[tuple]
    bos: tuple
    scores: list[list[Fraction]]
    bos_scores: list[Fraction]
    bos_row: list[Fraction]
    self_pairs: list[tuple[int, int]]
    sees: dict[int, list[int]]
    levels: list[Fraction]
    pattern: str
    premise: tuple[CaseStats, CaseStats]
    row_names: list[str] = field(default_factory=list)
    col_names: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"head": self.head, "pattern": self.pattern, "levels": [fs(v) for v in self.levels],
                "query_states": self.row_names, "key_states": self.col_names + ["BOS"],
                "scores": [[fs(v) for v in r] + [fs(b)] for r, b in zip(self.scores, self.bos_scores)],
                "bos_query_scores": [fs(v) for v in self.bos_row],
                "self_pairs": [[self.row_names[i], self.col_names[j]] for i, j in self.self_pairs],
                "meets": {self.row_names[i]: len(js) for i, js in sorted(self.sees.items())},
                "premise": {"bos_competitor": self.premise[0].to_json(), "bos_in_argmax": self.premise[1].to_json()}}


def _score(h, qc, kc, q, k, pc: dict) -> Fraction:
    for key, W, cs, st in (("q", h.W_Q, qc, q), ("k", h.W_K, kc, k)):  # projections memoised per table (exact)
        if (key, st) not in pc:
            pc[key, st] = [sum((st[t] * W[a, c] for t, a in enumerate(cs) if W[a, c] != 0), Fraction(0))
                           for c in range(W.shape[1])]
    return h.scale * sum((x * y for x, y in zip(pc["q", q], pc["k", k])), Fraction(0))


def logit_table(hm: HardModel, st: HeadStats) -> LogitTable:
    """The exact logit table of one head over the states seen in ``st`` (module docstring), with its
    table-level premise and pattern ("aggregate": BOS scored below every query's own key, and every
    level is 0, the BOS score or a selected score; "selector-width": BOS tied with the top of every
    row that contains the own key; "other")."""
    h = next(x for x in hm.all_heads() if x.name == st.name)
    rows = sorted(st.q_states)
    cols = sorted(st.k_states)
    qc, kc = st.q_coords, st.k_coords
    pc: dict = {}
    scores = [[_score(h, qc, kc, q, k, pc) for k in cols] for q in rows]
    bos_scores = [_score(h, qc, kc, q, st.bos_k, pc) for q in rows]
    bos_row = [_score(h, qc, kc, st.bos_q, k, pc) for k in cols] + [_score(h, qc, kc, st.bos_q, st.bos_k, pc)]
    pairs = sorted({(rows.index(q), cols.index(k)) for q, k in st.self_pairs})
    sees = {i: sorted({cols.index(k) for q, k in st.att_pairs if q == rows[i]}) for i in range(len(rows))}
    levels = sorted({v for r in scores for v in r} | set(bos_scores))
    cb, ca = CaseStats(), CaseStats()
    for i, j in pairs:
        V = [scores[i][k] for k in sees[i]]  # the key states this query state meets (the mask)
        b = bos_scores[i]
        own = h.mask in ("none", "past", "future")  # the row attends to its own key
        vs = scores[i][j]
        f = max(b, vs) if own else b
        # BOS a competitor: the top is a non-BOS score >= the floor and > b
        tops = [v for v in V if v >= f and v > b]
        if tops:
            cb.rows += 1
            g = min(tops) - b
            cb.g_bos = g if cb.g_bos is None else min(cb.g_bos, g)
            for v2 in V:
                ups = [v for v in tops if v > v2]
                if ups:
                    g2 = min(ups) - v2
                    cb.g_rest = g2 if cb.g_rest is None else min(cb.g_rest, g2)
            cb.a_min = 1
        # BOS in the argmax: only if no present key needs to exceed b (the own key is <= b)
        if b >= f:
            ca.rows += 1
            below = [b - v for v in V if v < b]
            if below:
                g2 = min(below)
                ca.g_rest = g2 if ca.g_rest is None else min(ca.g_rest, g2)
            a = 2 if own and vs == b else 1
            ca.a_min = a if ca.a_min is None else min(ca.a_min, a)
    pattern = "other"
    if pairs and ca.rows == 0 and all(bos_scores[i] < scores[i][j] for i, j in pairs):
        sel = {v for r in scores for v in r} - {Fraction(0)}
        if len(sel) == 1 and all(b == next(iter(sel)) / 2 for b in bos_scores):
            pattern = "aggregate"
    elif pairs and cb.rows == 0 and all(bos_scores[i] == max(scores[i]) for i, _ in pairs):
        pattern = "selector-width"
    t = LogitTable(head=st.name, rows=rows, cols=cols, bos=st.bos_k, scores=scores, bos_scores=bos_scores,
                   bos_row=bos_row, self_pairs=pairs, sees=sees, levels=levels, pattern=pattern, premise=(cb, ca))
    t.row_names = [describe_state(hm.labels, qc, q) for q in rows]
    t.col_names = [describe_state(hm.labels, kc, k) for k in cols]
    return t


def bos_query_ok(t: LogitTable) -> bool:
    """True when the BOS query's hard argmax over every key state is BOS alone (so Tracr's hard BOS
    row equals the format's convention)."""
    return all(v < t.bos_row[-1] for v in t.bos_row[:-1])


# --------------------------------------------------------------------------------------------
# the structured leak


def _count(off: int, a: int) -> sp.Expr:
    """``n + off − a`` competitors, clamped at 0 only where it can be negative for some n ≥ 1."""
    return n + off - a if 1 + off - a >= 0 else sp.Max(n + off - a, 0)


def leak_parts(premise: tuple[CaseStats, CaseStats]) -> tuple[sp.Expr | None, sp.Expr | None]:
    """The two cases of :func:`leak_expr`: the leak bound over the rows where BOS is a competitor
    and over the rows where BOS is in the argmax (None: no such row with a competitor)."""
    cb, ca = premise
    p0 = p1 = None
    if cb.rows and cb.a_min is not None:
        a = cb.a_min
        t = sp.exp(-down(cb.g_bos) / tau)
        if cb.g_rest is not None:
            t = t + _count(0, a) * sp.exp(-down(cb.g_rest) / tau)
        p0 = t / (a + t)
    if ca.rows and ca.a_min is not None and ca.g_rest is not None:
        a = ca.a_min
        t = _count(1, a) * sp.exp(-down(ca.g_rest) / tau)
        p1 = t / (a + t)
    return p0, p1


def leak_expr(premise: tuple[CaseStats, CaseStats]) -> sp.Expr:
    """``Θ(n, τ)``: the structured leak bound of one head from its (BOS competitor, BOS in argmax)
    premise (module docstring).  0 when no row ever has a competitor.  Gaps are rounded *down* to
    12 significant digits (:func:`softhard.bounds.intervals.down`), keeping the bound rigorous."""
    parts = [x for x in leak_parts(premise) if x is not None]
    if not parts:
        return sp.Integer(0)
    return parts[0] if len(parts) == 1 else sp.Max(*parts)


def generic_leak_expr(premise: tuple[CaseStats, CaseStats]) -> sp.Expr:
    """The generic gap lemma for comparison (THEORY §2, a = 1): ``t/(1+t)``, ``t = n·e^{−γλ}`` with
    γ the smallest gap of either kind (what :mod:`softhard.bounds.composed` uses)."""
    gs = [g for c in premise for g in (c.g_bos, c.g_rest) if g is not None and c.rows]
    if not gs:
        return sp.Integer(0)
    t = n * sp.exp(-down(min(gs)) / tau)
    return t / (1 + t)


# --------------------------------------------------------------------------------------------
# MLP discretisation


@dataclass
class Discretisation:
    """The discretisation analysis of one MLP for its error direction (module docstring).

    ``direction``: coordinate → coefficient of ``z = r·x``; ``units``: (unit, α_u); ``contexts``:
    per hard context: ``z`` (the hard value of z), ``margin`` r(P), ``slope`` per output
    coordinate, the unit nearest a kink; ``r_min`` (None: no kink near any context, every
    error tolerated), ``slopes`` (coordinate → s_b), ``lipschitz`` (coordinate → the Lipschitz
    coefficient of :mod:`composed`, for comparison)."""

    mlp: str
    direction: dict[int, Fraction]
    units: list[tuple[int, Fraction]]
    contexts: list[dict]
    r_min: Fraction | None
    slopes: dict[int, Fraction]
    lipschitz: dict[int, Fraction]
    witness: dict | None = None

    def to_json(self, labels: list[str]) -> dict:
        return {"mlp": self.mlp, "direction": {labels[a]: fs(c) for a, c in self.direction.items()},
                "units": len(self.units), "r_min": fs(self.r_min),
                "r_min_decimal": None if self.r_min is None else float(self.r_min),
                "slopes": {labels[b]: fs(s) for b, s in self.slopes.items()},
                "lipschitz": {labels[b]: fs(s) for b, s in self.lipschitz.items()},
                "attained_by": self.witness,
                "contexts": [{"z": fs(c["z"]), "z_decimal": float(c["z"]), "margin": fs(c["margin"]),
                              "margin_decimal": None if c["margin"] is None else float(c["margin"]),
                              "slope": {labels[b]: fs(s) for b, s in c["slope"].items() if s},
                              "rows": c.get("rows"), "witness": c.get("witness")} for c in self.contexts]}


def _group(m, dirty: list[int]):
    """Units of MLP ``m`` reading the dirty coordinates, grouped by direction (pivot-normalised)."""
    groups: dict[tuple, list[tuple[int, Fraction]]] = {}
    for u in range(m.W1.shape[1]):
        col = [m.W1[a, u] for a in dirty]
        piv = next((x for x in col if x != 0), None)
        if piv is None:
            continue
        groups.setdefault(tuple(x / piv for x in col), []).append((u, piv))
    return groups


def discretisation(m, dirty: list[int], contexts: dict[tuple, list], d: int,
                   z_of: dict[tuple, Fraction] | None = None) -> Discretisation | None:
    """The discretisation analysis of MLP ``m`` (module docstring) when its units read the dirty
    coordinates along one direction; None when they read several directions (Lipschitz fallback).

    ``contexts``: hard pre-activation vector (one Fraction per hidden unit) → [rows, (word, row)];
    ``z_of``: context → the hard value of z (computed from the context when omitted: ``(P_u −
    c_u)/α_u`` is not available, so z is then reported relative to the first unit's kink).
    """
    groups = _group(m, dirty)
    if len(groups) != 1:
        return None
    (key, units), = groups.items()
    direction = {a: c for a, c in zip(dirty, key) if c != 0}
    outs = sorted({b for u, _ in units for b in range(d) if m.W2[u, b] != 0})
    rows = []
    r_min, slopes, wit = None, {b: Fraction(0) for b in outs}, None
    for P, info in contexts.items():
        r = None
        near = None
        for u, al in units:
            if P[u] != 0:
                x = abs(P[u]) / abs(al)
                if r is None or x < r:
                    r, near = x, u
        slope = {}
        for b in outs:
            act = sum((al * m.W2[u, b] for u, al in units if P[u] > 0), Fraction(0))
            best = Fraction(0)
            for sg in (1, -1):
                kink = sum((al * m.W2[u, b] for u, al in units if P[u] == 0 and sg * al > 0), Fraction(0))
                best = max(best, abs(act + kink))
            slope[b] = best
            slopes[b] = max(slopes[b], best)
        z = z_of.get(P) if z_of else None
        rows.append({"z": z if z is not None else Fraction(0), "pre": P, "margin": r, "slope": slope, "near_unit": near,
                     "rows": info[0] if info else None,
                     "witness": {"word": list(info[1][0]), "row": info[1][1]} if info and info[1] else None})
        if r is not None and (r_min is None or r < r_min):
            r_min = r
            wit = rows[-1]["witness"]
    rows.sort(key=lambda c: c["z"])
    lip = {}
    for b in outs:
        P_ = sum((max(Fraction(0), al * m.W2[u, b]) for u, al in units), Fraction(0))
        N_ = sum((max(Fraction(0), -al * m.W2[u, b]) for u, al in units), Fraction(0))
        lip[b] = max(P_, N_)
    return Discretisation(mlp=m.name, direction=direction, units=units, contexts=rows, r_min=r_min,
                          slopes={b: s for b, s in slopes.items()}, lipschitz=lip, witness=wit)


# --------------------------------------------------------------------------------------------
# composition


@dataclass
class TracrBound:
    """Result of :func:`compose`: per output its error expression (n, τ); ``conditions``: per
    discretising MLP ``(e_z expression, r_min)`` — the resolution condition ``e_z ≤ r_min``;
    ``heads``: per head its Θ expression and spreads; ``mlps``: per MLP its rule; ``graph``."""

    outputs: dict[str, sp.Expr]
    conditions: dict[str, tuple[sp.Expr, Fraction]]
    heads: dict[str, dict]
    mlps: dict[str, dict]
    graph: nx.DiGraph
    monotone_in_inv_tau: bool = True


def _spread_at(vals: tuple, out: tuple) -> Fraction:
    """max |v − w| over v in the competitors' hull ``vals``, w in the head's output range ``out``."""
    return max(vals[1] - out[0], out[1] - vals[0], Fraction(0))


def _per_context(disc: Discretisation, dz: dict, ctx: dict | None, atom_head: dict[int, str],
                 nonlocal_atoms: set[int], e: list, direct: set[int]) -> list[tuple[dict, sp.Expr]] | None:
    """Per hard context of a discretising MLP: ``(context, e_z(P))`` with ``e_z(P)`` the input error
    along z from each head's leak bound over the rows of that context (:func:`compose`); None when
    not applicable (no per-context premises, or an atom that is not a head's leak at the same row).

    When every coordinate of the direction carries only heads' direct writes (no MLP on the way,
    ``direct``) and ``ctx`` has the heads' outputs and value hulls, each head's error in coordinate
    a is bounded per context and case by ``leak_case · max |v_a − w_a|`` — v over the competitors'
    values (non-BOS keys; with BOS where BOS is a competitor), w over the head's hard output at the
    rows of the context: the leak moves the output from the argmax mean towards the competitors'
    mean, no further (THEORY §2)."""
    heads_at = (ctx or {}).get("heads")
    if not heads_at or not dz or any(t not in atom_head or t in nonlocal_atoms for t in dz):
        return None
    outs, hulls = ctx.get("outputs"), ctx.get("values")
    refine = outs is not None and hulls is not None and all(a in direct for a in disc.direction)
    out = []
    for c in disc.contexts:
        hc = heads_at.get(c["pre"])
        if hc is None or any(atom_head[t] not in hc for t in dz):
            return None
        if refine and all(atom_head[t] in outs.get(c["pre"], {}) for a in disc.direction for t in e[a]):
            terms = []
            for a, ca in sorted(disc.direction.items()):
                for t in sorted(e[a]):
                    hn = atom_head[t]
                    w = outs[c["pre"]][hn].get(a)
                    nb, bb = hulls[hn]
                    if w is None or a not in nb:
                        continue  # the head does not write a (its value there is 0 everywhere)
                    both = (min(nb[a][0], bb.get(a, nb[a])[0]), max(nb[a][1], bb.get(a, nb[a])[1]))
                    p0, p1 = leak_parts(hc[hn])
                    parts = [up(abs(ca) * _spread_at(hull, w)) * q for q, hull in ((p0, both), (p1, nb[a])) if q is not None]
                    if parts:
                        terms.append(sp.Max(*parts))
            out.append((c, sp.Add(*terms)))
        else:
            out.append((c, sp.Add(*[up(coef) * leak_expr(hc[atom_head[t]]) for t, coef in sorted(dz.items()) if coef])))
    return out


def _region(hm: HardModel, li: int, m, e: list, disc: Discretisation, per_ctx: list,
            tolerance: dict[str, Fraction] | None):
    """``(output coordinates, [(rho, L)] per context, rho_min)`` when MLP ``m`` of layer ``li`` can be
    bounded by its tolerance region (:func:`compose`), else None."""
    if not tolerance or len(hm.outputs) != 1:
        return None
    o = hm.outputs[0]
    eps = tolerance.get(o.name)
    written = {b for u in range(m.W2.shape[0]) for b in range(hm.d) if m.W2[u, b] != 0}
    oc = [b for b in o.coords if b in written]
    if eps is None or eps <= 0 or not oc or any(e[b] for b in o.coords):
        return None
    later_heads = [h for hs in hm.heads[li + 1:] for h in hs]
    same = hm.mlps[li]
    later_mlps = list(same[[y.name for y in same].index(m.name) + 1:]) + [x for ms in hm.mlps[li + 1:] for x in ms]
    for b in written:
        if any(any(x != 0 for x in W[b]) for h in later_heads for W in (h.W_Q, h.W_K, h.W_V)) or \
                any(any(x != 0 for x in x_.W1[b]) for x_ in later_mlps):
            return None
    for b in o.coords:
        if any(any(h.vo()[a, b] != 0 for a in range(hm.d)) for h in later_heads) or \
                any(any(x_.W2[u, b] != 0 for u in range(x_.W2.shape[0])) for x_ in later_mlps):
            return None
    rows = [tolerance_region(m.W2, disc.units, c["pre"], oc, eps) for c, _ in per_ctx]
    finite = [rho for rho, _ in rows if rho is not None]
    return set(oc), rows, (min(finite) if finite else None)


def compose(hm: HardModel, premises: dict[str, tuple[CaseStats, CaseStats]],
            mlp_contexts: dict[str, dict], n_max: int, *, z_values: dict[str, dict] | None = None,
            label: str = "", mlp_heads: dict[str, dict] | None = None,
            tolerance: dict[str, Fraction] | None = None) -> TracrBound:
    """Compose the per-head structured leaks and the MLP rules along the model (module docstring).

    ``premises``: head → (BOS-competitor, BOS-in-argmax) :class:`CaseStats`; ``mlp_contexts``:
    MLP → its hard contexts (from :class:`~softhard.constructions.tracr_gaps.MLPStats` or an
    extrapolation); ``n_max``: the length the activation boxes (spreads) are computed for;
    ``mlp_heads``: MLP → ``{"heads": context → head → the head's premise over the rows *in that
    context* (:attr:`~softhard.constructions.tracr_gaps.MLPStats.heads`), "outputs": context →
    head → coordinate → (min, max) of its hard output there, "values": head → (non-BOS, BOS) value
    hulls}`` (the last two optional).  With it, a discretising MLP
    whose input error is made of heads' leaks at the same row (no head on the way read an
    error-carrying value) is bounded per context: the leak and the margin that occur together —
    the resolution condition is ``max_P e_z(P)·r_min/r(P) ≤ r_min`` (⇔ ``e_z(P) ≤ r(P)`` for every
    context P) and the MLP writes ``max_P s_b(P)·e_z(P)`` into coordinate b, where ``e_z(P)`` uses
    each head's leak bound over the rows of context P.  Otherwise (or without ``mlp_heads``) the
    worst leak meets the smallest margin and the steepest slope.  ``tolerance``: output → ε; with
    it, such an MLP whose written coordinates nothing after it reads and whose output coordinates
    nothing else writes is bounded by its tolerance region
    (:func:`softhard.bounds.tracr_region.tolerance_region`): per context the largest input error
    ρ(P) that keeps every output coordinate within ε and the ratio L(P) ≤ … it attains — the output
    error is ``max_P L(P)·e_z(P)`` under ``max_P e_z(P)·ρ_min/ρ(P) ≤ ρ_min``, the other written
    coordinates take the Lipschitz rule.
    Raises :class:`UnsupportedModel` when a head's query or key reads an error-carrying coordinate.
    """
    stages = activation_boxes(hm, min(n_max, hm.n_max) if hm.n_max is not None else n_max)
    st_iter = iter(stages)
    d = hm.d
    e: list[LinForm] = [dict() for _ in range(d)]
    atoms: list[sp.Expr] = []
    g = nx.DiGraph()
    g.graph.update(kind="tracr", name=hm.spec.name, premise=label, d=d, labels=list(hm.labels))
    g.add_node("embed", kind="embed", layer=0, error="0")
    prev = "embed"
    heads: dict[str, dict] = {}
    mlps: dict[str, dict] = {}
    conditions: dict[str, tuple[sp.Expr, Fraction]] = {}
    atom_head: dict[int, str] = {}  # atom -> the head whose leak it is
    nonlocal_atoms: set[int] = set()  # atoms that reached a row through a head's values (other rows' errors)
    mlp_touched: set[int] = set()  # coordinates whose error an MLP transformed
    for li, (hs, ms) in enumerate(zip(hm.heads, hm.mlps)):
        box = next(st_iter).box
        new = [dict(f) for f in e]
        add_node = f"L{li}.add"
        for h in hs:
            dirty_qk = [hm.labels[a] for a in range(d) if e[a] and (any(x != 0 for x in h.W_Q[a])
                                                                     or any(x != 0 for x in h.W_K[a]))]
            if dirty_qk:
                raise UnsupportedModel(f"head {h.name} reads coordinate(s) {', '.join(dirty_qk)} that carry soft error "
                                       "into its query or key (score perturbation sigma > 0): not supported by the "
                                       "Tracr analysis yet (use certify --model for the generic bound)",
                                       part=f"head {h.name}")
            theta = leak_expr(premises[h.name])
            idx = len(atoms)
            atoms.append(theta)
            atom_head[idx] = h.name
            VOh = h.vo()
            for a in range(d):
                if e[a] and any(x != 0 for x in VOh[a]):
                    nonlocal_atoms.update(e[a])
            D = spread(h, box)
            w = written_error(h, e, D, idx)
            for b in range(d):
                new[b] = lin_add(new[b], w[b])
            node = f"head:{h.name}"
            err = max_expr(w, atoms)
            cb, ca = premises[h.name]
            g.add_node(node, kind="attn", layer=li, head=h.name, mask=h.mask, rule=h.rule,
                       bos_competitor=str(cb.to_json()), bos_in_argmax=str(ca.to_json()),
                       spread_max=str(up(max(D))) if D else "0", theta=str(theta), error=str(err))
            g.add_edge(prev, node)
            g.add_edge(node, add_node)
            heads[h.name] = {"theta": theta, "atom": idx, "node": node, "error": err,
                             "spread": {hm.labels[b]: fs(x) for b, x in enumerate(D) if x}}
        e = new
        if hs:
            g.add_node(add_node, kind="residual-add", layer=li, error=str(max_expr(e, atoms)))
            g.add_edge(prev, add_node)
            prev = add_node
        for m in ms:
            next(st_iter)
            dirty = [a for a in range(d) if e[a] and any(x != 0 for x in m.W1[a])]
            node = f"L{li}.{m.name}"
            if not dirty:
                mlps[m.name] = {"rule": "exact (reads no error-carrying coordinate)", "node": node}
                g.add_node(node, kind="ffn", layer=li, rule="exact", error=str(max_expr(e, atoms)))
                g.add_edge(prev, node)
                prev = node
                continue
            ctx = mlp_contexts.get(m.name)
            disc = discretisation(m, dirty, ctx, d, (z_values or {}).get(m.name)) if ctx is not None else None
            if disc is not None:
                dz: LinForm = {}
                for a, c in disc.direction.items():
                    dz = lin_add(dz, e[a], abs(c))
                out = [dict(f) for f in e]
                per_ctx = _per_context(disc, dz, (mlp_heads or {}).get(m.name), atom_head, nonlocal_atoms, e,
                                       {a for a in range(d) if a not in mlp_touched})
                if per_ctx is None:
                    for b, s in disc.slopes.items():
                        if s:
                            out[b] = lin_add(out[b], dz, s)
                    cond = lin_expr(dz, atoms)
                region = None if per_ctx is None else _region(hm, li, m, e, disc, per_ctx, tolerance)
                if region is not None:
                    rcoords, rows, r_star = region
                    terms = [up(L) * ez for (c, ez), (rho, L) in zip(per_ctx, rows) if L]
                    if terms:
                        atoms.append(sp.Max(*terms))
                    for b in disc.slopes:
                        if b in rcoords:
                            if terms:
                                out[b] = lin_add(out[b], {len(atoms) - 1: Fraction(1)})
                        elif disc.lipschitz.get(b):
                            out[b] = lin_add(out[b], dz, disc.lipschitz[b])
                    cond = None if r_star is None else sp.Max(*[ez * up(r_star / rho) for (c, ez), (rho, L)
                                                                 in zip(per_ctx, rows) if rho is not None])
                    if cond is not None:
                        conditions[m.name] = (cond, r_star)
                    mlps[m.name] = {"rule": "tolerance region", "node": node, "analysis": disc, "dz": cond,
                                    "region": [{"z": c["z"], "rho": rho, "L": L} for (c, _), (rho, L) in zip(per_ctx, rows)]}
                    g.add_node(node, kind="ffn", layer=li, rule="tolerance region", r_min=fs(r_star),
                               condition=f"{cond} <= {fs(r_star)}" if cond is not None else "none",
                               error=str(max_expr(out, atoms)))
                    mlp_touched.update(b for b in range(d) if out[b] != e[b])
                    e = out
                    g.add_edge(prev, node)
                    prev = node
                    continue
                elif per_ctx is not None:
                    for b in disc.slopes:
                        terms = [up(c["slope"].get(b, 0)) * ez for c, ez in per_ctx if c["slope"].get(b, 0)]
                        if terms:
                            atoms.append(sp.Max(*terms))
                            out[b] = lin_add(out[b], {len(atoms) - 1: Fraction(1)})
                    cond = sp.Max(*[ez * up(disc.r_min / c["margin"]) for c, ez in per_ctx if c["margin"] is not None]) \
                        if disc.r_min is not None else lin_expr(dz, atoms)
                if disc.r_min is not None:  # None: no kink off the hard values, every input error is tolerated
                    conditions[m.name] = (cond, disc.r_min)
                mlps[m.name] = {"rule": "discretisation", "node": node, "analysis": disc, "dz": cond}
                g.add_node(node, kind="ffn", layer=li, rule="discretisation", r_min=fs(disc.r_min),
                           condition=f"{cond} <= {fs(disc.r_min)}" if disc.r_min is not None else "none",
                           slopes=str({hm.labels[b]: fs(s) for b, s in disc.slopes.items() if s}),
                           error=str(max_expr(out, atoms)))
                mlp_touched.update(b for b in range(d) if out[b] != e[b])
                e = out
            else:
                e2, groups = mlp_step(m, e)
                mlp_touched.update(b for b in range(d) if e2[b] != e[b])
                e = e2
                why = "several error directions" if ctx is not None else "no hard contexts known"
                mlps[m.name] = {"rule": f"lipschitz ({why})", "node": node, "analysis": disc}
                g.add_node(node, kind="ffn", layer=li, rule=f"lipschitz ({why})", error=str(max_expr(e, atoms)))
            g.add_edge(prev, node)
            prev = node
    outputs = {}
    for o in hm.outputs:
        expr = max_expr([e[c] for c in o.coords], atoms)
        node = f"out:{o.name}"
        g.add_node(node, kind="output", layer=len(hm.heads), type=o.type,
                   coordinates=[hm.labels[c] for c in o.coords], error=str(expr))
        g.add_edge(prev, node)
        outputs[o.name] = expr
    return TracrBound(outputs=outputs, conditions=conditions, heads=heads, mlps=mlps, graph=g)
