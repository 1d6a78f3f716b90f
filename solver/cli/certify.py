"""``softhard certify``: prove that a temperature keeps a construction within its tolerance and
write a certificate — of a formula (inline, a ``.ltl`` file, or the embedded default example), a
model file (``--model FILE``) or a Tracr export (``--tracr MODEL``); one command, one path
(docs/certificates.md).  Many inputs (files, directories, globs) and comma-separated parameter
lists make a batch: one job per input and combination (:mod:`.handlers.batch`).  The parser only (light); the work is done by
:mod:`softhard.solver.cli.handlers.certify`, which dispatches to the source's kind."""

from __future__ import annotations

import os
from pathlib import Path

from ...constructions.errors import ParameterError
from ...constructions.parameters import DEFAULT_MAX_POSITIONS, check_output_path
from ...constructions.paths import is_dir, is_file
from .batching import add_batch_options
from .options import (add_formula_options, add_gap_options, add_timeout_option, length_option, list_of,
                      max_positions_option, tau_option)

HELP = "prove that a temperature keeps every attention node within its tolerance"
DESCRIPTION = ("Derive every attention node's error bound, prove with Z3 that it stays <= eta for every length in the "
               "range (or find the largest tau for which it does), check each claim independently in interval "
               "arithmetic, confirm numerically, and write a JSON certificate. Exit 0 when every claim is proved and "
               "the numeric confirmation agrees; 1 when any claim is refuted or unknown, no certifiable tau is found, "
               "or the numeric confirmation fails; 2 on bad input.")


def add_arguments(p) -> None:
    """Every source (a formula, ``--model FILE``, ``--tracr MODEL``; at most one, the default is
    the embedded Tomita 4 example), the options common to all, then each source's own."""
    add_formula_options(p, formula_nargs="*", grid=True,
                        formula_help="formulas, .ltl files, directories (their *.ltl) or globs (default: an "
                                     "embedded Tomita 4 example); several make a batch")
    p.add_argument("--n-max", type=list_of(length_option("--n-max")), default="1000",
                   help="largest word length (default 1000); a comma-separated list makes a grid, e.g. 1e3,1e6")
    p.add_argument("--n-min", type=list_of(length_option("--n-min")), default="1",
                   help="smallest word length (default 1)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--tau", type=list_of(tau_option), default=None,
                   help="the temperature to certify, exact (e.g. 1/5000)")
    g.add_argument("--find-tau", action="store_true",
                   help="find and certify the largest tau (smallest 1/tau): just above the tight requirement, raised "
                        "where that lets a float64 run at it stay within eta too (search.per_bound has the tight "
                        "value); the default when --tau is not given")
    p.add_argument("-o", "--output", default=None,
                   help="write the certificate to this file (atomically); a batch (or a path ending in '/') writes "
                        "one certificate per job into this directory, with stable names")
    p.add_argument("--force", action="store_true", help="overwrite an existing output file")
    add_timeout_option(p)
    p.add_argument("--no-numeric", action="store_true", help="skip the numeric confirmation")
    p.add_argument("--no-cache", action="store_true",
                   help="certify live: read and write no derivation cache entry and no certify artefact (by default "
                        "a job certified before with the same inputs, options, code, libraries and machine is "
                        "taken from its recorded run after every Z3 query and arb check of it is re-run and "
                        "answers as recorded; its measured fields are then that run's)")
    p.add_argument("--max-positions", type=max_positions_option(), default=DEFAULT_MAX_POSITIONS,
                   help="a formula's numeric confirmation: refuse one over more word positions than this, estimated "
                        "before it runs (the dense attention path's work at a temperature too warm for the bounds "
                        f"included; default {DEFAULT_MAX_POSITIONS:.0e}, about a minute or two of CPU)")
    p.add_argument("--range-only", action="store_true",
                   help="regime U: prove only n in [n-min, n-max] instead of all n >= n-min")
    # model files (docs/models.md)
    p.add_argument("--model", action="append", default=None, metavar="FILE",
                   help="certify a hard-attention model file (THEORY §6) instead of a formula; repeat it, or give a "
                        "directory (its *.json) or a glob, for a batch")
    p.add_argument("--epsilon", type=list_of(), default=None,
                   help="with --model or --tracr: the target output error, exact (e.g. 1/4), or 'margin' (just "
                        "below the smallest rounding margin of the boolean/categorical outputs, so rounded outputs "
                        "are equal). Default: margin, for both")
    add_gap_options(p)
    # Tracr exports (docs/tracr.md)
    p.add_argument("--tracr", action="append", default=None, metavar="MODEL",
                   help="certify a compiled Tracr model (NAME, NAME.json or NAME.npz of an export): the lengths and "
                        "temperatures at which it stays exact (docs/tracr.md)")
    p.add_argument("--n", type=int, default=None, metavar="N",
                   help="with --tracr: the length for the minimum-temperature answer (default max_seq_len)")
    add_batch_options(p, resume=True)


def precheck(args) -> None:
    """Refuse an output file that cannot be written before the handler, and with it every stage of
    the pipeline (~1 s of imports), is loaded (ISSUE 16): for a single job's ``-o FILE`` — one input
    or none, no comma-separated grid, no ``--resume``/``--workers``/``--scheduler``, no directory —
    :func:`~softhard.constructions.parameters.check_output_path` (an existing file without
    ``--force``, a directory, a missing folder); and ``--resume`` without ``-o`` or with ``--force``.  An input *file* that does not exist is left to the
    handler, whose "no such file" comes first; a batch's ``-o DIR`` is the handler's to check.
    Raises :class:`ParameterError`."""
    out = args.output
    if args.resume and out is None:
        raise ParameterError("--resume needs -o DIR: it keeps the certificates already in DIR that verify")
    if args.resume and args.force:
        raise ParameterError("--resume keeps DIR's valid certificates and --force overwrites them: give one of them")
    if out is None or args.resume or args.workers is not None or args.scheduler is not None:
        return
    if out.endswith(("/", os.sep)) or is_dir(out):  # a batch's directory (or the handler's message)
        return
    inputs = list(args.formula or []) + list(args.model or []) + list(args.tracr or [])
    if len(inputs) > 1 or any(isinstance(v, tuple) and len(v) > 1 for v in vars(args).values()):
        return
    if inputs:
        src = Path(inputs[0])
        looks_like_file = src.suffix in (".ltl", ".json", ".npz") or bool(args.model) or bool(args.tracr)
        if is_dir(src) or set("*?[") & set(inputs[0]) or (looks_like_file and not is_file(src)):
            return
    check_output_path(out, force=args.force)
