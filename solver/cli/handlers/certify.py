"""``softhard certify``: one command for every kind of source, one path (docs/certificates.md).

:func:`handle` picks the source's kind — a formula (inline, a ``.ltl`` file, or the embedded
default example :data:`DEFAULT_EXAMPLE`), a model file (``--model FILE``) or a Tracr export
(``--tracr MODEL``) — and calls that kind's certify from :data:`CERTIFY`: it checks the kind's
options, builds the construction and returns the certificate (formula:
:func:`softhard.solver.certificate.certify`; model, in :mod:`.certify_model`:
:func:`softhard.solver.models.build_model_construction` and
:func:`~softhard.solver.models.certify_model`; Tracr, in :mod:`.certify_tracr`:
:func:`softhard.solver.tracr.certify_tracr`).
Then, for every kind alike: the certificate is written (``-o``), printed (``--json``, or the
kind's summary from :mod:`.certificates`), and the exit status is 0 when every claim is proved and
the numeric confirmation agrees, else 1.
"""

from __future__ import annotations

import json
import sys
from typing import Callable

from importlib import import_module

from ....constructions.errors import NotSimulable, ParameterError
from ....constructions.parse import load_spec, parse_spec
from ...certificate import certify
from ...certjson import check_output_path, write_certificate
from ..options import EXIT_FAIL
from .certificates import print_formula_certificate, print_model_certificate, print_tracr_certificate
from .console import certified_exit, progress
from .formula import eps_ln_option, formula_construction, schedule_option
from .jobs import BATCH, certify_jobs, is_batch

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


def source_kind(args) -> str:
    """``"formula"``, ``"model"`` or ``"tracr"``: the one source given (no source: the formula
    kind's default example); each kind's own options refused with another."""
    if (args.tracr or args.model) and getattr(args, "schedule", None) is not None:
        raise ParameterError("--schedule is for formulas (THEORY §9); model files and Tracr exports use one tau")
    if args.tracr:
        if args.model:
            raise ParameterError("give either --tracr or --model, not both")
        if args.formula is not None:
            raise ParameterError("give either a formula or --tracr, not both")
        return "tracr"
    if args.n is not None:
        raise ParameterError("--n is for --tracr")
    if args.model:
        if args.formula is not None:
            raise ParameterError("give either a formula or --model, not both")
        return "model"
    if args.epsilon is not None:
        raise ParameterError("--epsilon is for --model and --tracr (formula certificates use --eta)")
    schedule_option(args)  # one schedule for the whole command: a bad value is refused once, not per job
    return "formula"


def check_lengths(args) -> None:
    """The length range; without --tau, --find-tau (the default: the largest certifiable tau)."""
    if args.tau is None:
        args.find_tau = True
    if args.n_min > args.n_max:
        raise ParameterError(f"--n-min {args.n_min} exceeds --n-max {args.n_max}")


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


#: source kind -> (its certify: args -> certificate, or the ``"module:function"`` of one, imported only
#: when that kind is certified — a formula's certify loads no model-file or Tracr code (ISSUE 16) —,
#: its summary printer: (certificate, path) -> None)
CERTIFY: dict[str, tuple[Callable[..., dict] | str, Callable[..., None]]] = {
    "formula": (certify_formula, print_formula_certificate),
    "model": ("softhard.solver.cli.handlers.certify_model:certify_model_file", print_model_certificate),
    "tracr": ("softhard.solver.cli.handlers.certify_tracr:certify_tracr_export", print_tracr_certificate),
}


def kind_certify(kind: str) -> Callable[..., dict]:
    """The certify function of ``kind`` from :data:`CERTIFY` (its module imported on first use)."""
    make = CERTIFY[kind][0]
    if isinstance(make, str):
        module, name = make.split(":")
        make = getattr(import_module(module), name)
    return make


def certify_one(args) -> dict:
    """One source's certificate (no output): the kind's certify from :data:`CERTIFY` (a batch's job)."""
    return kind_certify(source_kind(args))(args)


def handle(args) -> int:
    """Certify every input and grid point (:mod:`.batch`, imported only for a batch:
    :data:`.jobs.BATCH`); one job (no ``--resume``, Dask or
    output directory) is exactly :func:`handle_one`."""
    jobs = certify_jobs(args, source_kind)
    if is_batch(args, len(jobs)):
        return import_module(BATCH).run_certify_batch(args, jobs, certify_one)
    return handle_one(jobs[0].args)


def handle_one(args) -> int:
    """Certify the one source given (:func:`source_kind`), write and print the certificate."""
    kind = source_kind(args)
    make, show = kind_certify(kind), CERTIFY[kind][1]
    try:
        cert = make(args)
    except NotSimulable as e:  # not bad input: the witness is the answer (exit 1)
        if args.json:
            print(json.dumps({"status": "not simulable", "message": str(e),
                              "gap_report": e.report.to_json() if e.report is not None else None}, indent=1))
        else:
            print(f"softhard: {e}", file=sys.stderr)
        return EXIT_FAIL
    if args.output:
        write_certificate(cert, args.output, force=args.force, force_name="--force")
    if args.json:
        print(json.dumps(cert, indent=1))
    else:
        show(cert, args.output)
    return certified_exit(cert)
