"""``softhard confirm``: numeric confirmation of a formula construction's node bounds on many
inputs.  The parser only (light); the work: :mod:`softhard.solver.cli.handlers.confirm`."""

from __future__ import annotations

from ...constructions.parameters import DEFAULT_MAX_POSITIONS
from .options import add_formula_options, int_option, length_option, max_positions_option, nonneg_int, tau_option

#: most random words (their lengths are drawn up front, 8 bytes each)
MAX_RANDOM_WORDS = 10**6

HELP = "numeric confirmation of the node bounds on many inputs"
DESCRIPTION = ("Run the soft transformer on (a) every word up to --exhaustive-len, (b) --random random words up to "
               "--n-max, (c) adversarial words per node, and compare each node's worst leak with its bound "
               "(tightness = observed/bound).")


def add_arguments(p) -> None:
    add_formula_options(p)
    p.add_argument("--n-max", type=length_option("--n-max"), default=1000, help="longest random/adversarial word")
    p.add_argument("--exhaustive-len", type=nonneg_int("--exhaustive-len"), default=10,
                   help="all words up to this length (default 10)")
    p.add_argument("--random", type=int_option("--random", 0, maximum=MAX_RANDOM_WORDS), default=1000,
                   help=f"number of random words (default 1000, at most {MAX_RANDOM_WORDS})")
    p.add_argument("--seed", type=nonneg_int("--seed"), default=0, help="random seed (>= 0)")
    p.add_argument("--max-positions", type=max_positions_option(), default=DEFAULT_MAX_POSITIONS,
                   help="refuse a run over more word positions than this, estimated before it starts (exhaustive + "
                        "random + adversarial words, BOS included, and the dense attention path's work at lengths "
                        "where the temperature is too warm for the bounds, in the same unit; default "
                        f"{DEFAULT_MAX_POSITIONS:.0e}, about a minute or two of CPU for a 10-node construction)")
    p.add_argument("--tau", type=tau_option, default=None,
                   help="fixed temperature for every length (default: the tight 1/tau(n) at each length)")
