"""``softhard verify``: re-check a certificate of any kind by replay (docs/certificates.md): the
one :func:`softhard.solver.kinds.verify_certificate`.  Exit 0 for a valid certificate (whatever
status it records), 1 for one that could not be re-checked (its replay hit a solver time limit or
budget, nothing found edited), 2 for an invalid one, naming the first field that does not match."""

from __future__ import annotations

import json
import sys
from importlib import import_module

from ....bounds.store import set_disk_cache
from ...certjson import load_certificate
from ...kinds import verify_certificate
from ...replay_memo import deferred_dps
from ..options import WORKING_DPS, one_line
from .console import progress
from .jobs import BATCH, expand_inputs, is_batch


#: this handler enters the command line's mpmath precision (:data:`..options.WORKING_DPS`) itself
#: (:func:`softhard.solver.cli.main`): a batch at once, as every command; one certificate's verify
#: defers it to where a live replay computes (:func:`softhard.solver.replay_memo.deferred_dps`), so
#: one served by a replay artefact never loads mpmath (ISSUE 16)
OWN_PRECISION = True


def handle(args) -> int:
    """Verify every certificate given (files, directories, globs): one file exactly as
    :func:`handle_one`, several as a batch with a summary (:mod:`.batch`, imported only then: :data:`.jobs.BATCH`)."""
    if getattr(args, "no_cache", False):
        set_disk_cache(False)  # before any derivation (and in each batch job: batch.verify_task)
    files = expand_inputs(args.file, "certificate")
    if is_batch(args, len(files)) or len(args.file) > 1 or files != args.file:
        import mpmath  # third-party (the batch runner's stages load it anyway)

        with mpmath.workdps(WORKING_DPS):
            return import_module(BATCH).run_verify_batch(args, files)
    args.file = files[0]
    with deferred_dps(WORKING_DPS):
        return handle_one(args)


def handle_one(args) -> int:
    """Verify the certificate file by replay; exit 0 only when it is valid, 1 when it could not be
    re-checked within the budgets (:attr:`VerifyReport.exit_code`), 2 when it is invalid."""
    cert = load_certificate(args.file)
    with progress(f"verifying {args.file} by replay"):
        rep = verify_certificate(cert, timeout_s=args.timeout, budget_s=args.budget)
    if args.json:
        print(json.dumps(rep.to_json(), indent=1))
    elif rep.ok:
        print(f"valid certificate: status {rep.status}; checked {', '.join(rep.checked)} ({rep.seconds:.2f} s)")
    if not rep.ok:  # one line on stderr, with or without --json (as every exit 1 or 2)
        f, m = rep.problems[0]
        more = f" (+{len(rep.problems) - 1} more problem(s); --json lists all)" if len(rep.problems) > 1 else ""
        what = "could not re-check certificate" if rep.undecided else "invalid certificate"
        print(one_line(f"softhard: {what} {args.file}: {f}: {m}{more}"), file=sys.stderr)
    return rep.exit_code
