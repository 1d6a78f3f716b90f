"""The one pipeline: source → graph → transformer and bounds (ARCHITECTURE.md).

Every command (run, bound, confirm, certify, verify) obtains its :class:`Construction` here, so
there is a single path from a formula (or, through :data:`SOURCES`, any other kind of input) to
its transformer and its bounds, and a certificate can be re-derived from the ``source`` it stores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable

import mpmath
import networkx as nx
import sympy as sp

from ..bounds.core import eps_ln, tau
from ..bounds.derive import NodeBound, derive, evaluate, in_tau, required_inv_tau
from ..constructions.ast import Parity, subformulas
from ..constructions.compile import assign_attention, compile_formula
from ..constructions.counting import parity_regime_error
from ..bounds.params import Params
from ..constructions.errors import CertificateError, ParameterError
from ..constructions.parameters import DEFAULT_BETA, DEFAULT_ETA
from ..constructions.parse import FormulaSpec, parse_formula
from ..constructions.transformer import Transformer
from ..constructions.weights import build_transformer


@dataclass
class Construction:
    """A construction ready for bounds, proofs and numeric runs.

    * ``kind``/``source``: how to rebuild it (JSON-serialisable; see :data:`SOURCES`);
    * ``title``: one line for humans; ``regime``: "T", "U", "P" (or a kind-specific label);
    * ``params``: the one :class:`~softhard.bounds.params.Params` (β, η or ε, ε_LN, comparator);
      the temperature τ is chosen per run or per certificate;
    * ``graph``, ``model``, ``bounds``: the computation graph, explicit transformer, node bounds;
    * ``spec``: the formula spec, for formula constructions.
    """

    kind: str
    source: dict
    title: str
    regime: str
    params: Params
    graph: nx.DiGraph
    model: Transformer
    bounds: dict[str, NodeBound]
    spec: FormulaSpec | None = None
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def beta(self) -> Fraction:
        """β (the default 1/4 where the construction has none: numeric evaluation ignores it)."""
        return self.params.beta if self.params.beta is not None else DEFAULT_BETA

    @property
    def eta(self) -> Fraction | None:
        """η, the Boolean rounding margin (formula constructions; None for models and Tracr)."""
        return self.params.eta

    @property
    def tolerance(self) -> Fraction:
        """What every output must meet: η for formulas, ε for models and Tracr."""
        return self.params.tolerance

    def distinct_bounds(self) -> list[NodeBound]:
        """One node per distinct bound expression (nodes of the same kind share a bound)."""
        seen: dict[sp.Expr, NodeBound] = {}
        for nb in self.bounds.values():
            seen.setdefault(nb.leak, nb)
        return list(seen.values())

    def tau_bounds(self) -> list[NodeBound]:
        """The distinct bounds whose search parameter is τ (not, e.g., ε_LN)."""
        return [nb for nb in self.distinct_bounds() if nb.bound.parameter == tau]

    @property
    def uniform_in_n(self) -> bool:
        """True when every node is within tolerance uniformly in n, so ``all_n`` certificates make
        sense: an n-independent bound in regimes U/P (selections, the ``pe`` comparator: one τ for all
        lengths), or an exact node (a layer-norm comparator with ε_LN = 0: error 0 for every n,
        THEORY §5 (a)) in any regime."""
        def uniform(nb: NodeBound) -> bool:
            if nb.bound.parameter == eps_ln and self.params.eps_ln == 0:
                return True
            return self.regime in ("U", "P") and nb.bound.all_n is not None
        return all(uniform(nb) for nb in self.distinct_bounds())

    def inv_tau_closed_form(self, n: int) -> mpmath.mpf:
        """Closed-form sufficient ``1/τ*(n, η)`` (max over τ-dependent nodes); independent of n
        when :attr:`uniform_in_n`."""
        key = ("closed", n)
        if key not in self._cache:
            vals = [mpmath.mpf(0)]
            for nb in self.tau_bounds():
                if n < nb.bound.n_min or nb.bound.inv_tau_star is None:
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
            for nb in self.tau_bounds():
                if n < nb.bound.n_min:
                    continue
                vals.append(required_inv_tau(in_tau(nb.bound, self.params.exact()), n_value=n, eta_value=self.eta,
                                             beta_value=self.beta))
            self._cache[key] = max(vals)
        return self._cache[key]

    def default_inv_tau(self, n: int) -> float:
        """The inverse temperature ``run`` uses without ``--tau``: the closed form 1/τ*(n, η)
        (at the word's length; one value for all n when :attr:`uniform_in_n`)."""
        v = self.inv_tau_closed_form(2 if self.uniform_in_n else n)
        return float(v) if v > 0 else 1.0


def default_comparator(regime: str) -> str:
    """The comparator used when none is given: ``pe`` with unbounded PE (regimes U, P: one τ for
    all n), ``head`` with bounded PE (regime T)."""
    return "pe" if regime in ("U", "P") else "head"


def build(spec: FormulaSpec, regime: str = "T", *, beta=DEFAULT_BETA, eta=DEFAULT_ETA, comparator: str | None = None,
          eps_ln=None, construction: str | None = None) -> Construction:
    """:func:`build_formula` with the parameters given one by one (validated into one
    :class:`Params`)."""
    return build_formula(spec, Params(regime=regime, beta=beta, eta=eta, comparator=comparator,
                                      eps_ln=0 if eps_ln is None else eps_ln, construction=construction))


def build_formula(spec: FormulaSpec, params: Params) -> Construction:
    """Compile a formula ``spec`` and build its transformer and bounds with ``params``.

    ``params.construction`` (``auto`` | ``unique`` | ``average``) is how P/F selections are built
    (:func:`softhard.constructions.compile.assign_attention`, THEORY §4b; recorded in ``source``
    when the formula has such a node).
    ``params.comparator`` (``ln`` | ``head`` | ``pe``; default :func:`default_comparator`) is how
    count comparisons are built, ``params.eps_ln`` (≥ 0, default 0 = exact LN) the layer-norm ε of
    the ``ln`` comparator; both are kept in the construction's parameters (and its ``source``) only
    when the formula has a comparison, so a replay re-derives the same construction.

    Raises :class:`ParameterError` for a counting node the regime cannot build (parity needs P,
    ``pe`` needs U or P) and :class:`FormulaError` for a formula the construction does not support.
    Implements THEORY §3–§5 via constructions and bounds.
    """
    regime = params.regime
    if regime is None or params.eta is None:
        raise ParameterError("a formula construction needs a regime (T, U or P) and eta")
    comparator = params.comparator if params.comparator is not None else default_comparator(regime)
    eps = params.eps_ln if params.eps_ln is not None else Fraction(0)
    parity = [f for f in subformulas(spec.formula) if isinstance(f, Parity)]
    if parity and regime != "P":  # named as written (odd(#a) compiles to the head even(#a))
        raise parity_regime_error(repr(str(parity[-1])), regime)
    g = compile_formula(spec.formula, spec.alphabet, at=spec.at, comparator=comparator)
    assign_attention(g, regime, params.construction)
    model = build_transformer(g, regime, beta=params.beta, eta=params.eta, eps_ln=eps)
    source = {"kind": "formula", "formula": str(spec.formula), "alphabet": list(spec.alphabet), "at": spec.at,
              "name": spec.name, "description": spec.description, "file": spec.source}
    if any(a.get("average_ok") for _, a in g.nodes(data=True)):  # the choice of THEORY §4b is an input
        source["construction"] = params.construction or "auto"
    if any(a["op"] == "compare" for _, a in g.nodes(data=True)):
        source["comparator"] = comparator
        params = params.with_(comparator=comparator, eps_ln=eps if comparator == "ln" else None, inv_tau=None)
    else:
        params = params.with_(comparator=None, eps_ln=None, inv_tau=None)
    bounds = derive(g, regime)
    fixed = {k: v for k, v in params.exact().items() if k not in ("beta", "eta")}
    for nb in bounds.values():
        nb.fixed = fixed
    return Construction(kind="formula", source=source, title=f"{spec.name}: {spec.formula}" if spec.name and
                        spec.name != str(spec.formula) else str(spec.formula), regime=regime,
                        params=params, graph=g, model=model, bounds=bounds, spec=spec)


def _rebuild_formula(source: dict, params: Params) -> Construction:
    try:
        formula = parse_formula(source["formula"], source="certificate source.formula")
        spec = FormulaSpec(name=source.get("name") or str(formula), description=source.get("description") or "",
                           alphabet=tuple(source["alphabet"]), formula=formula, at=source["at"],
                           source=source.get("file") or "<certificate>")
    except KeyError as e:
        raise CertificateError(f"source.{e.args[0]}: missing", path=f"source.{e.args[0]}") from None
    return build_formula(spec, params.with_(comparator=source.get("comparator"), construction=source.get("construction")))


#: ``kind -> rebuild(source, params) -> Construction`` (used by the formula kind's replay).
#: A model file is not rebuilt from its source alone: its construction needs the gap analysis,
#: which the model kind's replay re-runs (:func:`softhard.solver.models.replay`).
SOURCES: dict[str, Callable[[dict, Params], Construction]] = {"formula": _rebuild_formula}


def rebuild(source: dict, params: Params) -> Construction:
    """Re-derive a construction from a certificate's stored ``source`` and its parameters
    (ARCHITECTURE: verify).  Raises :class:`CertificateError` for an unknown kind."""
    kind = source.get("kind")
    if kind not in SOURCES:
        raise CertificateError(f"source.kind: unknown construction kind {kind!r}", path="source.kind")
    return SOURCES[kind](source, params)
