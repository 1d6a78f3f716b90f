"""``softhard plot``: figures of certificates (certified and empirical 1/tau against n per node,
with the closed forms; output error against 1/tau; one row per certificate).  The parser only
(light); the work: :mod:`softhard.solver.cli.handlers.plot` and :mod:`softhard.solver.plots`."""

from __future__ import annotations

HELP = "draw certificates: 1/tau needed against n per node, output error against 1/tau"
DESCRIPTION = ("Draw formula certificates made with --find-tau, one row per certificate (a batch: one row per job): "
               "left, per node, the 1/tau needed against n (tight numeric requirement, closed form, generic gap "
               "lemma) with the Z3-certified value (squares) and the empirical minimum (crosses); right, each "
               "node's bound against 1/tau with the tolerance eta, the certified 1/tau and the largest observed "
               "leak. The curves come from the construction rebuilt from the certificate's source (docs). plot draws, it "
               "does not verify: a certificate whose section hashes do not match gets a warning; run 'softhard "
               "verify' before trusting a figure. Needs matplotlib (the [plot] extra).")


def add_arguments(p) -> None:
    p.add_argument("certs", metavar="CERT", nargs="+",
                   help="certificate JSON files, directories (their *.json) or globs")
    p.add_argument("-o", "--output", required=True, metavar="FILE.png|FILE.svg", help="the figure to write")
    p.add_argument("--force", action="store_true", help="overwrite an existing figure")
    p.add_argument("--json", action="store_true", help="print what was drawn as JSON")
