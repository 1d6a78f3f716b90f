"""Shared vocabulary of the bounds: symbols, the :class:`Bound` record, the gap lemma, growth orders.

A :class:`Bound` is what every construction (selections, counting comparators, general heads)
hands to the certificate stage: an error expression in ``n`` and the construction's parameters,
the tolerance it must stay below, the parameter a search may tune, and the range of ``n`` where
the expression is valid.  The certificate claim for a node is

    for all integers n in [max(n_min, n_lo), n_max]:  error(n; params) <= tolerance(params)

with every parameter replaced by an exact rational (THEORY §8).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

n = sp.Symbol("n", positive=True)
tau = sp.Symbol("tau", positive=True)
beta = sp.Symbol("beta", positive=True)
eta = sp.Symbol("eta", positive=True)
#: output tolerance ε of model-file and Tracr constructions (THEORY §6) — never η, the Boolean margin
epsilon = sp.Symbol("epsilon", positive=True)
#: layer-norm epsilon of the ``ln`` comparator (THEORY §5 (a)); the parameter its search tunes
eps_ln = sp.Symbol("eps_ln", positive=True)
HALF = sp.Rational(1, 2)
#: unit roundoff of float64 (for numeric rounding allowances only, never in a proof)
U64 = sp.Rational(1, 2**53)


@dataclass
class Bound:
    """Symbolic error bound of one computation-graph node.

    * ``kind``: ``selection`` | ``comparator-head`` | ``layernorm`` | ``head`` | … (what the node is);
    * ``regime``: "T" | "U" | other construction-specific label;
    * ``leak``: the error bound (for attention nodes, the leak δ of THEORY §2) — a SymPy expression
      in :data:`n` and parameters (:data:`tau`, :data:`beta`, :data:`eta`, or others);
    * ``tolerance``: the condition is ``leak ≤ tolerance`` (default η, THEORY §3);
    * ``parameter``: the symbol a parameter search tunes (default τ; :data:`eps_ln` for the layer-norm
      comparator; smaller is harder — searches work with ``1/parameter``);
    * ``generic``: the generic gap-lemma bound for comparison, if any;
    * ``inv_tau_star``: closed-form sufficient value of ``1/parameter`` in (n, η, …), if any;
      ``inv_tau_star_generic``: the same from the generic bound;
    * ``gap``: the minimum score gap; ``all_n``: an n-independent bound, if any;
    * ``n_min``: smallest n the expression is valid for (the node is exact below it);
    * ``attained_by``: the adversarial inputs that attain it; ``source``: THEORY section / paper result;
    * ``rounding``: for numeric runs only, an extra relative float64 allowance (an expression in
      ``n``, ``τ``) for the observed error, covering rounding in the node's *inputs* (e.g. a
      comparator's ``F`` computed from rounded proportions); ``None`` when the engine's own
      allowance covers everything (THEORY §7);
    * ``spacing``: for selections, the key spacing the bound relies on (THEORY §2 "structured rows");
    * ``quantity``: what ``leak`` bounds — ``"leak"`` (the soft weight outside the hard argmax set,
      which bounds the output error for Boolean values) or ``"output"`` (directly the error of the
      node's output value as the clean-up reads it, THEORY §4b); numeric confirmation observes the
      same quantity.
    """

    kind: str
    regime: str
    leak: sp.Expr
    key_const: bool = False
    generic: sp.Expr | None = None
    inv_tau_star: sp.Expr | None = None
    inv_tau_star_generic: sp.Expr | None = None
    gap: sp.Expr | None = None
    all_n: sp.Expr | None = None
    n_min: int = 1
    attained_by: str = ""
    source: str = "THEORY §2, §4"
    tolerance: sp.Expr = eta
    parameter: sp.Symbol = tau
    params: dict = field(default_factory=dict)
    rounding: sp.Expr | None = None
    #: selections: the key's least distance between two 1s that the bound uses (1: general)
    spacing: int = 1
    #: "leak" | "output": the quantity ``leak`` bounds and numeric runs observe
    quantity: str = "leak"
    #: selections: the first position (from the start; from the end for future ones) where the key
    #: can be 1, which an output bound may use (THEORY §4b)
    first: int = 1
    #: unique selections judged on their output (THEORY §4c): the value is ≡ 1 (``value_const``), or
    #: two key = 1 positions closer than ``value_spacing`` (≥ 2) carry equal values (0: not used)
    value_const: bool = False
    value_spacing: int = 0


def gap_lemma(m: sp.Expr, gap: sp.Expr) -> sp.Expr:
    """Generic gap-lemma leak bound ``(m−1)e^{−γ/τ} / (1 + (m−1)e^{−γ/τ})`` (THEORY §2, a = 1).

    Exact worst case: attained by one maximal position and ``m−1`` competitors at gap γ.
    """
    s = (m - 1) * sp.exp(-gap / tau)
    return s / (1 + s)


_CLASSES = [
    (sp.Integer(1), "Θ(1)"),
    (sp.log(n), "Θ(log n)"),
    (n, "Θ(n)"),
    (n * sp.log(n), "Θ(n log n)"),
    (n**2, "Θ(n²)"),
]


def asymptotic_order(expr: sp.Expr, var: sp.Symbol = n) -> tuple[str, sp.Expr]:
    """Order of growth of ``expr`` as ``var → ∞``: e.g. ``("Θ(n)", leading constant)``.

    Handles ``Max`` by taking the fastest-growing argument.  Raises ``ValueError`` when none of
    Θ(1), Θ(log n), Θ(n), Θ(n log n), Θ(n²) fits.  Uses SymPy's ``limit`` (Gruntz algorithm).
    """
    if isinstance(expr, sp.Max):
        best = None
        for a in expr.args:
            try:
                k, c = asymptotic_order(a, var)
            except ValueError:
                continue
            rank = [lab for _, lab in _CLASSES].index(k)
            if best is None or rank > best[0] or (rank == best[0] and bool(c > best[2])):
                best = (rank, k, c)
        if best is None:
            raise ValueError(f"no growth class fits {expr}")
        return best[1], best[2]
    if not expr.has(var):
        return "Θ(1)", expr
    for cls, label in _CLASSES:
        c = sp.limit(expr / cls, var, sp.oo)
        if c.is_finite and c != 0:
            return label, sp.nsimplify(c) if c.is_number else c
    raise ValueError(f"no growth class fits {expr}")
