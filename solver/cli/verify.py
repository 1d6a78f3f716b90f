"""``softhard verify``: re-check a certificate of any kind by replay (docs/certificates.md).  The
parser only (light); the work: :mod:`softhard.solver.cli.handlers.verify`."""

from __future__ import annotations

from .options import add_timeout_option

HELP = "re-check a certificate: hashes, re-derived bounds, re-run queries"
DESCRIPTION = ("Re-derive the bounds from the certificate's stored source, regenerate and re-run every stored solver "
               "query, re-check counterexamples, hashes and the numeric summary. Exit 0 only for a valid "
               "certificate; otherwise name the field.")


def add_arguments(p) -> None:
    p.add_argument("file", metavar="FILE", help="certificate JSON written by 'softhard certify'")
    add_timeout_option(p)
    p.add_argument("--json", action="store_true", help="print the verification report as JSON")
