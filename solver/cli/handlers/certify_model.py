"""``softhard certify --model FILE``: a model file's certificate (THEORY §6; docs/models.md).  Loaded by
:mod:`.certify` only when a model file is certified (:data:`.certify.CERTIFY`)."""

from __future__ import annotations

from ....constructions.modelfile import load_model
from ...certjson import check_output_path
from ...models import build_model_construction, certify_model, check_exhaustive_limit
from .certify import check_lengths
from .console import progress


def certify_model_file(args) -> dict:
    """A model file's certificate (THEORY §6; docs/models.md): gap premises, composed bounds, τ.
    Raises :class:`NotSimulable` when a head has gap 0."""
    if args.epsilon is None:  # the default of --model and --tracr alike
        args.epsilon = "margin"
    check_exhaustive_limit(args.exhaustive_limit, "such a certificate could not be verified")
    check_lengths(args)
    if args.output:  # fail before the work if the output cannot be written
        check_output_path(args.output, force=args.force)
    spec = load_model(args.model)
    with progress("analysing gaps") as say:
        c, an = build_model_construction(spec, n_max=args.n_max, epsilon=args.epsilon,
                                         tie_break_mode=args.tie_break, exhaustive_limit=args.exhaustive_limit,
                                         search_words=args.search_words, search_max_len=args.search_max_len,
                                         seed=args.seed, method=args.method, progress=say)
        return certify_model(c, an, n_max=args.n_max, n_lo=args.n_min, tau=args.tau, find_tau=args.find_tau,
                             timeout_s=args.timeout, numeric=not args.no_numeric, progress=say)
