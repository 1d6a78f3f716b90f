"""Run every notebook of a checkout and record what each code cell prints, to diff two versions.

Usage::

    python benchmarks/notebook_outputs.py DIR OUT.json [02 06 ...]  # DIR: a checkout's notebooks/
    python benchmarks/notebook_outputs.py --diff A.json B.json

Each notebook runs top to bottom in a fresh kernel of this interpreter (``notebooks/make_figures.py:
execute``), with the working directory DIR.  Recorded per code cell: its printed text (streams,
``text/plain``, ``text/latex`` and ``text/markdown`` results, errors) and the SHA-256 of each PNG it shows.  ``--diff`` prints every cell
whose text differs, after masking timings (a number followed by ``s``/``ms``/``seconds``), and every
PNG that differs; it exits 1 on a text difference.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib.util
import json
import re
import sys
from pathlib import Path

TIMING = re.compile(r"\d+(\.\d+)?(e-?\d+)?\s*(s|ms|µs|seconds|sec)\b")


def _make_figures(nb_dir: Path):
    spec = importlib.util.spec_from_file_location("mf", nb_dir / "make_figures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def record(nb_dir: Path, only=()) -> dict:
    """``{notebook name: [{"text": str, "png": [sha256, ...]}, ...]}`` (one entry per code cell);
    ``only``: name prefixes (``"02"``) of the notebooks to run (default: all)."""
    mf = _make_figures(nb_dir)
    out = {}
    for path in mf.notebooks():
        if only and not path.name.startswith(tuple(only)):
            continue
        nb, seconds = mf.execute(path)
        cells = []
        for c in nb.cells:
            if c.cell_type != "code":
                continue
            text, png = [], []
            for o in c.outputs:
                if o.output_type == "stream":
                    text.append(o.text)
                elif o.output_type in ("execute_result", "display_data"):
                    data = o.get("data", {})
                    text.append("".join(data.get(m, "") + "\n" for m in ("text/plain", "text/latex", "text/markdown") if m in data))
                    if "image/png" in o.get("data", {}):
                        png.append(hashlib.sha256(base64.b64decode(o.data["image/png"])).hexdigest())
                elif o.output_type == "error":
                    text.append("ERROR " + o.ename + ": " + o.evalue + "\n")
            cells.append({"text": "".join(text), "png": png})
        out[path.name] = cells
        print(f"{path.name}: {seconds:.1f} s", file=sys.stderr)
    return out


def diff(a: dict, b: dict) -> int:
    """Print the differences; return the number of cells whose masked text differs."""
    bad = 0
    for name in sorted(set(a) & set(b)):
        ca, cb = a.get(name, []), b.get(name, [])
        if len(ca) != len(cb):
            print(f"{name}: {len(ca)} vs {len(cb)} code cells")
            bad += 1
            continue
        for i, (x, y) in enumerate(zip(ca, cb)):
            if TIMING.sub("<t>", x["text"]) != TIMING.sub("<t>", y["text"]):
                bad += 1
                print(f"--- {name} code cell {i}\n{x['text']}\n+++\n{y['text']}")
            if x["png"] != y["png"]:
                print(f"{name} code cell {i}: PNG differs")
    print(f"{bad} cells with different text")
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--diff", action="store_true")
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("only", nargs="*", help="name prefixes of the notebooks to run (default: all)")
    args = ap.parse_args()
    if args.diff:
        return 1 if diff(json.loads(Path(args.a).read_text()), json.loads(Path(args.b).read_text())) else 0
    Path(args.b).write_text(json.dumps(record(Path(args.a).resolve(), args.only), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
