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

import gc
import json
import sys
import time
from typing import Callable

from importlib import import_module

from ....bounds.store import set_disk_cache
from ....constructions.errors import NotSimulable, ParameterError
from ...certify_memo import finish, job_key, lookup, record
from ...certjson import write_certificate
from ...kinds import FAST_INPUTS
from ...oracle import ORACLE_LOG
from ...replay_memo import deferred_dps, working_precision
from ..options import EXIT_FAIL, WORKING_DPS, schedule_option
from .certificates import print_formula_certificate, print_model_certificate, print_tracr_certificate
from .console import certified_exit, progress
from .jobs import BATCH, PRESENTATION, certify_jobs, is_batch


#: this handler enters the command line's working precision itself (:data:`WORKING_DPS` digits): a
#: live certify at it, a certify from an artefact without loading mpmath (its key at that precision:
#: :func:`softhard.solver.replay_memo.deferred_dps`)
OWN_PRECISION = True


def _repeat_hint(formula, option: str) -> str:
    """The hint for ``certify --model a.json b.json``: argparse read ``b.json`` as the formula."""
    items = formula if isinstance(formula, (list, tuple)) else [formula]
    if any(str(f).endswith((".json", ".npz")) or ("/" in str(f) and not str(f).endswith(".ltl")) for f in items):
        return f" ({' '.join(map(str, items))} is read as a formula: repeat {option} before each file)"
    return ""


def source_kind(args) -> str:
    """``"formula"``, ``"model"`` or ``"tracr"``: the one source given (no source: the formula
    kind's default example); each kind's own options refused with another."""
    if (args.tracr or args.model) and getattr(args, "schedule", None) is not None:
        raise ParameterError("--schedule is for formulas (THEORY §9); model files and Tracr exports use one tau")
    if args.tracr:
        if args.model:
            raise ParameterError("give either --tracr or --model, not both")
        if args.formula is not None:
            raise ParameterError(f"give either a formula or --tracr, not both{_repeat_hint(args.formula, '--tracr')}")
        return "tracr"
    if args.n is not None:
        raise ParameterError("--n is for --tracr")
    if args.model:
        if args.formula is not None:
            raise ParameterError(f"give either a formula or --model, not both{_repeat_hint(args.formula, '--model')}")
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


#: source kind -> (its certify: args -> certificate, as ``"module:function"``, imported only when that
#: kind is certified live — a formula's certify loads no model-file or Tracr code, a certify from an
#: artefact none of them (ISSUE 16) —; its summary printer: (certificate, path, extras) -> None; the
#: ``"module:function"`` computing the printer's extras from the certificate, or None)
CERTIFY: dict[str, tuple[str | Callable[..., dict], Callable[..., None], str | None]] = {
    "formula": ("softhard.solver.cli.handlers.certify_formula:certify_formula", print_formula_certificate,
                "softhard.solver.cli.handlers.summary_values:formula_extras"),
    "model": ("softhard.solver.cli.handlers.certify_model:certify_model_file", print_model_certificate, None),
    "tracr": ("softhard.solver.cli.handlers.certify_tracr:certify_tracr_export", print_tracr_certificate, None),
}


def _function(dotted: str, *, freeze: bool = False) -> Callable:
    """The function ``module:name``; with ``freeze``, the first import of a kind's module (its stages: SymPy, NumPy,
    networkx, ~10^6 objects that live as long as the process) is followed by :func:`gc.freeze`, so
    the full collections of the certify itself no longer traverse them (ISSUE 16: ~0.06 s of the
    ~0.17 s a live model-file certify spent in the garbage collector; benchmarks/README.md).  Only
    objects that exist then are frozen, once per module and process: what a job allocates later is
    collected as before."""
    module, name = dotted.split(":")
    fresh = module not in sys.modules
    fn = getattr(import_module(module), name)
    if fresh and freeze:
        gc.freeze()
    return fn


def kind_certify(kind: str) -> Callable[..., dict]:
    """The certify function of ``kind`` from :data:`CERTIFY` (its module imported on first use)."""
    make = CERTIFY[kind][0]
    return make if callable(make) else _function(make, freeze=True)


def run_job(args) -> tuple[dict, dict, object]:
    """One source's certificate (no output): ``(certificate, the summary's extras, the
    :class:`~softhard.solver.certify_memo.Recorded` artefact it came from, or None)``.  A job
    recorded before (:mod:`softhard.solver.certify_memo`) is taken from its artefact when every
    recorded Z3 query and arb check re-run now answers as recorded; otherwise the kind's certify
    from :data:`CERTIFY` runs live, its oracle calls recorded, and its certificate becomes the job's
    artefact (unless an input file changed while it ran).  ``args.no_cache``: neither (and no
    derivation cache: every bound derived live).  Raises what the kind's certify raises."""
    t0 = time.perf_counter()
    if getattr(args, "no_cache", False):
        set_disk_cache(False)  # before any derivation (and in each batch job)
    kind = source_kind(args)
    # (only kinds whose every Z3 query and arb check is logged — those with verify's artefacts,
    # :data:`softhard.solver.kinds.FAST_INPUTS` — have certify artefacts)
    src = args.formula if kind == "formula" else getattr(args, kind)
    opts = {k: v for k, v in vars(args).items() if k not in PRESENTATION}
    key = job_key(kind, opts, src) if kind in FAST_INPUTS else None
    if key is not None:
        with progress("certifying: re-running the oracle calls of a recorded certify of the same inputs"):
            rec = lookup(key)
        if rec is not None:
            return finish(rec, t0), rec.extras, rec
    log: list = []
    token = ORACLE_LOG.set(log)
    try:
        with working_precision():  # (mpmath at the command line's 30 digits: loaded by a live certify only)
            cert = kind_certify(kind)(args)
            extras_of = CERTIFY[kind][2]
            extras = _function(extras_of)(cert) if extras_of else {}
    finally:
        ORACLE_LOG.reset(token)
    # (recorded only when the input files still have the bytes the key was made of: one edited while
    # the live certify ran may have been read in either version)
    if key is not None and job_key(kind, opts, src) == key:
        record(key, cert, log, extras)
    return cert, extras, None


def certify_one(args) -> dict:
    """One source's certificate (no output; a batch's job): :func:`run_job`'s certificate."""
    return run_job(args)[0]


def handle(args) -> int:
    """Certify every input and grid point (:mod:`.batch`, imported only for a batch:
    :data:`.jobs.BATCH`); one job (no ``--resume``, Dask or
    output directory) is exactly :func:`handle_one`."""
    jobs = certify_jobs(args, source_kind)
    if is_batch(args, len(jobs)):
        import mpmath  # third-party: a batch runs at the command line's 30 digits throughout

        with mpmath.workdps(WORKING_DPS):
            return import_module(BATCH).run_certify_batch(args, jobs, certify_one)
    with deferred_dps(WORKING_DPS):  # one job: at 30 digits where it computes, mpmath not loaded on a hit
        return handle_one(jobs[0].args)


def handle_one(args) -> int:
    """Certify the one source given (:func:`source_kind`), write and print the certificate."""
    kind = source_kind(args)
    try:
        cert, extras, rec = run_job(args)
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
        if rec is not None:  # (stdout stays one JSON object; times.artefact_s says it too)
            print(f"softhard: from a recorded certify of the same inputs ({rec.cert.get('created')}); --no-cache "
                  "certifies live", file=sys.stderr)
    else:
        if rec is not None:
            print(f"from a recorded certify of the same inputs, code and libraries ({rec.cert.get('created')}): its "
                  f"{rec.calls} Z3 queries and arb checks re-run now, each answered as recorded; the measured fields "
                  "(numeric confirmation, the search's empirical minima, solver seconds) are that run's (--no-cache "
                  "certifies live)")
        CERTIFY[kind][1](cert, args.output, extras)
    return certified_exit(cert)
