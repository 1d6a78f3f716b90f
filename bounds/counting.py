"""Symbolic error bounds of the counting constructions (THEORY §2 gap lemma, §5 counting).

Registers the bound rules of the graph ops ``uniform``, ``compare`` and ``parity`` in
:data:`softhard.bounds.rules.BOUND_RULES` (importing this module is enough; ``derive`` does it).
The constructions are described in :mod:`softhard.constructions.counting`.  Notation: a comparator
decides ``g(i) ≥ 0`` for an integer ``g = Σ a_k C_k(i) + c`` from
``F(i) = (g(i) + ½)/(i+1)``; ``|F| ≥ 1/(2(i+1)) ≥ 1/(2(n+1))`` — the resolution ``1/(2(n+1))``
that makes the required ``1/τ`` (or ``1/ε_LN``) grow with n.  ``ρ = η/(1−η)``: a row's leak
``S/(1+S)`` is ``≤ η`` iff ``S ≤ ρ``.

* ``uniform``: exact — all scores are equal, so softmax and AHA both weight every attendable
  position ``1/(i+1)`` for every τ.  No claim (rule returns ``None``).

* ``compare``, method ``head``, regime T (scores ``F + β j/n`` for ``1 ≤ j ≤ i``, BOS ``β i/n``,
  value 1 at every position, 0 at BOS).  If ``F > 0`` position ``i`` wins; its competitors are
  BOS at gap ``F ≥ 1/(2(i+1))`` and ``j = i − k`` at gap ``kβ/n`` (``k = 1..i−1``).  If ``F < 0``
  BOS wins; the competitors are ``j = i − k`` at gap ``|F| + kβ/n`` (``k = 0..i−1``).  Both sums
  grow with ``i`` and ``1/(2(i+1))`` shrinks, so with ``a = 1/(2(n+1)τ)``, ``u = β/(nτ)``::

      S_A = e^{−a} + Σ_{k=1}^{n−1} e^{−ku},   S_B = e^{−a}·Σ_{k=0}^{n−1} e^{−ku} ≤ S_A,
      δ ≤ S_A/(1 + S_A),

  attained exactly at the last position of every word with ``g(n) = 0``.  The certified quantity is
  the head's *output* (THEORY §5 (b)): its value is 1 at every real position and 0 at BOS, so for
  ``F > 0`` only BOS errs and for ``F < 0`` every real position does; the worst output error is
  ``S_B/(1 + S_B)`` (:func:`output_compare_head`), attained exactly by ``g(n) = −1``.  Regimes U and P
  use the PE ``j`` with slope 1: the same with ``u = 1/τ``.
* ``compare``, method ``pe`` (regimes U, P; scores ``F(j+1) − λ(i−j)``, BOS 0): the winner (``i``
  if ``F > 0``, else BOS) has its other competitor at gap ``|g + ½| ≥ ½`` and position ``i − k``
  at gap ``≥ kλ``, so with ``q = e^{−λ/τ}``: ``S ≤ e^{−1/(2τ)} + Σ_{k=1}^{n−1} q^k``, and for every
  n ``S < e^{−1/(2τ)} + q/(1 − q)``: one τ for all lengths.  The first term is attained exactly by
  ``g(n) ∈ {0, −1}``; the rest (``≈ e^{−λ/τ}``, λ = 64) is negligible at the τ a certificate needs.
* ``compare``, method ``ln``: the error ``(1 − |F|/√(F² + ε))/2`` decreases in ``|F|``, so it is at
  most ``(1 − (1 + 4ε(n+1)²)^{−1/2})/2``, attained exactly by ``g(n) ∈ {0, −1}``.  The parameter
  is ``ε_LN`` (symbol :data:`eps_ln`); ``1/ε* = (1−2η)²(n+1)²/(η(1−η))`` is exact: Θ(n²).
* ``parity`` (regime P; scores ``(C² − (j − C)²)/(2(i+1))`` for ``0 ≤ j ≤ i``, BOS is ``j = 0``):
  at most two competitors at each distance ``k ≥ 1``, at gap ``k²/(2(i+1)) ≥ k²a``, and
  ``k² ≥ 4 + 5(k−2)`` for ``k ≥ 2``, so ``S ≤ 2(e^{−a} + e^{−4a}/(1 − e^{−5a}))``; attained up to
  the (tiny) tail as ``C(n)`` and ``n − C(n)`` grow (e.g. ``C(n) = ⌊n/2⌋``).

Every ``exp`` argument here is ≤ 0 for ``n ≥ 1`` (the solver encloses each in ``[0, 1]``); the LN
bound uses a square root, which the solver encodes exactly (``R ≥ 0, R² = …``).
"""

from __future__ import annotations

import networkx as nx
import sympy as sp

from .core import HALF, U64, Bound, beta, eps_ln, eta, gap_lemma, n, tau
from .rules import bound_rule
from .selection import inv_tau_star_generic

#: θ splitting ρ between the BOS term and the geometric tail in the comparator closed forms
THETA_T = sp.Rational(1, 2)
THETA_U = sp.Rational(999, 1000)
#: λ of the ``pe`` comparator (same value as :data:`softhard.constructions.counting.PE_SLOPE`)
PE_SLOPE = 64

_RHO = eta / (1 - eta)


def _geo(u: sp.Expr, terms: sp.Expr) -> sp.Expr:
    """``Σ_{k=1}^{terms} e^{−ku} = e^{−u}(1 − e^{−terms·u})/(1 − e^{−u})`` with nonpositive exponents."""
    return sp.exp(-u) * (1 - sp.exp(-terms * u)) / (1 - sp.exp(-u))


def input_error(g: nx.DiGraph, v: str) -> sp.Expr:
    """Float64 bound on ``|F̂ − F|`` for comparator ``v``: ``(m + 5)·u·W`` with ``m`` terms and
    ``W = Σ|a_k| + |c + ½|`` (each proportion is one correctly rounded division, ``≤ 1``; products
    and the ``m``-term sum add ``(m + 2)u`` relative to ``W``).  Numeric runs only."""
    a = g.nodes[v]
    W = sum(abs(sp.Integer(c)) for _, c in a["terms"]) + abs(sp.Integer(a["const"]) + HALF)
    return (len(a["terms"]) + 5) * U64 * W


def leak_compare_head(regime: str) -> sp.Expr:
    """Tight leak bound of the ``head`` comparator (module docstring), valid for n ≥ 1."""
    a = 1 / (2 * (n + 1) * tau)
    u = beta / (n * tau) if regime == "T" else 1 / tau
    S = sp.exp(-a) + _geo(u, n - 1)
    return S / (1 + S)


def output_compare_head(regime: str) -> sp.Expr:
    """Exact worst-case *output* error of the ``head`` comparator (THEORY §4b, §5 (b)), n ≥ 1.

    The value is 1 at every real position and 0 at BOS.  ``F > 0``: position i wins and every
    other real position also carries 1, so only BOS errs: ``e^{−F/τ}/(1 + e^{−F/τ} + …) ≤
    e^{−a}/(1 + e^{−a})``.  ``F < 0``: BOS wins and every real position errs:
    ``S_B/(1 + S_B)``, ``S_B = e^{−a}·Σ_{k=0}^{n−1} e^{−ku}`` (module docstring), which is larger;
    attained exactly by ``g(n) = −1`` at the last position.  Below the leak bound ``S_A/(1+S_A)``
    (the earlier positions weigh on the leak but not on the output when F > 0)."""
    a = 1 / (2 * (n + 1) * tau)
    u = beta / (n * tau) if regime == "T" else 1 / tau
    S = sp.exp(-a) * (1 + _geo(u, n - 1))
    return S / (1 + S)


def inv_tau_star_compare_head(regime: str) -> sp.Expr:
    """Sufficient ``1/τ`` for the head comparator's *output* bound :func:`output_compare_head`:
    ``S_B = e^{−a}·Σ_{k=0}^{n−1} e^{−ku} ≤ e^{−a}/(1 − e^{−u})``, so ``e^{−a} ≤ θρ`` and
    ``e^{−u} ≤ 1 − θ`` give ``S_B ≤ ρ``, i.e. ``max(2(n+1)·ln(1/(θρ)), (n/β)·ln(1/(1−θ)))`` (T, θ = 1/2)
    or ``max(2(n+1)·ln(1/(θρ)), ln(1/(1−θ)))`` (U/P, θ = 999/1000).  Θ(n); in regime T within 7.5 %
    of the exact slope 3.3365 (β = η = 1/4: 2 ln 6 = 3.5835)."""
    th = THETA_T if regime == "T" else THETA_U
    tail = (n / beta) * sp.log(1 / (1 - th)) if regime == "T" else sp.log(1 / (1 - th))
    return sp.Max(2 * (n + 1) * sp.log(1 / (th * _RHO)), tail)


def leak_compare_pe() -> sp.Expr:
    """Leak bound of the ``pe`` comparator at length n (module docstring)."""
    S = sp.exp(-1 / (2 * tau)) + _geo(PE_SLOPE / tau, n - 1)
    return S / (1 + S)


def leak_compare_pe_all_n() -> sp.Expr:
    """n-independent bound of the ``pe`` comparator: ``S∞/(1+S∞)``, ``S∞ = e^{−1/(2τ)} + q/(1−q)``."""
    q = sp.exp(-PE_SLOPE / tau)
    S = sp.exp(-1 / (2 * tau)) + q / (1 - q)
    return S / (1 + S)


def error_layernorm() -> sp.Expr:
    """Worst error of the ``ln`` comparator: ``(1 − (1 + 4ε(n+1)²)^{−1/2})/2`` (module docstring)."""
    return (1 - 1 / sp.sqrt(1 + 4 * eps_ln * (n + 1) ** 2)) / 2


def leak_parity() -> sp.Expr:
    """Leak bound of the parity head: ``S/(1+S)``, ``S = 2(e^{−a} + e^{−4a}/(1 − e^{−5a}))``,
    ``a = 1/(2(n+1)τ)`` (module docstring)."""
    a = 1 / (2 * (n + 1) * tau)
    S = 2 * (sp.exp(-a) + sp.exp(-4 * a) / (1 - sp.exp(-5 * a)))
    return S / (1 + S)


def inv_tau_star_parity() -> sp.Expr:
    """Sufficient ``1/τ = 2(n+1)·ln(20/(9ρ))``: then ``2e^{−a} ≤ (9/10)ρ`` and, as ``ρ < 1``, the
    tail ``2e^{−4a}/(1−e^{−5a}) ≤ (4/31)(9ρ/10)^4 ≤ ρ/10``.  Θ(n)."""
    return 2 * (n + 1) * sp.log(20 / (9 * _RHO))


def _tiebreak(regime: str) -> str:
    """The comparator head's tie-break family: β·j/n in regime T, j (slope 1) in U and P."""
    return "T" if regime == "T" else "U"


@bound_rule("uniform")
def _uniform_rule(g: nx.DiGraph, v: str, regime: str):
    return None  # exact for every τ (module docstring)


@bound_rule("compare")
def _compare_rule(g: nx.DiGraph, v: str, regime: str) -> Bound:
    method = g.nodes[v]["method"]
    ef = input_error(g, v)
    if method == "ln":
        return Bound(
            kind="layernorm", regime=regime, leak=error_layernorm(), parameter=eps_ln,
            inv_tau_star=(1 - 2 * eta) ** 2 * (n + 1) ** 2 / (eta * (1 - eta)), gap=1 / (2 * (n + 1)), n_min=1,
            attained_by="g(n) = 0 or -1 at the last position (count difference 0 or -1 there)",
            source="THEORY §5 (a): layer normalisation of [F, -F]",
            rounding=4 * (n + 1) * ef * sp.Rational(101, 100) + 16 * U64)
    if method == "pe":
        if regime not in ("U", "P"):
            raise ValueError(f"node {v!r}: comparator 'pe' needs regime U or P, not {regime}")
        return Bound(
            kind="comparator-pe", regime=regime, leak=leak_compare_pe(), all_n=leak_compare_pe_all_n(),
            generic=gap_lemma(n + 1, HALF), inv_tau_star=2 * sp.log(1 / eta),
            inv_tau_star_generic=inv_tau_star_generic(n + 1, HALF), gap=HALF, n_min=1,
            attained_by="g(n) = 0 or -1 at the last position (the BOS term; the rest is O(e^{-lambda/tau}))",
            source="THEORY §5 (c): unbounded-PE comparator F(i)(j+1) - lambda(i-j)",
            rounding=sp.exp(ef * (n + 1) / tau) - 1)
    r = _tiebreak(regime)
    gap = beta / n if r == "T" else 1 / (2 * (n + 1))
    return Bound(
        kind="comparator-head", regime=regime, leak=output_compare_head(r), generic=gap_lemma(n + 1, gap),
        inv_tau_star=inv_tau_star_compare_head(r), inv_tau_star_generic=inv_tau_star_generic(n + 1, gap),
        gap=gap, n_min=1, quantity="output", attained_by="g(n) = -1 at the last position (exactly, on the output)",
        source="THEORY §5 (b): temperature-scaled comparator head, gap 1/(2(n+1)); §2 structured rows",
        rounding=sp.exp(ef / tau) - 1)


@bound_rule("parity")
def _parity_rule(g: nx.DiGraph, v: str, regime: str) -> Bound:
    if regime != "P":
        raise ValueError(f"node {v!r}: parity needs regime P, not {regime}")
    gap = 1 / (2 * (n + 1))
    return Bound(
        kind="parity", regime=regime, leak=leak_parity(), generic=gap_lemma(n + 1, gap),
        inv_tau_star=inv_tau_star_parity(), inv_tau_star_generic=inv_tau_star_generic(n + 1, gap), gap=gap,
        n_min=1, attained_by="C(n) near n/2 at the last position (as n grows)",
        source="THEORY §5 parity: PE (j, j^2, (-1)^j), score f*j - j^2/(2(i+1))",
        rounding=sp.exp(3 * U64 * n * sp.Rational(101, 100) / tau) - 1)
