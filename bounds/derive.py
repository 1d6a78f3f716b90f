"""Per-node bounds of a computation graph, their numeric evaluation, and required temperatures.

``derive(g, regime)`` returns one :class:`NodeBound` per attention node of the graph produced by
:func:`softhard.constructions.compile.compile_formula`.  The composed claim for a logic is the
conjunction "every node's leak ≤ η": then every clean-up ``round_η`` is exact and the soft
transformer's output equals the hard one (THEORY §3).

Numbers: the symbolic expressions are exact; :func:`evaluate` uses mpmath at 50 significant
digits plus what the magnitudes of the parameters can cancel, and is for reporting and numeric
comparison only, never for proofs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

import mpmath
import networkx as nx
import numpy as np
import sympy as sp

from ..constructions.errors import RepresentationError
from . import counting  # noqa: F401  (registers the counting bound rules)
from . import selection as S
from .cache import cached_bound, compile_expr, latex_of
from .cache import subs as cached_subs
from .core import Bound, beta, eta, n, tau
from .fastfn import Unsupported
from .params import Params
from .rules import BOUND_RULES, bound_rule

DPS = 50


@dataclass
class NodeBound:
    """Bound of one attention node: the node's id, operator, layer and its :class:`Bound`.

    ``fixed``: exact values of parameters other than τ, β, η that the bound mentions (e.g.
    ``{"eps_ln": Fraction(...)}``), used by :meth:`value`; set by the pipeline from the
    construction's parameters.
    """

    node: str
    operator: str
    layer: int
    formula: str
    bound: Bound
    fixed: dict = field(default_factory=dict)

    @property
    def leak(self) -> sp.Expr:
        return self.bound.leak

    def value(self, n_value: int, inv_tau, beta_value=Fraction(1, 4), eta_value=Fraction(1, 4)) -> mpmath.mpf:
        """High-precision value of the leak bound at length ``n_value``; 0 below ``n_min``
        (there only BOS is attendable by the worst-case query, so the leak is 0 exactly)."""
        if n_value < self.bound.n_min:
            return mpmath.mpf(0)
        return evaluate(fix(self.leak, self.fixed), n_value=n_value, inv_tau=inv_tau, beta_value=beta_value,
                        eta_value=eta_value)

    def rounding_allowance(self, n_value: int, inv_tau) -> float:
        """The bound's extra relative float64 allowance (``Bound.rounding``) at ``n``, ``1/τ``; 0 if none."""
        r = self.bound.rounding
        if r is None or n_value < self.bound.n_min:
            return 0.0
        return float(evaluate(fix(r, self.fixed), n_value=n_value, inv_tau=inv_tau))


def fix(expr: sp.Expr, fixed: dict) -> sp.Expr:
    """``expr`` with the named parameters of ``fixed`` (``{name: Fraction}``) substituted exactly."""
    if not fixed:
        return expr
    return cached_subs(expr, {sp.Symbol(k, positive=True): sp.Rational(Fraction(v).numerator, Fraction(v).denominator)
                              for k, v in fixed.items()})


def in_tau(b: Bound, fixed: Params | dict | None = None) -> sp.Expr:
    """The bound's error expression with its search parameter renamed to τ and the other fixed
    parameters (a :class:`Params`, or ``{name: value}``) substituted, so the τ-based numeric tools
    (:func:`required_inv_tau`, ``find_inv_tau``) compute ``1/parameter`` for any parameter (e.g.
    ``1/ε_LN``)."""
    if isinstance(fixed, Params):
        fixed = fixed.exact()
    fixed = {k: v for k, v in (fixed or {}).items() if k != str(b.parameter)}
    e = fix(b.leak, fixed)
    return e if b.parameter == tau else e.subs(b.parameter, tau)


@bound_rule("select")
def _selection_rule(g: nx.DiGraph, v: str, regime: str) -> Bound:
    a = g.nodes[v]
    if a.get("attention") == "average":  # THEORY §4b: output-error bound of the AHA head
        return average_selection_bound(regime)
    if a.get("average_ok") and regime in ("U", "P"):  # value = key: judged on the output (THEORY §4b)
        p = int(a.get("key_first", 1))
        return cached_bound("unique-output-U", [p], lambda: S.unique_output_bound_U(p))
    # value ≡ 1, or key = 1 positions closer than the value spacing agree: judged on the output (THEORY §4c);
    # each output bound is below the leak bound for every n and τ, so it is always the cheaper one
    if a.get("value_const") and a.get("key_const"):
        return cached_bound("value-const", [regime], lambda: S.value_const_bound(regime))
    dv, p, d = int(a.get("value_spacing", 1)), int(a.get("key_first", 1)), int(a.get("key_spacing", 1))
    if dv >= 2 and (regime == "T" or min(dv, p) >= 2):
        return cached_bound("values", [regime, d, dv, p], lambda: S.values_bound(regime, d, dv, p))
    return unique_selection_bound(g, v, regime)


def average_selection_bound(regime: str) -> Bound:
    """The average-hard (AHA) output bound of a selection (THEORY §4b; :func:`selection.average_bound`),
    derived once per regime and reused (:mod:`.cache`: building it costs ~0.08 s of SymPy).  Raises
    ``ValueError`` for a regime other than ``"T"``."""
    return cached_bound("average", [regime], lambda: S.average_bound(regime))


def unique_selection_bound(g: nx.DiGraph, v: str, regime: str) -> Bound:
    """The unique-hard (UHA) leak bound of selection ``v`` (THEORY §4), whatever ``v`` is built as."""
    # regime P (THEORY §5 parity PE) builds its selections exactly as regime U
    r, kc, d = "U" if regime == "P" else regime, bool(g.nodes[v].get("key_const")), int(g.nodes[v].get("key_spacing", 1))
    return cached_bound("selection", [r, kc, d], lambda: S.selection_bound(r, key_const=kc, spacing=d))


def alternative_bound(g: nx.DiGraph, v: str, regime: str) -> tuple[str, Bound] | None:
    """For a selection whose construction was chosen (``average_ok``, THEORY §4b): the construction
    *not* chosen and its bound — ``("unique", UHA leak bound)`` for an average node, ``("average",
    AHA output bound)`` for a unique one in regime T; None otherwise."""
    a = g.nodes[v]
    if a.get("op") != "select" or not a.get("average_ok"):
        return None
    if a.get("attention") == "average":
        return "unique", unique_selection_bound(g, v, regime)
    return ("average", average_selection_bound(regime)) if regime == "T" else None


def derive(g: nx.DiGraph, regime: str) -> dict[str, NodeBound]:
    """Per attention node of ``g`` (and per other node whose op has a rule, e.g. a layer-norm
    comparator): its bound (THEORY §4 selections, §5 counting via :mod:`softhard.bounds.counting`;
    other kinds via :data:`softhard.bounds.rules.BOUND_RULES`).  Returns ``{node id: NodeBound}`` in topological order;
    nodes whose rule returns None (exact nodes) are omitted.  Raises ``ValueError`` for an unknown
    regime or an attention node without a rule.
    """
    out: dict[str, NodeBound] = {}
    for v in nx.topological_sort(g):
        a = g.nodes[v]
        rule = BOUND_RULES.get(a["op"])
        if a["kind"] != "attn" and rule is None:
            continue
        if rule is None:
            raise ValueError(f"node {v!r}: no bound rule for attention op {a['op']!r}")
        b = rule(g, v, regime)
        if b is None:
            continue
        out[v] = NodeBound(node=v, operator=a.get("operator", a["op"]), layer=a["layer"],
                           formula=a.get("formula", v), bound=b)
    return out


def substitute(expr: sp.Expr, *, beta_value=None, eta_value=None, tau_value=None) -> sp.Expr:
    """Substitute exact parameter values (Fractions/ints/strings) into ``expr``."""
    subs = {}
    for sym, val in ((beta, beta_value), (eta, eta_value), (tau, tau_value)):
        if val is not None:
            f = Fraction(val)
            subs[sym] = sp.Rational(f.numerator, f.denominator)
    return expr.subs(subs)


@lru_cache(maxsize=256)
def _lambdified(expr: sp.Expr):
    try:  # straight-line code from the expression tree: no SymPy printer (ISSUE 16)
        return compile_expr(expr, [n, tau, beta, eta], "mpmath")
    except Unsupported:
        return sp.lambdify([n, tau, beta, eta], expr, modules="mpmath")


@lru_cache(maxsize=256)
def _constant_bits(expr: sp.Expr) -> int:
    """Largest binary magnitude ``|log2 c|`` of a rational constant of ``expr`` (e.g. a fixed ε_LN)."""
    return max((abs(int(r.p).bit_length() - int(r.q).bit_length()) for r in expr.atoms(sp.Rational)), default=0)


def _bits(x) -> int:
    """``|log2 x|`` to within one (0 for 0)."""
    if isinstance(x, (int, Fraction)) and not isinstance(x, bool):
        f = Fraction(x)
        return 0 if f == 0 else abs(abs(f.numerator).bit_length() - f.denominator.bit_length())
    m = mpmath.mag(_mpf(x))
    return 0 if not mpmath.isfinite(m) else abs(int(m))


def evaluate(expr: sp.Expr, *, n_value, tau_value=None, inv_tau=None, beta_value=Fraction(1, 4),
             eta_value=Fraction(1, 4)) -> mpmath.mpf:
    """High-precision value of ``expr`` (mpmath) at the given parameters, to about :data:`DPS` digits.

    Give ``tau_value`` or ``inv_tau`` (numbers or Fractions).  The working precision is
    :data:`DPS` digits plus the binary magnitudes of n, τ, β, η and of the constants of ``expr``:
    the bounds cancel terms such as ``1 − exp(−1/(4nτ))`` or ``(n − 1)/n``, which at n = 10^60
    (or β = 10^-300, 1/τ = 10^-300) lose that many digits (at 50 digits they became 0, then
    a ZeroDivisionError).  For reporting and numeric comparison only; proofs go through
    :mod:`softhard.solver`.
    """
    try:
        return _evaluate(expr, n_value, tau_value, inv_tau, beta_value, eta_value)
    except TypeError:  # an unhashable argument (e.g. a NumPy array): evaluated without the memo
        return _evaluate.__wrapped__(expr, n_value, tau_value, inv_tau, beta_value, eta_value)


@lru_cache(maxsize=4096, typed=True)  # (typed: a float and an equal Fraction set different precisions, see _bits)
def _evaluate(expr: sp.Expr, n_value, tau_value, inv_tau, beta_value, eta_value) -> mpmath.mpf:
    """:func:`evaluate`, memoised: a pure function of its arguments (the working precision is set
    here, not inherited), and a confirmation asks for the same node bound at the same length and
    1/τ once per family (about half of its ~0.6 ms evaluations were repeats; ISSUE 16)."""
    t_in = inv_tau if inv_tau is not None else tau_value
    extra = _bits(n_value) + _bits(t_in) + _bits(beta_value) + _bits(eta_value) + _constant_bits(expr)
    with mpmath.workprec(mpmath.libmp.dps_to_prec(DPS) + extra):
        if inv_tau is not None:
            t = 1 / _mpf(inv_tau)
        else:
            t = _mpf(tau_value)
        return _lambdified(expr)(_mpf(n_value), t, _mpf(beta_value), _mpf(eta_value))


def _mpf(x) -> mpmath.mpf:
    if isinstance(x, Fraction):
        return mpmath.mpf(x.numerator) / x.denominator
    if isinstance(x, sp.Rational):
        return mpmath.mpf(int(x.p)) / int(x.q)
    return mpmath.mpf(x)


#: largest 1/τ :func:`required_inv_tau` returns: numeric runs hold 1/τ as a float64 (the command
#: line's --tau range is [1e-300, 1e300] for the same reason)
MAX_INV_TAU = 10**300


def required_inv_tau(expr: sp.Expr, *, n_value, eta_value=Fraction(1, 4), beta_value=Fraction(1, 4),
                     rel_tol=1e-12) -> mpmath.mpf:
    """Smallest ``1/τ`` with ``expr(n, τ) ≤ η`` (``expr`` decreasing in 1/τ), to relative ``rel_tol``.

    Returns ``hi`` (an mpmath number) with ``expr(hi) ≤ η`` and ``expr(lo) > η`` at some
    ``lo ≥ hi·(1 − rel_tol)``, both sides evaluated by :func:`evaluate` (50 digits and more).
    Method: a float64 bisection (:func:`_float_inv_tau`, ~60 evaluations of a NumPy lambdified
    ``expr``) finds the crossing, and one high-precision polish evaluates the two ends of a
    ``rel_tol`` bracket around it by :func:`evaluate`; only if the float64 value misplaced the
    crossing (cancellation, overflow: the polish fails) does the 50-digit bisection run over the
    whole range (:func:`_mp_inv_tau`), as before (ISSUE 16).

    Numeric (not a proof): the certified value comes from :mod:`softhard.solver` (Z3 and ball
    arithmetic at the value found).  Returns 0 when the bound is ≤ η for every τ.  Raises
    :class:`RepresentationError` when it exceeds :data:`MAX_INV_TAU` (e.g. n = 10^300 in
    regime T, or β = 10^-300).
    """
    target = _mpf(eta_value)

    def f(x):
        return evaluate(expr, n_value=n_value, inv_tau=x, beta_value=beta_value, eta_value=eta_value)

    x0 = _float_inv_tau(expr, n_value, eta_value, beta_value, rel_tol)
    if x0 is not None:
        with mpmath.workdps(DPS):
            hi = mpmath.mpf(x0)
            lo = hi * (1 - mpmath.mpf(rel_tol))
            if f(hi) <= target and f(lo) > target:
                return hi
    return _mp_inv_tau(f, target, n_value, rel_tol)


@lru_cache(maxsize=256)
def _lambdified_float(expr: sp.Expr):
    try:
        return compile_expr(expr, [n, tau, beta, eta], "float")
    except Unsupported:
        return sp.lambdify([n, tau, beta, eta], expr, modules="numpy")


def _float_inv_tau(expr: sp.Expr, n_value, eta_value, beta_value, rel_tol: float) -> float | None:
    """float64 bisection for :func:`required_inv_tau`: the smallest 1/τ found with
    ``expr ≤ η`` whose lower neighbour at relative ``rel_tol / 4`` is not; ``None`` when float64
    cannot decide (an evaluation raises, no 1/τ up to :data:`MAX_INV_TAU` gives a finite value
    ``≤ η``, or ``expr ≤ η`` already at 1/τ = 10^-30: the 0 answer is left to the 50-digit path).
    A NaN or +inf value counts as above η: +inf is, and a NaN (0·inf, inf − inf where float64
    overflows, e.g. a composed bound's ``e^{2σ/τ}`` terms at small 1/τ) can only misplace the
    crossing, which the caller's 50-digit polish then rejects (and falls back to the 50-digit
    bisection).  Before, a NaN anywhere on the way sent the bound to that bisection (~2.5 s for a
    depth-3 composed bound: notebooks/05, ISSUE 16).  Below 1/τ = 1 the bracket is found by
    halving (a bound that is NaN in float64 at 1/τ = 10^-30 still gets its float64 crossing)."""
    try:
        g, nv, b, e = _lambdified_float(expr), np.float64(n_value), np.float64(beta_value), np.float64(eta_value)
    except (TypeError, ValueError, OverflowError):
        return None

    def ok(x: float) -> bool | None:
        with np.errstate(all="ignore"):
            try:
                v = float(g(nv, np.float64(1.0) / x, b, e))
            except (TypeError, ValueError, ZeroDivisionError, OverflowError):
                return None
        return bool(v <= e)  # False for NaN and +inf: above η (see the docstring)

    lo, hi = 0.0, 1.0
    while True:
        r = ok(hi)
        if r is None:
            return None
        if r:
            break
        lo, hi = hi, hi * 2
        if hi > MAX_INV_TAU:
            return None
    if lo == 0.0:  # ≤ η already at 1/τ = 1: halve down to the crossing (a schedule's S is often < 1)
        while True:
            if hi < 1e-30:
                return None  # the 0 answer is left to the 50-digit path
            r = ok(hi / 2)
            if r is None:
                return None  # an evaluation raised
            if not r:
                lo = hi / 2
                break
            hi /= 2
    step = rel_tol / 4
    while hi - lo > step * hi:
        mid = (lo + hi) / 2
        if mid <= lo or mid >= hi:
            break
        r = ok(mid)
        if r is None:
            return None
        if r:
            hi = mid
        else:
            lo = mid
    return hi


def _mp_inv_tau(f, target, n_value, rel_tol) -> mpmath.mpf:
    """The 50-digit bisection of :func:`required_inv_tau` over the whole range (its fallback)."""
    with mpmath.workdps(DPS):
        # the bound decreases in 1/τ: one evaluation at the largest representable 1/τ decides whether
        # any is enough (before, ~1000 doublings of 1/τ, each a slow evaluation at a huge n)
        if f(mpmath.mpf(MAX_INV_TAU)) > target:
            n_txt = f"{n_value:.6g}" if abs(n_value) < 1e300 else mpmath.nstr(mpmath.mpf(n_value), 6)  # an int may exceed float
            raise RepresentationError(f"at n = {n_txt} the bound needs 1/tau > 1e300, beyond what numeric runs "
                                      f"can represent (1/tau is a float64 there); a smaller n, a larger gap, "
                                      f"beta or eta needs less")
        lo, hi = mpmath.mpf(0), mpmath.mpf(1)
        while f(hi) > target:  # ends at MAX_INV_TAU at the latest (checked above)
            lo, hi = hi, min(hi * 2, mpmath.mpf(MAX_INV_TAU))
        if lo == 0 and f(mpmath.mpf(10) ** -30) <= target:
            return mpmath.mpf(0)
        while hi - lo > rel_tol * hi:
            mid = (lo + hi) / 2
            if f(mid) > target:
                lo = mid
            else:
                hi = mid
        return hi


@lru_cache(maxsize=512)  # nodes of one formula share bounds; printing one costs ~0.2 s
def latex(expr: sp.Expr) -> str:
    """LaTeX of a bound with the field's symbols (τ, β, η)."""
    return latex_of(expr, lambda: sp.latex(expr, symbol_names={tau: r"\tau", beta: r"\beta", eta: r"\eta"}))


def required_inv_tau_many(expr: sp.Expr, n_values, *, eta_value=Fraction(1, 4), beta_value=Fraction(1, 4),
                          iterations: int = 200):
    """Vectorised float64 version of :func:`required_inv_tau` for many lengths at once.

    Returns a NumPy array (same shape as ``n_values``) of the smallest ``1/τ`` with
    ``expr(n, τ) ≤ η`` (bisection on a log scale; 0 where the bound is ≤ η for every τ).
    Numeric only — for choosing temperatures in numeric runs, never for proofs.
    """
    f = sp.lambdify([n, tau, beta, eta], expr, modules="numpy")
    ns = np.asarray(n_values, dtype=np.float64)
    b, e = float(beta_value), float(eta_value)

    def ok(x):
        with np.errstate(all="ignore"):
            v = np.asarray(f(ns, 1.0 / x, b, e), dtype=np.float64)
        return np.where(np.isnan(v), False, v <= e)

    lo = np.full(ns.shape, 1e-12)
    hi = np.full(ns.shape, 1.0)
    for _ in range(200):
        bad = ~ok(hi)
        if not bad.any():
            break
        hi = np.where(bad, hi * 4, hi)
    always = ok(lo)
    for _ in range(iterations):
        mid = np.sqrt(lo * hi)
        good = ok(mid)
        hi = np.where(good, mid, hi)
        lo = np.where(good, lo, mid)
        if np.all(hi / lo < 1 + 1e-13):
            break
    return np.where(always, 0.0, hi)

