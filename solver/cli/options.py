"""The command line's parser class, argument types and shared option sets.

Light on purpose: it is imported to build every command's parser (``softhard --help`` included),
so it imports only the standard library, :mod:`softhard.constructions.errors` and
:mod:`softhard.constructions.parameters` (no NumPy, SymPy or Z3).
"""

from __future__ import annotations

import argparse
import json
from fractions import Fraction

from ...constructions.errors import ParameterError
from ...constructions.parameters import (DEFAULT_EXHAUSTIVE_LIMIT, DEFAULT_SEARCH_MAX_LEN, DEFAULT_SEARCH_WORDS,
                                         MAX_TIMEOUT_S, REGIMES, parse_schedule, to_fraction)

#: exit status: success; a claim refuted or unknown / a check failed; bad input (one line, no traceback)
EXIT_OK, EXIT_FAIL, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
#: mpmath's working precision (decimal digits) every command runs at (:func:`softhard.solver.cli.main`)
WORKING_DPS = 30


class UsageErrors:
    """How usage errors are reported, shared by the root parser and every command's parser:
    ``json`` is set when the command line asks for ``--json`` (scripts then get a JSON object on
    stdout too).  (A plain class, not a dataclass: :mod:`dataclasses` costs every command ~8 ms.)"""

    def __init__(self, json: bool = False):
        self.json = json

    def __repr__(self) -> str:
        return f"UsageErrors(json={self.json!r})"

    def __eq__(self, other):
        return self.json == other.json if other.__class__ is self.__class__ else NotImplemented

    __hash__ = None  # type: ignore[assignment]  (mutable, as the dataclass it was)


def one_line(text: str) -> str:
    """``text`` with every non-printable character (newlines, NEL, control characters: from an
    argument or a file name echoed back) written as its escape, so a message stays one line."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and exit status 2 (with ``--json``, also one
    JSON object on stdout).  ``usage_errors``: the shared :class:`UsageErrors`."""

    def __init__(self, *args, usage_errors: UsageErrors | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.usage_errors = usage_errors if usage_errors is not None else UsageErrors()
        #: options may stand anywhere among the positional arguments (``run FORMULA --tau T WORD``):
        #: set by :func:`softhard.solver.cli.build_parsers` on every command parser without
        #: sub-commands (argparse's intermixed parsing refuses those)
        self.intermixed = False
        self._intermixing = False

    def parse_known_args(self, args=None, namespace=None):
        """argparse's, or its intermixed form (:meth:`parse_known_intermixed_args`: all options
        first, then the positionals from what is left) when :attr:`intermixed` is set — the root
        parser hands a command's arguments to this method of the command's parser."""
        if not self.intermixed or self._intermixing:
            return super().parse_known_args(args, namespace)
        self._intermixing = True  # the intermixed parse calls this method again, twice
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False

    def error(self, message):
        message = one_line(message)
        if self.usage_errors.json:
            print(json.dumps({"error": message, "kind": "UsageError", "exit": EXIT_BAD_INPUT}))
        self.exit(EXIT_BAD_INPUT, f"softhard: error: {message} (see 'softhard {' '.join(self.prog.split()[1:])} --help')\n"
                  if " " in self.prog else f"softhard: error: {message}\n")


def value_options(parsers) -> set[str]:
    """The long options of ``parsers`` that take a value (for :func:`attach_negative_values`)."""
    out: set[str] = set()
    for p in parsers:
        for act in p._actions:
            if act.option_strings and act.nargs != 0:
                out.update(o for o in act.option_strings if o.startswith("--"))
    return out


def attach_negative_values(takes_value: set[str], argv: list[str]) -> list[str]:
    """``--eta -1/4`` → ``--eta=-1/4``: argparse takes a value starting with '-' for an option
    unless it looks like a plain negative number, so ``-1/4`` or ``-1e-3`` would be refused
    with a confusing "expected one argument"; attached, the option's own check names the value."""
    out: list[str] = []
    for a in argv:
        if out and out[-1] in takes_value and len(a) > 1 and a[0] == "-" and (a[1].isdigit() or a[1] == "."):
            out[-1] = f"{out[-1]}={a}"
        else:
            out.append(a)
    return out


# ---------------------------------------------------------------------------------------------
# argument types


def _short(v: int) -> str:
    """An integer as text, a long one shortened to its leading digits and exponent."""
    t = str(abs(v))
    return str(v) if len(t) <= 24 else f"{'-' if v < 0 else ''}{t[0]}.{t[1:3]}e{len(t) - 1}"


#: the largest --max-positions (word positions of one numeric run; 10^18 < 2^63: every length
#: below it is an int64 for NumPy)
MAX_POSITIONS_LIMIT = 10**18


def max_positions_option():
    """argparse type of ``--max-positions``: an integer in [1, :data:`MAX_POSITIONS_LIMIT`]."""
    return int_option("--max-positions", 1, maximum=MAX_POSITIONS_LIMIT)


def int_option(name: str, minimum: int, why: str = "", maximum: int | None = None):
    """argparse type: an integer ``>= minimum`` (and ``<= maximum`` if given; a one-line usage
    error otherwise), also in exact decimal notation (``1e3`` is 1000, as every grid and length
    option reads it)."""
    def conv(s: str) -> int:
        try:
            v = int(s)
        except ValueError:  # not an integer, or more digits than Python converts (4300)
            try:
                q = to_fraction(s, name)
            except ParameterError:
                q = None
            if q is not None and q.denominator == 1:
                return bounded(q.numerator)
            shown = repr(s) if len(s) <= 40 else repr(s[:37] + "...")
            digits = s.strip().lstrip("+-")
            if digits.isdigit():
                raise argparse.ArgumentTypeError(f"{name}: {shown} has too many digits ({len(digits)}; at most "
                                                 "4300 convert)") from None
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {shown}") from None
        return bounded(v)

    def bounded(v: int) -> int:
        if v < minimum:
            raise argparse.ArgumentTypeError(f"{name} must be >= {minimum}{why}, got {_short(v)}")
        if maximum is not None and v > maximum:
            raise argparse.ArgumentTypeError(f"{name} must be <= {_short(maximum)}, got {_short(v)}")
        return v
    return conv


def positive_int(name: str):
    """argparse type: an integer ``>= 1`` (a count: ``--workers``, ``--mlp-exactness``; a length:
    :func:`length_option`)."""
    return int_option(name, 1)


def nonneg_int(name: str):
    """argparse type: an integer ``>= 0``."""
    return int_option(name, 0)


def seconds_type(option: str):
    """argparse type of a seconds option (``--timeout``, ``--budget``): finite, in (0, MAX_TIMEOUT_S]."""
    def parse(s: str) -> float:
        try:
            v = float(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option} must be a number of seconds, got {s!r}") from None
        if not (0 < v <= MAX_TIMEOUT_S):  # also rejects nan
            raise argparse.ArgumentTypeError(f"{option} must be > 0 and <= {MAX_TIMEOUT_S:g} seconds, got {s}")
        return v
    return parse


#: argparse type of ``--timeout``
seconds_option = seconds_type("--timeout")
#: argparse type of ``verify --budget``
budget_option = seconds_type("--budget")


def tau_option(s: str) -> Fraction:
    """argparse type of ``--tau``: an exact temperature in [1e-300, 1e300] (numeric runs use 1/tau
    as a float64)."""
    try:
        v = to_fraction(s, "tau")
    except ParameterError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"tau must be > 0, got {s}")
    if not (Fraction(1, 10**300) <= v <= 10**300):  # numeric runs need 1/tau as a float64
        raise argparse.ArgumentTypeError(f"tau must be between 1e-300 and 1e300 (numeric runs use 1/tau as a "
                                         f"float64), got {s}")
    return v


def length_option(name: str):
    """argparse type: a length ``>= 1``, also in exact decimal notation (``1e6`` is 1000000; every
    integer option reads it, :func:`int_option`); below 1 it says "n < 1 is not a length"."""
    return int_option(name, 1, " (n < 1 is not a length)")


def choice_option(name: str, choices):
    """argparse type: one of ``choices`` (argparse's own wording of an invalid choice)."""
    def conv(s: str) -> str:
        if s not in choices:
            raise argparse.ArgumentTypeError(f"invalid choice: {s!r} (choose from {', '.join(choices)})")
        return s
    return conv


def list_of(conv=str):
    """argparse type of a grid option (``certify --regime T,U --n-max 1e3,1e6``): the
    comma-separated values, each converted by ``conv``, as a tuple (one value: a 1-tuple).
    The batch module (:mod:`.handlers.batch`) expands the grid into one job per combination."""
    def parse(s: str) -> tuple:
        parts = [x.strip() for x in s.split(",")]
        if not all(parts):
            raise argparse.ArgumentTypeError(f"empty value in the list {s!r}")
        return tuple(conv(x) for x in parts)
    return parse


# ---------------------------------------------------------------------------------------------
# option sets shared by several commands

FORMULA_HELP = "an inline formula (e.g. 'a S b') or a .ltl file declaring alphabet and formula"


def add_formula_options(p: argparse.ArgumentParser, *, formula_nargs: str | None = None,
                        formula_help: str = FORMULA_HELP, grid: bool = False, regime: bool = True) -> None:
    """The formula argument and the construction's options (regime, alphabet, eta, beta,
    comparator, eps-ln), and ``--json``.  ``formula_nargs="?"``: the formula may be omitted (a
    command with another source, or a default example).  ``grid``: regime, eta, beta, comparator
    and eps-ln take comma-separated lists (:func:`list_of`; ``certify``'s batches).
    ``regime=False``: no ``--regime`` (a command with one regime offers no choice it would refuse)."""
    g = list_of if grid else (lambda conv=None: conv)
    if formula_nargs is None:
        p.add_argument("formula", metavar="FORMULA_OR_FILE", help=formula_help)
    else:
        p.add_argument("formula", metavar="FORMULA_OR_FILE", nargs=formula_nargs, default=None, help=formula_help)
    if regime:
        add_regime_option(p, grid=grid)
    p.add_argument("--alphabet", default=None,
                   help="alphabet of an inline formula: a string of one-character symbols (default: the "
                        "symbols the formula mentions); given with a .ltl file, it replaces the file's alphabet")
    p.add_argument("--eta", type=g(), default="1/4", help="clean-up margin eta in (0, 1/2), exact (e.g. 1/4); default 1/4")
    p.add_argument("--beta", type=g(), default="1/4", help="regime T tie-break weight, 0 < beta <= 1/4; default 1/4")
    comparators = ("how count comparisons are built (THEORY §5): ln = layer norm of [F, -F] (exact at eps_ln = 0), "
                   "head = temperature-scaled comparator head (1/tau = Theta(n))")
    choices = ("ln", "head", "pe") if regime else ("ln", "head")
    p.add_argument("--comparator", **({"type": list_of(choice_option("--comparator", choices))} if grid
                                      else {"choices": list(choices)}), default=None,
                   help=comparators + (", pe = unbounded-PE comparator head (regimes U, P: one tau for all n). "
                                       "Default: pe in regimes U and P, head in regime T" if regime else
                                       ". Default head"))
    p.add_argument("--construction", choices=["auto", "unique", "average"], default="auto",
                   help="how P/F/H/G selections (whose output does not depend on which maximal position is "
                        "chosen) are built (THEORY §4b): unique = unique-hard, rightmost/leftmost (1/tau = "
                        "Theta(n) in regime T), average = average-hard over every position where the argument "
                        "holds (regime T, 1/tau = Theta(log n)), auto = per node the one needing the smaller "
                        "1/tau (average in regime T, unique in U and P). Default auto")
    p.add_argument("--eps-ln", type=g(), default=None,
                   help="layer-norm epsilon >= 0 of the ln comparator, exact (e.g. 1e-12). Default 0 (exact); "
                        "certify --find-tau searches the largest certifiable value when this is not given")
    p.add_argument("--schedule", default=None, metavar="const|lin[:S]|log[:S]",
                   help="temperature schedule (THEORY §9): const = one 1/tau (--tau), lin:S = 1/tau(n) = S*n, "
                        "log:S = 1/tau(n) = S*ln(n+1) (log-length scaling: logits times S*ln(n+1)); certify proves "
                        "every node for all n >= n-min (or says where and why it fails); without :S, certify "
                        "--find-tau finds the smallest S (multiples of 1/8); bound --schedule lin|log shows the S each node "
                        "needs; run and confirm take lin:S or log:S and run each length n at 1/tau(n)")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON instead of tables")


def add_regime_option(p: argparse.ArgumentParser, *, grid: bool = False) -> None:
    """``--regime T|U|P`` (default T); ``grid``: a comma-separated list (:func:`list_of`)."""
    p.add_argument("--regime", **({"type": list_of(choice_option("--regime", REGIMES))} if grid else
                                  {"choices": list(REGIMES)}), default="T",
                   help="T: bounded PE j/n, temperature tau(n) shrinking with n; U: unbounded PE j, one fixed "
                        "tau (THEORY §1, §4); P: U plus j^2 and (-1)^j, needed by even()/odd() (THEORY §5). "
                        "Default T")


def add_gap_options(p: argparse.ArgumentParser) -> None:
    """The gap analysis's options (``gap``, ``certify --model``)."""
    p.add_argument("--exhaustive-limit", type=nonneg_int("--exhaustive-limit"), default=DEFAULT_EXHAUSTIVE_LIMIT,
                   help="enumerate every word when there are at most this many of length <= n-max "
                        f"(default {DEFAULT_EXHAUSTIVE_LIMIT})")
    p.add_argument("--method", choices=["auto", "exhaustive", "searched"], default="auto",
                   help="gap analysis: auto (exhaustive if within the limit), exhaustive, searched")
    p.add_argument("--search-words", type=nonneg_int("--search-words"), default=DEFAULT_SEARCH_WORDS,
                   help=f"searched analysis: exact evaluations (default {DEFAULT_SEARCH_WORDS})")
    p.add_argument("--search-max-len", type=nonneg_int("--search-max-len"), default=DEFAULT_SEARCH_MAX_LEN,
                   help=f"searched analysis: longest word tried (default {DEFAULT_SEARCH_MAX_LEN})")
    p.add_argument("--seed", type=nonneg_int("--seed"), default=0, help="searched analysis: random seed (>= 0)")
    p.add_argument("--tie-break", choices=["auto", "off"], default="auto",
                   help="add the beta*j/n tie-break to UHA heads with ties (THEORY §4); default auto")


def add_timeout_option(p: argparse.ArgumentParser, help: str = "hard wall-clock limit per solver query, seconds "
                       "(default 20)", default: float | None = 20.0) -> None:
    """``--timeout`` (seconds per solver query; default 20, or ``default``: None for verify's
    "the certificate's own limit")."""
    p.add_argument("--timeout", type=seconds_option, default=default, help=help)


def schedule_option(args) -> tuple[str | None, Fraction | None]:
    """``--schedule`` as ``(kind, S)`` (THEORY §9): kind None for the constant schedule (or none
    given), S the constant after ``:`` or None; a bad value is named as the option."""
    text = getattr(args, "schedule", None)
    if text is None:
        return None, None
    try:
        kind, s = parse_schedule(text)
    except ParameterError as e:
        raise ParameterError(f"argument --schedule: {e}") from None
    return (None if kind == "const" else kind), s
