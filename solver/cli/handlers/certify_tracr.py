"""``softhard certify --tracr MODEL``: a Tracr export's certificate (docs/tracr.md).  Loaded by
:mod:`.certify` only when a Tracr export is certified (:data:`.certify.CERTIFY`)."""

from __future__ import annotations

from ....constructions.errors import ParameterError
from ....constructions.parameters import to_fraction
from ....constructions.tracr_load import load_tracr
from ...certjson import check_output_path
from ...tracr import certify_tracr
from .console import progress


def certify_tracr_export(args) -> dict:
    """A Tracr export's certificate (docs/tracr.md): the lengths and temperatures at which the
    compiled model stays exact."""
    if args.tau is not None or args.find_tau:
        raise ParameterError("--tau/--find-tau do not apply to --tracr: the compiled temperature is fixed, and the "
                             "minimum temperature is always reported")
    eps = "margin"
    if args.epsilon not in (None, "margin"):
        eps = to_fraction(args.epsilon, "--epsilon")
        if eps <= 0:
            raise ParameterError(f"--epsilon must be > 0, got {args.epsilon}")
    if args.output:  # fail before the work if the output cannot be written
        check_output_path(args.output, force=args.force)
    tm = load_tracr(args.tracr)
    if args.n is not None and args.n < 1:
        raise ParameterError(f"--n must be >= 1, got {args.n}")
    with progress("analysing") as say:
        return certify_tracr(tm, epsilon=eps, n_target=args.n, timeout_s=args.timeout, numeric=not args.no_numeric,
                             progress=say)
