"""One typed, immutable parameter object for every construction: :class:`Params`.

:class:`Params` holds every parameter a construction, a bound or a claim depends on, validated once
where it enters (command line, Python API, certificate), and carried inside the
:class:`~softhard.solver.pipeline.Construction`.  :meth:`Params.substitution` is the one place
where parameters are substituted into SymPy expressions.  The fields and their meanings are listed
in the class docstring (``help(softhard.Params)``).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
from dataclasses import dataclass
from fractions import Fraction

import sympy as sp

from ..constructions.errors import ParameterError
from ..constructions.parameters import (DEFAULT_BETA, DEFAULT_ETA, check_beta, check_comparator, check_construction,
                                        check_eps_ln, check_eta, check_keywords, check_regime, check_schedule,
                                        parse_schedule, to_fraction)
from .cache import subs as cached_subs
from .core import beta as beta_sym
from .core import eps_ln as eps_ln_sym
from .core import epsilon as epsilon_sym
from .core import eta as eta_sym
from .core import n as n_sym
from .core import tau as tau_sym


def check_epsilon(epsilon) -> Fraction:
    """ε as an exact Fraction > 0; raise :class:`ParameterError` otherwise (THEORY §6)."""
    e = to_fraction(epsilon, "epsilon")
    if e <= 0:
        raise ParameterError(f"epsilon must be > 0 (the output tolerance), got {e}")
    return e


def check_inv_tau_exact(inv_tau) -> Fraction:
    """1/τ as an exact Fraction > 0; raise :class:`ParameterError` otherwise."""
    x = to_fraction(inv_tau, "inv_tau")
    if x <= 0:
        raise ParameterError(f"1/tau must be > 0, got {x}")
    return x


def _rational(x: Fraction) -> sp.Rational:
    return sp.Rational(x.numerator, x.denominator)


@dataclass(frozen=True)
class Params:
    """Every parameter of a construction, validated on creation; immutable (:meth:`with_` copies).

    Names and meanings (never mixed):

    * ``regime``: "T" (bounded PE j/n, τ(n) shrinks with n), "U" (unbounded PE j, one τ), "P" (U
      plus j², (−1)^j for parity) — THEORY §4, §5; ``None`` for model files and Tracr (their own PE);
    * ``beta``: β, the regime-T tie-break weight, 0 < β ≤ 1/4 (THEORY §4); ``None`` where unused;
    * ``eta``: η, the Boolean rounding margin of formula clean-ups, 0 < η < 1/2 (THEORY §3);
    * ``epsilon``: ε, the output tolerance of a model-file or Tracr construction, ε > 0 (THEORY §6);
    * ``eps_ln``: ε_LN ≥ 0 of layer-norm comparators (THEORY §5 (a)); ``None`` when there is none;
    * ``comparator``: how count comparisons are built, "ln" | "head" | "pe" (``None``: no comparison);
    * ``inv_tau``: 1/τ > 0, the inverse temperature (``None`` until a run or a search chooses it);
    * ``construction``: how P/F selections (key = value) are built, "auto" | "unique" | "average"
      (THEORY §4b; ``None``: auto);
    * ``schedule``: the temperature schedule, "const" | "lin" | "log" (THEORY §9; ``None``: const).
      Under a schedule ``inv_tau`` is its constant S: ``1/τ(n) = S`` (const), ``S·n`` (lin),
      ``S·ln(n+1)`` (log, "log-length scaling"); :meth:`substitution` puts ``τ = 1/(S·g(n))`` into
      every bound.  The kind only (``"log"``); S goes to ``certify(..., inv_tau=S)``.

    Numbers may be given as ints, Fractions or exact strings (``"1/4"``, ``"0.25"``); they are
    stored as :class:`fractions.Fraction` (a float through its decimal string: 0.1 is 1/10).

    Raises :class:`ParameterError` naming the parameter: a value out of range or not a number, an
    unknown keyword (``Params(bogus=1)``: the message lists the accepted ones), more positional
    arguments than fields or a field given twice.
    """

    regime: str | None = "T"
    beta: Fraction | None = DEFAULT_BETA
    eta: Fraction | None = DEFAULT_ETA
    epsilon: Fraction | None = None
    eps_ln: Fraction | None = None
    comparator: str | None = None
    inv_tau: Fraction | None = None
    construction: str | None = None
    schedule: str | None = None

    def __post_init__(self) -> None:
        if self.regime is not None:
            check_regime(self.regime)
        set_ = object.__setattr__
        set_(self, "beta", None if self.beta is None else check_beta(self.beta))
        set_(self, "eta", None if self.eta is None else check_eta(self.eta))
        set_(self, "epsilon", None if self.epsilon is None else check_epsilon(self.epsilon))
        set_(self, "eps_ln", None if self.eps_ln is None else check_eps_ln(self.eps_ln))
        if self.comparator is not None:
            check_comparator(self.comparator)
        set_(self, "inv_tau", None if self.inv_tau is None else check_inv_tau_exact(self.inv_tau))
        if self.construction is not None:
            check_construction(self.construction)
        if self.schedule is not None:
            kind, s = parse_schedule(self.schedule)
            if s is not None:  # the command line's "log:S": S is a temperature, not part of the construction
                raise ParameterError(f"schedule takes the kind only ({kind!r}); give S to certify(..., inv_tau=S) "
                                     f"(on the command line: --schedule {self.schedule})")
            set_(self, "schedule", None if kind == "const" else kind)  # one spelling of the constant schedule

    @property
    def schedule_kind(self) -> str:
        """``"const"``, ``"lin"`` or ``"log"`` (THEORY §9)."""
        return self.schedule or "const"

    def schedule_factor(self) -> sp.Expr:
        """``g(n)`` of the schedule ``1/τ(n) = S·g(n)``: 1, n or ln(n+1) (a SymPy expression in n;
        THEORY §9)."""
        return schedule_factor(self.schedule_kind)

    def inv_tau_at(self, n_value: int, inv_tau: Fraction | float | None = None) -> float:
        """The float inverse temperature a numeric run uses at length ``n_value``: ``S·g(n)`` with S the
        argument (else :attr:`inv_tau`).  For numeric runs only, never for proofs."""
        x = float(inv_tau if inv_tau is not None else self.inv_tau)
        k = self.schedule_kind
        return x if k == "const" else x * n_value if k == "lin" else x * math.log1p(n_value)

    @property
    def tau(self) -> Fraction | None:
        """τ = 1/inv_tau, or None."""
        return None if self.inv_tau is None else 1 / self.inv_tau

    @property
    def tolerance(self) -> Fraction:
        """The tolerance an output must meet: ε for models and Tracr, else η."""
        return self.epsilon if self.epsilon is not None else self.eta

    def with_(self, **changes) -> Params:
        """A copy with ``changes`` (validated); ``tau=`` may be given instead of ``inv_tau=``."""
        if "tau" in changes:
            t = changes.pop("tau")
            changes["inv_tau"] = None if t is None else 1 / to_fraction(t, "tau")
        return dataclasses.replace(self, **changes)

    def exact(self) -> dict[str, Fraction]:
        """The numeric parameters that are set (not ``inv_tau``), by their symbol's name."""
        out = {}
        for k in ("beta", "eta", "epsilon", "eps_ln"):
            v = getattr(self, k)
            if v is not None:
                out[k] = v
        return out

    def substitution(self, *, inv_tau: Fraction | None = None, keep: tuple[sp.Symbol, ...] = ()
                     ) -> dict[sp.Symbol, sp.Rational]:
        """The one substitution of parameters into SymPy expressions: every set parameter's symbol
        (β, η, ε, ε_LN) and τ = 1/inv_tau (the argument, else :attr:`inv_tau`) mapped to exact
        rationals, except the symbols in ``keep`` (a search's free parameter)."""
        out = {}
        for sym, v in ((beta_sym, self.beta), (eta_sym, self.eta), (epsilon_sym, self.epsilon),
                       (eps_ln_sym, self.eps_ln)):
            if v is not None and sym not in keep:
                out[sym] = _rational(v)
        x = inv_tau if inv_tau is not None else self.inv_tau
        if x is not None and tau_sym not in keep:
            out[tau_sym] = _rational(1 / Fraction(x)) / self.schedule_factor()  # τ(n) = 1/(S·g(n))
        return out

    def substitute(self, expr, *, inv_tau: Fraction | None = None, keep: tuple[sp.Symbol, ...] = ()) -> sp.Expr:
        """``expr`` with :meth:`substitution` applied."""
        return cached_subs(expr, self.substitution(inv_tau=inv_tau, keep=keep))

    def to_json(self) -> dict:
        """Exact strings (``"1/4"``) for the numbers that are set; ``None`` values left out."""
        out: dict = {} if self.regime is None else {"regime": self.regime}
        for k in ("beta", "eta", "epsilon", "eps_ln", "inv_tau"):
            v = getattr(self, k)
            if v is not None:
                out[k] = f"{v.numerator}/{v.denominator}" if v.denominator != 1 else str(v.numerator)
        if self.comparator is not None:
            out["comparator"] = self.comparator
        if self.schedule is not None:
            out["schedule"] = self.schedule
        return out


#: the fields of :class:`Params`, as keywords: what its constructor accepts
PARAM_FIELDS = tuple(f.name for f in dataclasses.fields(Params))
_dataclass_init = Params.__init__
_init_signature = inspect.signature(_dataclass_init)


@functools.wraps(_dataclass_init)
def _checked_init(self, *args, **kwargs) -> None:
    """The dataclass constructor behind one check of its arguments (unknown keyword, too many
    positional arguments, a field given twice: :class:`ParameterError`, not ``TypeError``)."""
    check_keywords("Params", kwargs, PARAM_FIELDS)
    try:
        _init_signature.bind(self, *args, **kwargs)
    except TypeError as e:
        raise ParameterError(f"Params: {e} (fields: {', '.join(PARAM_FIELDS)})") from None
    _dataclass_init(self, *args, **kwargs)


Params.__init__ = _checked_init


def schedule_factor(kind: str) -> sp.Expr:
    """``g(n)`` of ``1/τ(n) = S·g(n)``: 1 (const), n (lin), ln(n+1) (log); THEORY §9.  Raises
    :class:`ParameterError` for an unknown kind."""
    check_schedule(kind)
    return sp.Integer(1) if kind == "const" else n_sym if kind == "lin" else sp.log(n_sym + 1)
