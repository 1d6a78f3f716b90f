"""``softhard bound``: symbolic per-node bounds of a formula's construction and the inverse
temperatures they need.  The parser only (light); the work: :mod:`softhard.solver.cli.handlers.bound`."""

from __future__ import annotations

from .options import add_formula_options, length_option

HELP = "symbolic per-node leak bounds and required inverse temperatures"
DESCRIPTION = ("Per attention node: the tight SymPy leak bound, the inverse temperature it needs at --n-max (tight "
               "numeric, closed form, generic gap lemma) and the asymptotic order as n grows.")


def add_arguments(p) -> None:
    add_formula_options(p)
    p.add_argument("--n-max", type=length_option("--n-max"), default=1000, help="largest word length (default 1000)")
    p.add_argument("--latex", action="store_true", help="print the bounds as LaTeX")
