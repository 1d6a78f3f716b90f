"""A formula and its construction from the command line's formula options (``--regime``,
``--alphabet``, ``--eta``, ``--beta``, ``--comparator``, ``--eps-ln``): validated once into the one
:class:`~softhard.bounds.params.Params`, then built on the one pipeline
(:func:`softhard.solver.pipeline.build_formula`)."""

from __future__ import annotations

from fractions import Fraction
from typing import Callable

from ....bounds.params import Params
from ....constructions.errors import ParameterError
from ....constructions.parameters import check_beta, check_eps_ln, check_eta, to_fraction
from ....constructions.parse import FormulaSpec, load_spec
from ...pipeline import Construction, build_formula
from ..options import schedule_option


def formula_spec(args) -> FormulaSpec:
    """The formula argument (inline or a ``.ltl`` file) with ``--alphabet``."""
    return load_spec(args.formula, alphabet=args.alphabet)


def eps_ln_option(args) -> Fraction | None:
    """``--eps-ln`` as an exact Fraction ≥ 0, or None (not given).  Raises :class:`ParameterError`
    when it is given without ``--comparator ln`` (it would silently change nothing)."""
    if args.eps_ln is None:
        return None
    model, comparator = getattr(args, "model", None), getattr(args, "comparator", None)
    if model is not None or comparator != "ln":
        here = "--model" if model is not None else "--comparator " + (comparator or "default")
        raise ParameterError(f"argument --eps-ln: the layer-norm epsilon applies only to a formula with --comparator ln "
                             f"(here {here})")
    try:
        return check_eps_ln(to_fraction(args.eps_ln, "--eps-ln"))
    except ParameterError as e:
        raise ParameterError(f"--eps-ln: {e}") from None


def formula_params(args) -> Params:
    """The construction's :class:`Params` from the options; a bad ``--beta``/``--eta`` is named as
    the option (``argument --eta: eta must satisfy ...``)."""
    checked = {}
    for opt, check in (("--beta", check_beta), ("--eta", check_eta)):
        try:
            checked[opt] = check(to_fraction(getattr(args, opt[2:]), opt))
        except ParameterError as e:
            raise ParameterError(f"argument {opt}: {str(e).removeprefix(f'{opt}: ')}") from None
    eps = eps_ln_option(args)
    kind, _ = schedule_option(args)
    return Params(regime=args.regime, beta=checked["--beta"], eta=checked["--eta"], comparator=args.comparator,
                  eps_ln=0 if eps is None else eps, construction=getattr(args, "construction", None),
                  schedule=kind)


def schedule_inv_tau(args, c: Construction) -> Callable[[int], float] | None:
    """For ``run`` and ``confirm``: with ``--schedule lin:S|log:S`` the float inverse temperature of a
    numeric run at length n, ``S·g(n)`` (THEORY §9; ``Params.inv_tau_at``); None without a
    non-constant schedule.  Raises :class:`ParameterError` when S is missing (a numeric run needs a
    value; ``certify --find-tau`` finds one) or ``--tau`` is given too."""
    kind, s = schedule_option(args)
    if kind is None:
        return None
    if s is None:
        raise ParameterError(f"argument --schedule: a run needs the constant, e.g. --schedule {kind}:2 "
                             f"('certify --schedule {kind} --find-tau' finds the smallest that is proved)")
    if getattr(args, "tau", None) is not None:
        raise ParameterError("give either --tau (one temperature) or --schedule (one per length), not both")
    return lambda k: c.params.inv_tau_at(k, s)


def formula_construction(args, spec: FormulaSpec | None = None, *, schedules: bool = False) -> Construction:
    """The formula's construction (``spec``, default the formula argument) with the options'
    parameters.  ``schedules``: the command accepts ``--schedule`` (certify); elsewhere a schedule
    other than const is bad input (one line)."""
    params = formula_params(args)
    if params.schedule is not None and not schedules:
        raise ParameterError("--schedule lin/log applies to certify, bound, run and confirm (THEORY §9); this command "
                             "runs one constant tau")
    return build_formula(spec or formula_spec(args), params)
