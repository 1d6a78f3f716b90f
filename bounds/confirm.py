"""Numeric confirmation: observed leaks of the soft transformer against the symbolic node bounds.

For every attention node, input family and word length ``n``, the largest observed leak is
compared with the node's bound ``δ(n, τ(n))`` evaluated in high precision.  The observation
*confirms* the bound when ``observed ≤ bound·(1 + allowance)`` with the float64 rounding
allowance of :func:`softhard.constructions.simulate.leak_rounding_allowance` plus the node bound's
own input-rounding allowance (``Bound.rounding``, counting comparators); otherwise it
*refutes* it (THEORY §7, §8: a numeric run never proves).  ``tightness = observed / bound``.

A node's bound assumes *clean inputs*: every attention node below it (its ancestors in the
computation graph) has error ≤ η, so every clean-up ``round_η`` it reads is exact and its keys
are Boolean (THEORY §3).  Where some ancestor's *observed* error exceeds η on the same family
and length — possible only at a temperature too warm for that length, since otherwise the
ancestor's own bound ≤ η would be violated — the premise fails: the node's observation is
reported (``premise`` names the ancestor) but is no evidence about its bound.  A clean output
that differs from the hard model at a length where some node's bound exceeds η is expected (the
construction is not claimed exact there), not a refutation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Mapping, Sequence

import mpmath

from ..constructions.adversarial import key_pattern_leak
from ..constructions.counting import observe_layernorms
from ..constructions.simulate import RunSummary, leak_rounding_allowance, observe
from ..constructions.transformer import Transformer
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
    #: None when every attention ancestor's observed error is ≤ η on this family and length; else
    #: the first ancestor that exceeded η (the node's bound then does not apply: its inputs need
    #: not be clean)
    premise: str | None = None

    @property
    def ratio(self) -> float | None:
        """observed / bound; None when the bound is 0 in float64 (underflow: an average-hard bound of
        ~1e-1303) while a rounding-level error is observed — no tightness can be read there (and
        JSON has no infinity)."""
        return self.observed / self.bound if self.bound > 0 else (0.0 if self.observed == 0 else None)

    @property
    def exceeds(self) -> bool:
        """Observed leak above the bound beyond the rounding allowance."""
        return self.observed > self.bound * (1 + self.allowance_rel)

    @property
    def ok(self) -> bool:
        """False only for a real violation: the bound exceeded while its premise holds."""
        return self.premise is not None or not self.exceeds


@dataclass
class Confirmation:
    """All comparisons, plus end-to-end agreement of the clean outputs with the hard model."""

    checks: list[NodeCheck] = field(default_factory=list)
    words: dict[str, int] = field(default_factory=dict)
    #: per family, (word, position) where the clean output differs from the hard model although
    #: every node's bound is ≤ η at that word's length: each one refutes the construction
    mismatches: dict[str, list] = field(default_factory=dict)
    #: per family, (word, position) where the outputs differ at a length where some node's bound
    #: exceeds η: exactness was not claimed there (too warm a temperature), so nothing is refuted
    unguarded_mismatches: dict[str, list] = field(default_factory=dict)
    max_output_deviation: float = 0.0

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks) and not any(self.mismatches.values())

    @property
    def premise_failures(self) -> int:
        """Checks whose node bound did not apply (an ancestor's bound exceeds η there)."""
        return sum(c.premise is not None for c in self.checks)

    def worst(self, node: str, family: str | None = None) -> NodeCheck | None:
        """The check with the largest tightness for ``node`` (and ``family`` if given)."""
        cs = [c for c in self.checks if c.node == node and (family is None or c.family == family)]
        return max(cs, key=_tightness) if cs else None

    def summary(self, word_chars: int | None = None) -> dict[str, dict]:
        """Per node: inputs tried, the worst check (largest observed/bound among the checks whose
        premise holds and whose rounding allowance is below 1 — where float64 resolves the bound;
        among all checks if none does), its bound and ratio, the rounding
        allowance (``None`` when it is infinite: no float64 rounding guarantee at that 1/τ, so the
        run can refute nothing; JSON has no infinity), violations, premise failures, tightness per
        family and the largest leak.  ``word_chars``: truncate the attaining word to this many
        characters."""
        out = {}
        for node in dict.fromkeys(c.node for c in self.checks):
            cs = [c for c in self.checks if c.node == node]
            guarded = [c for c in cs if c.premise is None] or cs
            # tightness is read where the observation resolves the bound (allowance below 1): an output
            # error of 1e-16 (float rounding) against a bound of 1e-100 says nothing about tightness
            guarded = [c for c in guarded if c.allowance_rel < 1] or guarded
            w = max(guarded, key=_tightness)
            word = w.word if word_chars is None or len(w.word) <= word_chars else w.word[:word_chars - 3] + "..."
            out[node] = {
                "inputs": sum(c.inputs for c in cs),
                "worst_observed": w.observed, "bound_there": w.bound, "ratio": w.ratio,
                "at_n": w.n, "family": w.family, "word": word, "row": w.row,
                "allowance_rel": w.allowance_rel if math.isfinite(w.allowance_rel) else None, "premise": w.premise,
                "violations": sum(not c.ok for c in cs),
                "premise_failures": sum(c.premise is not None for c in cs),
                "max_ratio_by_family": {f: max((c.ratio for c in guarded if c.family == f and c.ratio is not None),
                                               default=None)
                                        for f in dict.fromkeys(c.family for c in guarded)},
                "largest_leak": max(c.observed for c in cs),
                "largest_leak_at_n": max(cs, key=lambda c: c.observed).n,
            }
        return out


def _tightness(c: NodeCheck) -> float:
    """Sort key of a check's tightness: a check without a ratio (bound 0 in float64) ranks below all."""
    return -1.0 if c.ratio is None else c.ratio


def attention_ancestors(model: Transformer, bounds: Mapping[str, NodeBound]) -> dict[str, list[str]]:
    """Per bounded node, the bounded nodes it reads through the computation graph (its
    ancestors in ``model.meta["graph"]``), in graph order; none when the model has no graph."""
    g = model.meta.get("graph")
    if g is None:
        return {v: [] for v in bounds}
    import networkx as nx
    return {v: [a for a in nx.topological_sort(g) if a in bounds and a in nx.ancestors(g, v)]
            if v in g else [] for v in bounds}


class _Premises:
    """Premises of one confirmation: which node bounds exceed η at a given (n, 1/τ) (memoised,
    30 digits; decides whether a differing output refutes anything) and, per node, which attention
    ancestor was observed above η (decides whether the node's bound applies)."""

    def __init__(self, model: Transformer, bounds: Mapping[str, NodeBound], beta, eta):
        self.bounds, self.beta, self.eta = bounds, beta, eta
        self.anc = attention_ancestors(model, bounds)
        self._above: dict[tuple[str, int, float], bool] = {}

    def above(self, node: str, n: int, inv_tau: float) -> bool:
        key = (node, n, inv_tau)
        if key not in self._above:
            nb = self.bounds[node]
            self._above[key] = (nb.value(n, Fraction(inv_tau), beta_value=self.beta, eta_value=self.eta)
                                > mpmath.mpf(self.eta.numerator) / self.eta.denominator)
        return self._above[key]

    def failed(self, node: str, observed: dict[str, float]) -> str | None:
        """The first attention ancestor of ``node`` whose observed error (``{node: error}`` on the
        same family and length) exceeds η, or None."""
        e = float(self.eta)
        return next((a for a in self.anc.get(node, ()) if observed.get(a, 0.0) > e), None)

    def any_above(self, n: int, inv_tau: float) -> bool:
        """Some node's bound exceeds η at (n, 1/τ): exactness of the clean output is not claimed."""
        return any(self.above(v, n, inv_tau) for v in self.bounds)


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
            observed = ob.leak
            if nb.bound.quantity == "output":  # an output-error bound (THEORY §4b): observe the output
                observed, allow = ob.output_error, output_allowance(ob.allowance_rel, k, float(bd))
            checks.append(NodeCheck(node=node, family=family, n=k, inv_tau=ob.inv_tau, inputs=ob.inputs,
                                    observed=observed, bound=float(bd), allowance_rel=allow,
                                    word="".join(ob.word) if all(len(s) == 1 for s in ob.word) else " ".join(ob.word),
                                    row=ob.row))
    return checks


def output_allowance(weight_rel: float, n: int, bound: float) -> float:
    """Relative float64 allowance for an observed output error ``|soft − hard|`` of a Boolean-valued
    head: the soft weights are within relative ``weight_rel`` (the leak allowance), so the output
    (a convex mix of values in [0, 1]) is within ``weight_rel + (n + 4)·u`` absolutely; relative to
    ``bound`` (``inf`` for a zero bound: nothing can be refuted there)."""
    if bound <= 0:
        return float("inf")
    return (weight_rel + (n + 4) * 2.0 ** -53) / bound


#: how a certificate names each key pattern of :func:`key_patterns`
PATTERN_TEXT = {"ones": "b ≡ 1", "zeros": "b ≡ 0", "single": "one b = 1",
                "split": "b = 1 just before the query (v = 1) and from the value spacing on (v = 0)"}


def key_patterns(b) -> tuple[str, ...]:
    """The key patterns (:func:`softhard.constructions.adversarial.key_pattern`) that attain a
    selection bound ``b``: ``ones`` for a key ≡ 1 (Y, X never see key ≡ 0; also a value ≡ 1), ``split``
    for an output bound with a value spacing (THEORY §4c), ``single`` and ``ones``
    for an average-hard output bound (THEORY §4b; key ≡ 0 gives output 0 exactly), else ``ones``
    and ``zeros`` (THEORY §4 cases A and B)."""
    if b.value_const:  # value ≡ 1 (THEORY §4c): every word attains the bound at position 2
        return ("ones",)
    if b.value_spacing:  # value not the key (THEORY §4c): key and value set together
        return ("split",)
    if b.quantity == "output":
        return ("single", "ones")
    return ("ones",) if b.key_const else ("ones", "zeros")


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
            pats = key_patterns(nb.bound)
            ob = key_pattern_leak(model, node, key, k, it, patterns=pats, spacing=nb.bound.spacing,
                                  direction=g.nodes[node].get("direction", "past"), quantity=nb.bound.quantity,
                                  first=nb.bound.first, value_label=g.nodes[node].get("value"),
                                  value_spacing=nb.bound.value_spacing)
            bd = nb.value(k, Fraction(it), beta_value=beta, eta_value=eta)
            allow = leak_rounding_allowance(ob.score_scale, ob.key_dim, it, k + 1)
            if nb.bound.quantity == "output":
                allow = output_allowance(allow, k, float(bd))
            out.append(NodeCheck(node=node, family="adversarial-key", n=k, inv_tau=it, inputs=len(pats), observed=ob.leak,
                                 bound=float(bd), allowance_rel=allow,
                                 word=("one key = 1" if ob.pattern == "single" else PATTERN_TEXT["split"]
                                       if ob.pattern == "split" else
                                       f"key ≡ {1 if ob.pattern == 'ones' else 0}" if nb.bound.spacing == 1 or
                                       ob.pattern != "ones" else f"key = 1 every {nb.bound.spacing}"),
                                 row=ob.row))
    return out


def confirm(model: Transformer, bounds: Mapping[str, NodeBound], families: Mapping[str, Sequence[Sequence[str]]],
            inv_tau: float | Callable[[int], float], *, beta=Fraction(1, 4), eta=Fraction(1, 4),
            progress: Callable[[str], None] | None = None, key_pattern_ns: Sequence[int] = ()) -> Confirmation:
    """Run ``model`` on every input family and compare each node's worst leak with its bound.

    ``families``: ``{name: words}``; ``inv_tau``: number or function of n; ``key_pattern_ns``:
    lengths at which each head is also run alone on its attaining key patterns (family
    ``adversarial-key``; a head run alone on Boolean keys has its premise by construction).
    Returns a :class:`Confirmation`; ``.ok`` is False if any bound is exceeded beyond the rounding
    allowance where its premise holds (module docstring), or any clean output differs from the
    hard model at a length where every node's bound is ≤ η.
    """
    conf = Confirmation()
    prem = _Premises(model, bounds, beta, eta)
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
            checks = compare(s, bounds, name, beta=beta, eta=eta)
            seen: dict[int, dict[str, float]] = {}
            for ch in checks:
                seen.setdefault(ch.n, {})[ch.node] = ch.observed
            for ch in checks:
                ch.premise = prem.failed(ch.node, seen[ch.n])
                conf.checks.append(ch)
            conf.words[name] = s.words
            it_of = inv_tau if callable(inv_tau) else (lambda k, _v=float(inv_tau): _v)
            conf.mismatches[name], conf.unguarded_mismatches[name] = [], []
            for w, pos in s.mismatches:
                guarded = not prem.any_above(len(w), float(it_of(len(w))))
                (conf.mismatches if guarded else conf.unguarded_mismatches)[name].append((w, pos))
            conf.max_output_deviation = max(conf.max_output_deviation, s.max_output_deviation)
    return conf
