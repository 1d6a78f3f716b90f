"""Parameters: exact parsing and validation of β, η, ε, ε_LN, τ, the regime and the comparator.

Shared by the constructions (:mod:`softhard.constructions.weights`,
:mod:`softhard.constructions.counting`, :mod:`softhard.constructions.compile`), the pipeline's
:class:`~softhard.bounds.params.Params` and the command line; it sits below all of them.  It
imports nothing heavy (no NumPy): the command line's argument types use it while building the
parser, before any command runs.
"""

from __future__ import annotations

import math
import os
import re
from fractions import Fraction
from pathlib import Path

from .errors import ParameterError


#: a decimal number as the command line and parameters accept it (an exponent is group 1)
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?")
#: largest decimal exponent of a parameter ("1e-300"): 10^10000 is a 33000-bit integer, while
#: "1e-999999999" would ask Fraction for a billion-digit power (a hang)
MAX_DECIMAL_EXPONENT = 10_000


def _show(s: str) -> str:
    """``s`` quoted for a one-line message (at most 40 characters of it)."""
    return repr(s) if len(s) <= 40 else repr(s[:37] + "...")


def _decimal(t: str, what: str, s: str) -> Fraction:
    m = _DECIMAL.fullmatch(t)
    if not m:
        raise ParameterError(f"{what}: {_show(s)} is not a finite number (use e.g. 1/4, 0.25, 2e-3 or 1/8.2)")
    if m.group(1) is not None and abs(int(m.group(1))) > MAX_DECIMAL_EXPONENT:
        raise ParameterError(f"{what}: {_show(s)}: decimal exponent beyond +-{MAX_DECIMAL_EXPONENT}")
    try:
        return Fraction(t)
    except ValueError:  # more digits than Python converts (4300)
        raise ParameterError(f"{what}: {_show(s)} has too many digits") from None


def fraction_text(x: Fraction, digits: int = 6) -> str:
    """``x`` for a one-line message: ``str(x)`` (``"1/4"``) while its numerator and denominator are
    short, else ``~d.ddddde+E`` (``digits`` significant digits, truncated; exact integer arithmetic).
    A parameter such as ``857e6421`` is a 6424-digit integer, which ``str`` refuses to print
    (Python's 4300-digit limit) — found by benchmarks/fuzz.py."""
    if x.numerator.bit_length() <= 200 and x.denominator.bit_length() <= 200:
        return str(x)
    a = abs(x)
    e = int((a.numerator.bit_length() - a.denominator.bit_length()) * 0.30103)  # estimate of log10(a)
    while Fraction(10) ** e > a:
        e -= 1
    while Fraction(10) ** (e + 1) <= a:
        e += 1
    m = a / Fraction(10) ** e  # in [1, 10)
    s = str(m.numerator * 10 ** (digits - 1) // m.denominator)
    return f"{'-' if x < 0 else ''}~{s[0]}.{s[1:]}e{e:+d}"


def to_fraction(x, what: str = "value") -> Fraction:
    """Parse ``x`` (int, Fraction, or a string: a decimal ``"0.25"``, ``"1e-3"``, or a quotient of
    two decimals ``"1/4"``, ``"1/8.2"`` = 5/41) exactly.

    Floats are accepted only through their decimal string (``0.1`` means 1/10), never their binary
    value.  Raises :class:`ParameterError` for NaN, infinities, a zero denominator, a signed
    denominator, decimal exponents beyond ``MAX_DECIMAL_EXPONENT`` and unparsable text, naming
    ``what``.
    """
    if isinstance(x, Fraction):
        return x
    if isinstance(x, bool):
        raise ParameterError(f"{what}: expected a number, got {x!r}")
    if isinstance(x, int):
        return Fraction(x)
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ParameterError(f"{what} must be a finite number, got {x!r}")
        x = repr(x)
    if hasattr(x, "p") and hasattr(x, "q"):  # sympy Rational
        return Fraction(int(x.p), int(x.q))
    s = str(x).strip()
    parts = s.split("/")
    if len(parts) == 1:
        return _decimal(s, what, s)
    if len(parts) != 2 or parts[1].strip()[:1] in ("+", "-"):
        raise ParameterError(f"{what}: {_show(s)} is not a finite number (use e.g. 1/4, 0.25, 2e-3 or 1/8.2)")
    num, den = _decimal(parts[0].strip(), what, s), _decimal(parts[1].strip(), what, s)
    if den == 0:
        raise ParameterError(f"{what}: {_show(s)} divides by zero")
    return num / den


#: the longest solver time limit accepted (one day; ``--timeout``, ``--budget``, ``timeout_s``): beyond
#: it a "limit" is no limit
MAX_TIMEOUT_S = 86400.0


def to_seconds(x, what: str) -> float:
    """A time limit in seconds, finite and in (0, :data:`MAX_TIMEOUT_S`]; raises
    :class:`ParameterError` naming ``what`` otherwise (also for a non-number)."""
    if isinstance(x, bool) or not isinstance(x, (int, float, Fraction)):
        raise ParameterError(f"{what} must be a number of seconds, got {repr(x)[:40]}")
    v = float(x)
    if not (0 < v <= MAX_TIMEOUT_S):  # also rejects NaN
        raise ParameterError(f"{what} must be > 0 and <= {MAX_TIMEOUT_S:g} seconds, got {x!r}")
    return v


def to_count(x, what: str, minimum: int = 1) -> int:
    """An integer ``>= minimum`` (a length such as ``n_max``) read exactly as the command line's
    integer options read it: an ``int``, an integral finite ``float`` through its decimal string
    (``1e3`` is 1000), or exact decimal text (``"1000"``, ``"1e6"``).  Raises
    :class:`ParameterError` naming ``what`` for a bool, NaN, an infinity, a fraction, unparsable
    text, another type, or a value below ``minimum``."""
    if isinstance(x, bool) or not isinstance(x, (int, float, str, Fraction)):
        raise ParameterError(f"{what} must be an integer >= {minimum}, got {repr(x)[:40]}")
    if isinstance(x, int):
        v = x
    else:
        q = to_fraction(x, what)  # NaN/infinity/text: one line naming what
        if q.denominator != 1:
            raise ParameterError(f"{what} must be an integer, got {_show(str(x))}")
        v = q.numerator
    if v < minimum:
        raise ParameterError(f"{what} must be >= {minimum}, got {v}")
    return v


def check_keywords(func: str, given, accepted) -> None:
    """Raise :class:`ParameterError` naming every keyword of ``given`` (names) that is not in
    ``accepted`` and listing the accepted ones: an API call's misspelt option (``Params(bogus=1)``,
    ``build_model(..., bogus=1)``) is one clear line, not Python's ``TypeError``.  ``func``: the
    function as the message names it."""
    unknown = sorted(set(given) - set(accepted))
    if unknown:
        raise ParameterError(f"{func}: unknown keyword argument{'s' if len(unknown) > 1 else ''} "
                             f"{', '.join(unknown)}; it accepts {', '.join(sorted(accepted))}")


def to_path(x, what: str) -> str | os.PathLike:
    """``x`` if it is a file name (a ``str`` or an ``os.PathLike``); raise :class:`ParameterError`
    naming ``what`` otherwise (``load_model(None)``: not Python's ``TypeError`` from ``Path``)."""
    if isinstance(x, (str, os.PathLike)):
        return x
    raise ParameterError(f"{what} must be a file name (a str or os.PathLike), got {type(x).__name__} {repr(x)[:40]}")


REGIMES = ("T", "U", "P")
DEFAULT_BETA = Fraction(1, 4)
DEFAULT_ETA = Fraction(1, 4)

#: defaults of the gap analysis (:func:`softhard.constructions.gaps.analyse_gaps`), also the
#: command line's defaults: exhaustive when at most this many words, else a search of
#: ``DEFAULT_SEARCH_WORDS`` exact evaluations on words up to ``DEFAULT_SEARCH_MAX_LEN`` symbols
DEFAULT_EXHAUSTIVE_LIMIT = 20_000
DEFAULT_SEARCH_WORDS = 20_000
DEFAULT_SEARCH_MAX_LEN = 512

#: default budget of ``--max-positions`` (``confirm``, ``certify``): word positions of a numeric
#: confirmation, dense-path work counted in the same unit; about a minute or two of CPU for a
#: 10-node construction
DEFAULT_MAX_POSITIONS = 10**8


def check_regime(regime: str) -> str:
    """Return ``regime`` ("T" or "U"); raise :class:`ParameterError` otherwise."""
    if regime not in REGIMES:
        raise ParameterError(f"regime must be 'T' (bounded PE, tau(n)), 'U' (unbounded PE, fixed tau) or 'P' "
                             f"(U plus j^2 and (-1)^j, for parity), got {regime!r}")
    return regime


def check_beta(beta) -> Fraction:
    """β as a Fraction in (0, 1/4]; raise :class:`ParameterError` otherwise (THEORY §4)."""
    b = to_fraction(beta, "beta")
    if not (0 < b <= Fraction(1, 4)):
        raise ParameterError(f"beta must satisfy 0 < beta <= 1/4 (THEORY §4), got {fraction_text(b)}")
    return b


def check_eta(eta) -> Fraction:
    """η as a Fraction in (0, 1/2); raise :class:`ParameterError` otherwise (THEORY §3)."""
    e = to_fraction(eta, "eta")
    if not (0 < e < Fraction(1, 2)):
        raise ParameterError(f"eta must satisfy 0 < eta < 1/2 (THEORY §3), got {fraction_text(e)}")
    return e


def check_eps_ln(eps) -> Fraction:
    """ε_LN as an exact Fraction ≥ 0; raise :class:`ParameterError` otherwise (THEORY §5 (a))."""
    e = to_fraction(eps, "eps_ln")
    if e < 0:
        raise ParameterError(f"eps_ln must be >= 0 (layer-norm epsilon; 0 is exact), got {fraction_text(e)}")
    return e


#: comparator methods for count comparisons (THEORY §5 (a), (b), (c))
COMPARATORS = ("ln", "head", "pe")


#: how a selection whose output does not depend on which maximal position is chosen (P, F: key =
#: value) is built: ``unique`` (UHA, rightmost/leftmost, THEORY §4), ``average`` (AHA over every
#: position where the key holds, regime T, THEORY §4b) or ``auto`` (per node the one needing the
#: smaller certified 1/τ)
CONSTRUCTIONS = ("auto", "unique", "average")


def check_construction(method: str) -> str:
    """Return ``method`` if it is one of :data:`CONSTRUCTIONS`; raise :class:`ParameterError` otherwise."""
    if method not in CONSTRUCTIONS:
        raise ParameterError(f"construction must be one of {', '.join(CONSTRUCTIONS)} (THEORY §4b), got {method!r}")
    return method


def check_comparator(method: str) -> str:
    """Return ``method`` if it is one of :data:`COMPARATORS`; raise :class:`ParameterError` otherwise."""
    if method not in COMPARATORS:
        raise ParameterError(f"comparator must be one of {', '.join(COMPARATORS)} (THEORY §5), got {method!r}")
    return method


#: temperature schedules (THEORY §9): ``const`` 1/τ = S, ``lin`` 1/τ(n) = S·n, ``log`` 1/τ(n) = S·ln(n+1)
#: ("log-length scaling": logits times S·ln(n+1)); S is the inverse temperature the certificate states
SCHEDULES = ("const", "lin", "log")


def check_schedule(kind: str) -> str:
    """Return ``kind`` if it is one of :data:`SCHEDULES`; raise :class:`ParameterError` otherwise."""
    if kind not in SCHEDULES:
        raise ParameterError(f"schedule must be one of {', '.join(SCHEDULES)} (THEORY §9), got {kind!r}")
    return kind


def parse_schedule(text: str) -> tuple[str, Fraction | None]:
    """``"const"``, ``"lin:S"``, ``"log:S"`` (or a kind without ``:S``, for a search) → ``(kind, S)``,
    S an exact Fraction > 0 or None.  Raises :class:`ParameterError` for anything else (THEORY §9)."""
    kind, sep, rest = str(text).strip().partition(":")
    check_schedule(kind)
    if not sep:
        return kind, None
    s = to_fraction(rest, "schedule constant S")
    if s <= 0:
        raise ParameterError(f"the schedule constant S must be > 0, got {s}")
    return kind, s


#: largest count coefficient a comparator holds exactly: float64 weights are exact integers up to 2^53
#: (and the constant's weight c + 1/2 is exact for |c| < 2^52)
MAX_COEFFICIENT = 2**53


def check_comparator_weights(node: str, terms, const: int) -> None:
    """Raise :class:`ParameterError` when a comparator ``[Σ a_k·#φ_k + const ≥ 0]`` (``terms``: pairs
    ``(count node or formula text, a_k)``) has a coefficient beyond :data:`MAX_COEFFICIENT` or a
    constant beyond 2^52 — what its float64 weights hold exactly (THEORY §5; the reference semantics
    compute in exact integers at any size).  Called when the node is built, before any analysis."""
    for u, c in terms:
        if abs(c) > MAX_COEFFICIENT:
            raise ParameterError(f"node {node!r}: count coefficient {c} of {str(u).removesuffix('/(i+1)')} is beyond "
                                 f"2^53, the float64 limit of the comparator's exact integer weights")
    if not -(2**52) <= const < 2**52:
        raise ParameterError(f"node {node!r}: constant {const} is beyond 2^52, the float64 limit at which "
                             f"the comparator's weight constant + 1/2 is exact")


def check_output_path(path: str | os.PathLike, *, force: bool = False, force_name: str = "--force") -> Path:
    """The certificate's output path, or :class:`ParameterError` if it is a directory, exists
    (without ``force``), lies in a missing directory or holds a NUL character — checked before any
    work is done (the command line checks it before it even loads a command's handler:
    :func:`softhard.solver.cli.certify.precheck`) and again when the file is written
    (:func:`softhard.solver.certjson.write_certificate`).  ``force_name``: how the message names the
    override (``--force`` on the command line, ``force=True`` from Python)."""
    p = Path(path)
    if "\x00" in str(p):  # only an in-process call can pass one (no OS argument holds it)
        raise ParameterError(f"{p}: not a file name (it contains a NUL character)")
    try:  # a name the OS refuses outright (too long, a file as a folder): one line, not an OSError later
        p.stat()
    except OSError as e:
        if not isinstance(e, FileNotFoundError):  # a file still to be written is fine
            raise ParameterError(f"{p}: not a usable file name ({e.strerror or e})") from None
    if p.is_dir():
        raise ParameterError(f"{p}: is a directory; give a file name for the certificate")
    if p.exists() and not force:
        raise ParameterError(f"{p}: file exists; use {force_name} to overwrite it")
    if p.parent and not p.parent.exists():
        raise ParameterError(f"{p.parent}: no such directory")
    return p
