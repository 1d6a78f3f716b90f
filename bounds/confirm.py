"""Numeric confirmation: observed leaks of the soft transformer against the symbolic node bounds.

For every attention node, input family and word length ``n``, the largest observed leak is
compared with the node's bound ``δ(n, τ(n))`` evaluated in high precision.  The observation
*confirms* the bound when ``observed ≤ bound·(1 + allowance)`` with the float64 rounding
allowance of :func:`softhard.constructions.simulate.leak_rounding_allowance` plus the node bound's
own input-rounding allowance (``Bound.rounding``, counting comparators); otherwise it
*refutes* it (THEORY §7, §8: a numeric run never proves).  ``tightness = observed / bound``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Mapping, Sequence

import mpmath

from ..constructions.adversarial import key_pattern_leak
from ..constructions.counting import observe_layernorms
from ..constructions.model import Transformer
from ..constructions.simulate import RunSummary, leak_rounding_allowance, observe
from .derive import NodeBound


@dataclass
class NodeCheck:
    """One (node, family, n) comparison."""

    node: str
    family: str
    n: int
    inv_tau: float
    inputs: int
    observed: float
    bound: float
    allowance_rel: float
    word: str
    row: int

    @property
    def ratio(self) -> float:
        return self.observed / self.bound if self.bound > 0 else (0.0 if self.observed == 0 else float("inf"))

    @property
    def ok(self) -> bool:
        return self.observed <= self.bound * (1 + self.allowance_rel)


@dataclass
class Confirmation:
    """All comparisons, plus end-to-end agreement of the clean outputs with the hard model."""

    checks: list[NodeCheck] = field(default_factory=list)
    words: dict[str, int] = field(default_factory=dict)
    mismatches: dict[str, list] = field(default_factory=dict)
    max_output_deviation: float = 0.0

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks) and not any(self.mismatches.values())

    def worst(self, node: str, family: str | None = None) -> NodeCheck | None:
        """The check with the largest tightness for ``node`` (and ``family`` if given)."""
        cs = [c for c in self.checks if c.node == node and (family is None or c.family == family)]
        return max(cs, key=lambda c: c.ratio) if cs else None

    def summary(self) -> dict[str, dict]:
        """Per node: inputs tried, worst observed leak, its bound, the ratio, and any violation."""
        out = {}
        for node in dict.fromkeys(c.node for c in self.checks):
            cs = [c for c in self.checks if c.node == node]
            w = max(cs, key=lambda c: c.ratio)
            out[node] = {
                "inputs": sum(c.inputs for c in cs),
                "worst_observed": w.observed, "bound_there": w.bound, "ratio": w.ratio,
                "at_n": w.n, "family": w.family, "word": w.word, "row": w.row,
                "violations": sum(not c.ok for c in cs),
                "max_ratio_by_family": {f: max(c.ratio for c in cs if c.family == f)
                                            for f in dict.fromkeys(c.family for c in cs)},
            }
        return out


def compare(summary: RunSummary, bounds: Mapping[str, NodeBound], family: str, *, beta, eta) -> list[NodeCheck]:
    """Turn a :class:`RunSummary` into :class:`NodeCheck` s against ``bounds`` (one per node and n)."""
    checks = []
    for node, per_n in summary.heads.items():
        if node not in bounds:
            continue
        nb = bounds[node]
        for k, ob in per_n.items():
            bd = nb.value(k, Fraction(ob.inv_tau), beta_value=beta, eta_value=eta)
            allow = ob.allowance_rel + nb.rounding_allowance(k, Fraction(ob.inv_tau))
            checks.append(NodeCheck(node=node, family=family, n=k, inv_tau=ob.inv_tau, inputs=ob.inputs,
                                    observed=ob.leak, bound=float(bd), allowance_rel=allow,
                                    word="".join(ob.word) if all(len(s) == 1 for s in ob.word) else " ".join(ob.word),
                                    row=ob.row))
    return checks


def key_pattern_checks(model: Transformer, bounds: Mapping[str, NodeBound], ns: Sequence[int],
                       inv_tau: float | Callable[[int], float], *, beta=Fraction(1, 4),
                       eta=Fraction(1, 4)) -> list[NodeCheck]:
    """Family ``adversarial-key``: every selection head run alone on its attaining key patterns
    (:func:`softhard.constructions.adversarial.key_pattern_leak`) at each length in ``ns``."""
    g = model.meta.get("graph")
    out = []
    for node, nb in bounds.items():
        key = g.nodes[node].get("key") if g is not None and node in g else None
        if key is None:
            continue
        for k in ns:
            it = float(inv_tau(k) if callable(inv_tau) else inv_tau)
            # a head whose key is ≡ 1 (Y, X) never sees key ≡ 0: its bound covers the ones pattern only
            pats = ("ones",) if nb.bound.key_const else ("ones", "zeros")
            ob = key_pattern_leak(model, node, key, k, it, patterns=pats)
            bd = nb.value(k, Fraction(it), beta_value=beta, eta_value=eta)
            out.append(NodeCheck(node=node, family="adversarial-key", n=k, inv_tau=it, inputs=2, observed=ob.leak,
                                 bound=float(bd), allowance_rel=leak_rounding_allowance(ob.score_scale, ob.key_dim, it, k + 1),
                                 word=f"key ≡ {1 if ob.pattern == 'ones' else 0}", row=ob.row))
    return out


def confirm(model: Transformer, bounds: Mapping[str, NodeBound], families: Mapping[str, Sequence[Sequence[str]]],
            inv_tau: float | Callable[[int], float], *, beta=Fraction(1, 4), eta=Fraction(1, 4),
            progress: Callable[[str], None] | None = None, key_pattern_ns: Sequence[int] = ()) -> Confirmation:
    """Run ``model`` on every input family and compare each node's worst leak with its bound.

    ``families``: ``{name: words}``; ``inv_tau``: number or function of n; ``key_pattern_ns``:
    lengths at which each head is also run alone on its attaining key patterns (family
    ``adversarial-key``).  Returns a :class:`Confirmation`; ``.ok`` is False if any bound is
    exceeded beyond the rounding allowance or any clean output differs from the hard model.
    """
    conf = Confirmation()
    if key_pattern_ns:
        if progress:
            progress("adversarial-key")
        conf.checks.extend(key_pattern_checks(model, bounds, key_pattern_ns, inv_tau, beta=beta, eta=eta))
        conf.words["adversarial-key"] = 2 * len(key_pattern_ns) * len(bounds)
    with mpmath.workdps(30):
        for name, words in families.items():
            if progress:
                progress(name)
            s = observe(model, words, inv_tau)
            s.heads.update(observe_layernorms(model, words, inv_tau).heads)  # LN comparators (THEORY §5 (a))
            conf.checks.extend(compare(s, bounds, name, beta=beta, eta=eta))
            conf.words[name] = s.words
            conf.mismatches[name] = s.mismatches
            conf.max_output_deviation = max(conf.max_output_deviation, s.max_output_deviation)
    return conf
