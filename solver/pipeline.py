"""The one pipeline: spec → graph → transformer and bounds (ARCHITECTURE.md).

Every command (run, bound, confirm, certify, verify) builds its construction here, so there is a
single path from a formula to its transformer and its bounds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import mpmath
import networkx as nx
import sympy as sp

from ..bounds import selection as S
from ..bounds.derive import NodeBound, derive, evaluate, required_inv_tau
from ..constructions.compile import compile_formula
from ..constructions.model import Transformer
from ..constructions.parse import FormulaSpec
from ..constructions.weights import DEFAULT_BETA, DEFAULT_ETA, build_transformer, check_beta, check_eta, check_regime


@dataclass
class Construction:
    """A formula's construction in one regime: graph, explicit transformer and node bounds."""

    spec: FormulaSpec
    regime: str
    beta: Fraction
    eta: Fraction
    graph: nx.DiGraph
    model: Transformer
    bounds: dict[str, NodeBound]
    _cache: dict = field(default_factory=dict, repr=False)

    def distinct_bounds(self) -> list[NodeBound]:
        """One node per distinct leak expression (nodes of the same kind share a bound)."""
        seen: dict[sp.Expr, NodeBound] = {}
        for nb in self.bounds.values():
            seen.setdefault(nb.leak, nb)
        return list(seen.values())

    def inv_tau_closed_form(self, n: int) -> mpmath.mpf:
        """Closed-form sufficient ``1/τ*(n, η)`` (max over nodes); regime U: independent of n."""
        key = ("closed", n)
        if key not in self._cache:
            vals = [mpmath.mpf(0)]
            for nb in self.distinct_bounds():
                if n < nb.bound.n_min:
                    continue
                vals.append(evaluate(nb.bound.inv_tau_star, n_value=n, inv_tau=1, beta_value=self.beta,
                                     eta_value=self.eta))
            self._cache[key] = max(vals)
        return self._cache[key]

    def inv_tau_required(self, n: int) -> mpmath.mpf:
        """Smallest ``1/τ`` at which every node's tight bound at length ``n`` is ≤ η (numeric)."""
        key = ("req", n)
        if key not in self._cache:
            vals = [mpmath.mpf(0)]
            for nb in self.distinct_bounds():
                if n < nb.bound.n_min:
                    continue
                vals.append(required_inv_tau(nb.leak, n_value=n, eta_value=self.eta, beta_value=self.beta))
            self._cache[key] = max(vals)
        return self._cache[key]

    def default_inv_tau(self, n: int) -> float:
        """The inverse temperature ``run`` uses without ``--tau``: the closed form 1/τ*(n, η)
        (regime T: at the word's length; regime U: one value for all n).  Never below 1e-300."""
        v = self.inv_tau_closed_form(n if self.regime == "T" else 2)
        return max(float(v), 1e-300) if v > 0 else 1.0


def build(spec: FormulaSpec, regime: str = "T", *, beta=DEFAULT_BETA, eta=DEFAULT_ETA) -> Construction:
    """Compile ``spec`` and build its transformer and bounds in ``regime`` ("T" or "U").

    Raises :class:`ParameterError` for a bad regime, β or η and :class:`FormulaError` for a formula
    the construction does not support.
    """
    check_regime(regime)
    beta, eta = check_beta(beta), check_eta(eta)
    g = compile_formula(spec.formula, spec.alphabet, at=spec.at)
    model = build_transformer(g, regime, beta=beta, eta=eta)
    return Construction(spec=spec, regime=regime, beta=beta, eta=eta, graph=g, model=model,
                        bounds=derive(g, regime))


__all__ = ["Construction", "build", "S"]
