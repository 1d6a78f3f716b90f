"""``softhard gap``: the minimum attention-score gap of every head of a model file (THEORY §2,
§6).  The parser only (light); the work: :mod:`softhard.solver.cli.handlers.gap`."""

from __future__ import annotations

from .options import add_gap_options, length_option

HELP = "minimum attention-score gap of a model file (exhaustive or searched)"
DESCRIPTION = ("Gap analysis of a hard-attention model (THEORY §2, §6): per head the minimum of s* - max{s_j : j not "
               "in the argmax set} over every query row of every word of length <= --n-max, computed in exact "
               "rational arithmetic, exhaustively when the number of words is small and otherwise by search "
               "(periodic, random, local search; reported as 'searched', not proved), with the input attaining it. "
               "Exit 1 if a gap is 0 (not simulable by softmax this way).")


def add_arguments(p) -> None:
    p.add_argument("--model", required=True, metavar="FILE", help="model file (JSON, see docs/models.md)")
    p.add_argument("--n-max", type=length_option("--n-max"), required=True, help="longest word analysed")
    add_gap_options(p)
    p.add_argument("--json", action="store_true", help="print JSON")
