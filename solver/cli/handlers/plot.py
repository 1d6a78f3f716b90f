"""``softhard plot``: read certificates strictly, compute their curves
(:func:`softhard.solver.plots.plot_data`) and draw one row per certificate
(:func:`softhard.solver.plots.draw`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ....constructions.errors import ParameterError
from ...certjson import hash_problems, load_certificate
from ...plots import draw, plot_data
from .jobs import expand_inputs


def handle(args) -> int:
    """Draw the certificates into ``-o``; exit 0, or 2 for bad input (one line).  Drawing is not
    verifying: a certificate whose section hashes do not match gets a warning line (stderr) and
    ``"hashes_ok": false`` in the ``--json`` rows; ``softhard verify`` re-checks it."""
    out = Path(args.output)
    if out.suffix.lower() not in (".png", ".svg"):
        raise ParameterError(f"{out}: the figure must be a .png or .svg file")
    if out.exists() and not args.force:
        raise ParameterError(f"{out}: file exists; use --force to overwrite it")
    if not out.parent.is_dir():
        raise ParameterError(f"{out.parent}: no such directory")
    files = expand_inputs(args.certs, "certificate")
    plots, hashes_ok = [], []
    for f in files:
        try:
            cert = load_certificate(f)
            plots.append(plot_data(cert))
        except ParameterError as e:
            raise ParameterError(f"{f}: {e}") from None
        edited = [path for path, _ in hash_problems(cert)]
        hashes_ok.append(not edited)
        if edited:  # plot draws, it does not verify: say so where a section's hash shows an edit
            print(f"softhard: warning: {f}: the hashes of {', '.join(edited[:3])} do not match (edited after "
                  "certify?); the figure draws it as it is — run 'softhard verify' on it", file=sys.stderr)
    draw(plots, str(out))
    rows = [{"certificate": f, "title": p.title, "nodes": [nc.node for nc in p.nodes], "hashes_ok": ok}
            for f, p, ok in zip(files, plots, hashes_ok)]
    if args.json:
        print(json.dumps({"figure": str(out), "rows": rows}))
    else:
        print(f"figure written to {out}: {len(rows)} row(s), {sum(len(r['nodes']) for r in rows)} node curve(s)")
    return 0
