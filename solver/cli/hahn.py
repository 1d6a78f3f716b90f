"""``softhard hahn``: Hahn's obstacle for a bounded-PE model at one fixed temperature (THEORY §1):
the sensitivity bound and N_fail, of a model file or of a formula's regime T construction.  The
parser only (light); the work: :mod:`softhard.solver.cli.handlers.hahn`."""

from __future__ import annotations

from .options import FORMULA_HELP, add_formula_options, add_timeout_option, length_option, tau_option

HELP = "Hahn's obstacle: sensitivity bound and N_fail of a bounded-PE model at fixed tau"
DESCRIPTION = ("For a bounded-positional-embedding model at one fixed temperature: a bound on how much a one-symbol "
               "change can move an output (THEORY §1) and the length N_fail beyond which no one-symbol change can "
               "move it from <= eta to >= 1-eta (proved for all n >= N_fail). With a formula, the model is its "
               "regime T construction; --check runs the numeric demonstration (and, for a formula, shows the "
               "regime T construction with tau(n) and the regime U construction at fixed tau keep working). The lemma "
               "needs Lipschitz layers: a construction with layer normalisation (--comparator ln) is not covered — "
               "layer norm with eps_ln = 0 is a third escape, and the command says why instead of analysing it.")


def add_arguments(p) -> None:
    add_formula_options(p, formula_nargs="?", regime=False,
                        formula_help=FORMULA_HELP + " (omit with --model); its regime T (bounded PE) construction")
    p.add_argument("--model", default=None, metavar="FILE", help="model file instead of a formula")
    p.add_argument("--tau", type=tau_option, required=True, help="the fixed temperature, exact (e.g. 1/4)")
    p.add_argument("--change-at", default="n-1", help="position of the changed symbol: n-c or c (default n-1)")
    p.add_argument("--check", action="store_true", help="numeric demonstration on flip pairs")
    p.add_argument("--n-check-max", type=length_option("--n-check-max"), default=20000,
                   help="longest word in the numeric demonstration (default 20000)")
    add_timeout_option(p, help="hard limit per solver query, seconds")
