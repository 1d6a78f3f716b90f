"""``softhard plot``: read certificates strictly, compute their curves
(:func:`softhard.solver.plots.plot_data`) and draw one row per certificate
(:func:`softhard.solver.plots.draw`)."""

from __future__ import annotations

import json
from pathlib import Path

from ....constructions.errors import ParameterError
from ...certjson import load_certificate
from ...plots import draw, plot_data
from .jobs import expand_inputs


def handle(args) -> int:
    """Draw the certificates into ``-o``; exit 0, or 2 for bad input (one line)."""
    out = Path(args.output)
    if out.suffix.lower() not in (".png", ".svg"):
        raise ParameterError(f"{out}: the figure must be a .png or .svg file")
    if out.exists() and not args.force:
        raise ParameterError(f"{out}: file exists; use --force to overwrite it")
    if not out.parent.is_dir():
        raise ParameterError(f"{out.parent}: no such directory")
    files = expand_inputs(args.certs, "certificate")
    plots = []
    for f in files:
        try:
            plots.append(plot_data(load_certificate(f)))
        except ParameterError as e:
            raise ParameterError(f"{f}: {e}") from None
    draw(plots, str(out))
    rows = [{"certificate": f, "title": p.title, "nodes": [nc.node for nc in p.nodes]} for f, p in zip(files, plots)]
    if args.json:
        print(json.dumps({"figure": str(out), "rows": rows}))
    else:
        print(f"figure written to {out}: {len(rows)} row(s), {sum(len(r['nodes']) for r in rows)} node curve(s)")
    return 0
