"""``softhard certify`` of a formula (the formula kind of :mod:`.certify`): the formula argument or
the embedded default example, its construction and :func:`softhard.solver.certificate.certify`."""

from __future__ import annotations

from ....constructions.errors import ParameterError
from ....constructions.parse import load_spec, parse_spec
from ...certificate import certify
from ...certjson import check_output_path
from ..options import schedule_option
from .certify import check_lengths
from .console import progress
from .formula import eps_ln_option, formula_construction

#: certified when ``softhard certify`` is given no source (Tomita 4: binary words without 000)
DEFAULT_EXAMPLE = """\
// Embedded default example: Tomita 4, binary strings without the factor 000.
name: tomita4
description: Tomita 4, binary strings without the factor 000 (embedded default)
alphabet: 0 1
formula:
     !(0 & Y 0 & Y Y 0)
  & H !(0 & Y 0 & Y Y 0)
"""


def certify_formula(args) -> dict:
    """A formula's certificate (THEORY §8): the formula argument, or :data:`DEFAULT_EXAMPLE`."""
    if args.formula is None:
        spec = parse_spec(DEFAULT_EXAMPLE, source="<embedded tomita4>")
    else:  # the input first: a missing file or a syntax error is the first thing to hear about
        spec = load_spec(args.formula, alphabet=args.alphabet)
    c = formula_construction(args, spec, schedules=True)
    kind, s_const = schedule_option(args)
    if s_const is not None:  # --schedule KIND:S states the constant: 1/tau(n) = S*g(n) (THEORY §9)
        if args.tau is not None or args.find_tau:
            raise ParameterError("--schedule KIND:S states the schedule's constant; do not also give --tau or "
                                 "--find-tau (give --schedule KIND --find-tau to search S)")
        args.tau = 1 / s_const
    check_lengths(args)
    if kind is not None and args.range_only:
        raise ParameterError("--range-only does not apply to --schedule: a schedule certificate is for all n")
    if args.range_only and args.regime == "T":
        raise ParameterError("--range-only applies to regimes U and P (regime T certificates are always for "
                             "n in [n-min, n-max])")
    # --find-tau also finds the largest certifiable layer-norm epsilon unless --eps-ln fixes it
    tune = ("eps_ln",) if args.find_tau and eps_ln_option(args) is None and c.params.eps_ln is not None else ()
    if args.output:  # fail before the work if the output cannot be written
        check_output_path(args.output, force=args.force)
    with progress("certifying") as say:
        return certify(c, n_max=args.n_max, n_lo=args.n_min, tau=args.tau, find_tau=args.find_tau,
                       all_n=False if args.range_only else None, timeout_s=args.timeout, numeric=not args.no_numeric,
                       progress=say, tune=tune, max_positions=args.max_positions)
