"""``softhard tracr compile``: compile a RASP program with Tracr and write the export that
``softhard certify --tracr`` reads (docs/tracr.md, "The export format").  The parser only
(light); the work: :mod:`softhard.solver.cli.handlers.tracr`."""

from __future__ import annotations

import functools

from .options import Parser, length_option, positive_int

HELP = "Tracr models: compile a RASP program into the export format certify --tracr reads"
DESCRIPTION = ("Compile a RASP program with Tracr (the optional extra: pip install 'softhard[tracr]') and write "
               "DIR/NAME.json + DIR/NAME.npz, the export format of docs/tracr.md; then "
               "'softhard certify --tracr DIR/NAME'.")


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="tracr_cmd", metavar="SUBCOMMAND",
                           parser_class=functools.partial(Parser, usage_errors=p.usage_errors))
    sub.required = True
    c = sub.add_parser("compile", help="compile MODULE:FUNCTION and write its export",
                       description="Compile the RASP program returned by MODULE:FUNCTION(ARGS) for the vocabulary "
                                   "and max_seq_len, and write DIR/NAME.json and DIR/NAME.npz.")
    c.add_argument("program", metavar="MODULE:FUNCTION",
                   help="a function returning a RASP SOp, e.g. tracr.compiler.lib:make_sort_unique")
    c.add_argument("--vocab", required=True, metavar="V",
                   help="the vocabulary, comma-separated (a,b,c); integer items become ints (1,2,3)")
    c.add_argument("--max-seq-len", type=length_option("--max-seq-len"), required=True, metavar="N",
                   help="the compiled model's maximum input length")
    c.add_argument("--args", nargs="*", default=[], metavar="ARG",
                   help="the function's arguments, [NAME=]VALUE each: a Python literal, an expression over "
                        "tokens, indices, rasp, numerical, categorical, max_seq_len (e.g. \"numerical(tokens=='x')\", "
                        "'lambda x, y: x + y'), or else the text as a string")
    c.add_argument("--mlp-exactness", type=positive_int("--mlp-exactness"), default=100, metavar="L",
                   help="Tracr's mlp_exactness (the slope of numerical MLPs' ramps; default 100)")
    c.add_argument("--causal", action="store_true", help="compile with a causal mask")
    c.add_argument("--name", default=None, help="the export's NAME (default: FUNCTION without make_)")
    c.add_argument("-o", "--out", required=True, metavar="DIR", help="the directory to write NAME.json, NAME.npz to")
    c.add_argument("--json", action="store_true", help="print {path, program, label, config} as JSON")
