"""``softhard run``: the hard and the soft transformer on one word — of a formula, a model file
(``--model FILE``) or a Tracr export (``--tracr MODEL``).  The parser only (light); the work is
done by :mod:`softhard.solver.cli.handlers.run`."""

from __future__ import annotations

from .options import FORMULA_HELP, add_formula_options, length_option, tau_option

HELP = "run the hard and soft transformers of a formula, a model file or a Tracr export on one word"
DESCRIPTION = ("Run the hard (UHA) and soft (softmax) transformers of a formula on STRING and print, per position, "
               "the reference value, the hard value, the soft clean value, and each attention node's soft value "
               "before clean-up. A word longer than 200 positions shows the first and last 100 and the first 100 "
               "where soft and hard differ (--json lists every position).")


def add_arguments(p) -> None:
    """The sources (a formula, ``--model FILE``, ``--tracr MODEL``; exactly one) and their options."""
    add_formula_options(p, formula_nargs="?", formula_help=FORMULA_HELP + " (omit with --model)")
    p.add_argument("string", metavar="STRING", help="the input word (characters, or space-separated symbols)")
    p.add_argument("--tau", type=tau_option, default=None,
                   help="temperature tau > 0 (e.g. 1/1000). Default: the closed-form tau*(n, eta) that the node "
                        "bounds require (regime T: at the word's length; regime U: one tau for all n)")
    p.add_argument("--summary", action="store_true", help="print one line (the verdicts and how many positions "
                                                                "differ) instead of one row per position")
    p.add_argument("--model", default=None, metavar="FILE", help="run a model file instead of a formula")
    p.add_argument("--tie-break", choices=["auto", "off"], default="auto",
                   help="with --model: add the UHA tie-break beta*j/n exactly as 'certify --model' does "
                        "(planned from the exhaustive gap analysis up to --n-max; default auto)")
    p.add_argument("--n-max", type=length_option("--n-max"), default=None,
                   help="with --model: the length range whose gap analysis plans the tie-break (use the "
                        "certificate's n_max to run the certified model; default: the word's length)")
    p.add_argument("--tracr", default=None, metavar="MODEL", help="run a compiled Tracr model instead of a formula")
