"""``softhard verify``: re-check a certificate of any kind by replay (docs/certificates.md).  The
parser only (light); the work: :mod:`softhard.solver.cli.handlers.verify`."""

from __future__ import annotations

from .batching import add_batch_options
from .options import add_timeout_option, budget_option

HELP = "re-check a certificate of any kind by replay: every field re-derived and compared"
DESCRIPTION = ("Replay the certificate (docs/certificates.md): rebuild the construction from its stored source and "
               "parameters, re-derive every bound and text, re-prove every claim at the stated values, re-check "
               "the premises, and compare every field except the measured ones (numeric runs, timings, versions), "
               "which are checked for consistency; then the hashes. Exit 0 for a valid certificate (whatever "
               "status it records); 1 when it could not be re-checked (the replay hit --timeout or --budget and "
               "nothing was found edited); 2 for an invalid one, naming the field by its JSON path. A certificate whose "
               "replay this machine recorded before (a replay artefact in the derivation cache, keyed by every input "
               "of the replay and the code) is checked by re-running every recorded Z3 query and arb check live and "
               "comparing against the recorded replay, without rebuilding the construction; --no-cache replays "
               "live.")

#: default total seconds for re-proving claims (solver.replay.DEFAULT_BUDGET_S; not imported: this
#: module stays light)
DEFAULT_BUDGET_S = 600.0


def add_arguments(p) -> None:
    p.add_argument("file", metavar="FILE", nargs="+",
                   help="certificate JSON written by 'softhard certify'; several files, directories (their *.json) "
                        "or globs make a batch with a summary")
    add_timeout_option(p, default=None,
                       help="hard wall-clock limit per re-run solver query, seconds (default: the limit the "
                            "certificate was made with, its solver.timeout_s; 20 for a certificate without it)")
    p.add_argument("--budget", type=budget_option, default=DEFAULT_BUDGET_S, metavar="SECONDS",
                   help=f"total time for re-proving claims (default {DEFAULT_BUDGET_S:g}); a claim it stops is "
                        "reported as not re-checked, never as agreement")
    p.add_argument("--no-cache", action="store_true",
                   help="replay live: the on-disk derivation cache and its replay artefacts off for this run (as "
                        "SOFTHARD_CACHE=0); use it for a certificate from somebody else (the cache is trusted like "
                        "the installed code: docs/certificates.md)")
    p.add_argument("--json", action="store_true", help="print the verification report as JSON")
    add_batch_options(p, resume=False)
