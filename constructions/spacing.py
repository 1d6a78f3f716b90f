"""Key spacing: the least distance between two positions where a local key formula holds.

A selection head's regime-T leak bound (THEORY §4) sums the weight of the earlier positions whose
key is 1.  If a key can never be 1 at two positions closer than ``d`` (the key ``a & Y(b & Y a)``,
"aba ends here", is never 1 at adjacent positions: ``d = 2``), those positions sit at distances of
at least ``d, 2d, 3d, …`` slots and the geometric sum runs over ``r^d`` instead of ``r`` — the
tightest bound the structure justifies (THEORY §2, "structured rows"), and a ``d``-fold smaller
1/τ.

The spacing is *proved by enumeration*, never guessed: a formula built from atoms, ``true``,
``false``, Boolean connectives and ``Y``/``X`` only is *local* — its value at position ``i``
depends only on the symbols at ``i−p … i+f`` (``p``/``f``: the ``Y``/``X`` nesting depths) and on
which of those positions exist.  Two positions ``i < i + e`` where it holds therefore stay such
positions in the factor ``w[max(1, i−p) … min(n, i+e+f)]``, a word of length at most
``p + f + e + 1``.  Enumerating every word up to length ``p + f + D + 1`` thus finds every pair at
distance ``e ≤ D``; if none exists, the spacing is at least ``D + 1``.  Any other key (with
``P H S U F G``, counts or parity) is given spacing 1, the general case.
"""

from __future__ import annotations

import itertools
from typing import Sequence

from .ast import FUTURE_OPS, PAST_OPS, Atom, Binary, Const, Formula, Unary, operators
from .semantics import truth

#: largest spacing looked for (the bound's gain is a factor d in 1/τ)
MAX_SPACING = 4
#: most words enumerated; beyond it the key is given spacing 1 (sound, only less tight)
MAX_WORDS = 1 << 14
#: budget of positions (word length × words) of :func:`_first_by_prefixes`; binds only for a
#: one-symbol alphabet (two symbols reach MAX_WORDS first)
MAX_POSITIONS = 1 << 20

_LOCAL_UNARY = {"!", "Y", "X"}
_LOCAL_BINARY = {"&", "|", "->"}


def locality(f: Formula) -> tuple[int, int] | None:
    """``(p, f)``: how far back (``Y`` depth) and forward (``X`` depth) the value of ``f`` at a
    position looks, or None if ``f`` is not local (it has an unbounded operator, a count or a
    parity test)."""
    if isinstance(f, (Const, Atom)):
        return 0, 0
    if isinstance(f, Unary) and f.op in _LOCAL_UNARY:
        inner = locality(f.arg)
        if inner is None:
            return None
        p, q = inner
        return (p + 1, q) if f.op == "Y" else (p, q + 1) if f.op == "X" else (p, q)
    if isinstance(f, Binary) and f.op in _LOCAL_BINARY:
        a, b = locality(f.left), locality(f.right)
        if a is None or b is None:
            return None
        return max(a[0], b[0]), max(a[1], b[1])
    return None


def _words(alphabet: Sequence[str], longest: int, max_words: int):
    """Every word over ``alphabet`` of length 2 … ``longest`` (shortest first), or None when the
    words up to ``longest`` number more than ``max_words`` (the enumeration is refused)."""
    k = len(alphabet)
    if sum(k**L for L in range(1, longest + 1)) > max_words:
        return None
    return (w for L in range(2, longest + 1) for w in itertools.product(alphabet, repeat=L))


def key_spacing(f: Formula, alphabet: Sequence[str], *, max_spacing: int = MAX_SPACING,
                max_words: int = MAX_WORDS) -> int:
    """The least ``d ≥ 1`` such that ``f`` never holds at two positions less than ``d`` apart,
    in any word over ``alphabet``, capped at ``max_spacing + 1`` (module docstring: proved by
    enumerating every word up to length ``p + f + max_spacing + 1``).  Returns 1 for a non-local
    formula or when the enumeration would exceed ``max_words`` words (the general case, always
    sound).  A formula that holds nowhere gets ``max_spacing + 1``.

    Source: THEORY §2 "structured rows", §4 regime T; used by :func:`softhard.bounds.selection.leak_T`.
    """
    loc = locality(f)
    if loc is None:
        return 1
    words = _words(alphabet, loc[0] + loc[1] + max_spacing + 1, max_words)
    if words is None:
        return 1
    best = max_spacing + 1
    for w in words:
        ones = [i for i, v in enumerate(truth(f, w)) if v]
        for a, b in zip(ones, ones[1:]):
            if b - a < best:
                best = b - a
                if best == 1:
                    return 1
    return best


def key_first(f: Formula, alphabet: Sequence[str], direction: str = "past", *,
              max_words: int = MAX_WORDS) -> int:
    """The least ``p ≥ 1`` such that ``f`` can hold at position ``p`` (``direction="past"``) or at
    position ``n + 1 − p`` (``"future"``: counted from the end) of some word — proved by
    enumeration like :func:`key_spacing`: a local formula with look-back ``P`` and look-ahead ``Q``
    has, at every position more than ``P`` from the start (``Q`` from the end), the value it has at
    position ``P + 1`` (``n − Q``) of the same window, so positions up to ``P + 1`` (``Q + 1``)
    decide; every word of length ≤ ``P + Q + 1`` is tried.  Returns 1 (the general case, always
    sound) for a non-local formula or beyond ``max_words``; ``P + 1`` (``Q + 1``) when it never
    holds there.

    Source: THEORY §4b (the output bound of a regime-U selection whose value is its key: BOS sits
    ``j*`` ≥ p above the chosen position).
    """
    loc = locality(f)
    if loc is None:
        return _first_by_prefixes(f, alphabet, direction, max_words)
    back, ahead = loc
    near = back if direction == "past" else ahead
    k = len(alphabet)
    longest = back + ahead + 1
    if sum(k**L for L in range(1, longest + 1)) > max_words:
        return 1
    best = near + 1
    for L in range(1, longest + 1):
        for w in itertools.product(alphabet, repeat=L):
            t = truth(f, w)
            for i, v in enumerate(t):
                if v:
                    p = i + 1 if direction == "past" else L - i
                    best = min(best, p)
            if best == 1:
                return 1
    return best


def _first_by_prefixes(f: Formula, alphabet: Sequence[str], direction: str, max_words: int) -> int:
    """:func:`key_first` of a non-local formula that looks one way only: a formula without future
    operators (X F G U) has at position ``p`` the value it has at the last position of the prefix
    ``w[1 … p]`` (``Y P H S`` and counts look at the prefix only); one without past operators or
    counts has at position ``n + 1 − p`` the value it has at the first position of the suffix of
    length ``p``.  So trying every word of length 1, 2, … in turn, the first length ``L`` at which
    ``f`` holds at that end of some word is the answer; if the words run past ``max_words`` before
    one is found (or their positions past :data:`MAX_POSITIONS`), ``f`` holds at no position before
    ``L`` and ``L`` is returned (sound).  Any other
    formula: 1, the general case.  Source: THEORY §4b (regime-U output bound; issue 13: keys like
    ``0 & P 1`` of tomita7)."""
    ops = operators(f)
    one_sided = not ops & FUTURE_OPS if direction == "past" else not ops & PAST_OPS and "#" not in ops
    if not one_sided:
        return 1
    k, words, positions = len(alphabet), 0, 0
    for L in itertools.count(1):
        words += k**L
        positions += k**L * L
        if words > max_words or positions > MAX_POSITIONS:  # (positions: a one-symbol alphabet has one
            return L                                         # word per length; 2^14 of them cost 20 s)
        for w in itertools.product(alphabet, repeat=L):
            t = truth(f, w)
            if t[-1] if direction == "past" else t[0]:
                return L


def value_spacing(key: Formula, value: Formula, alphabet: Sequence[str], *, max_spacing: int = MAX_SPACING,
                  max_words: int = MAX_WORDS) -> int:
    """The least ``e ≥ 1`` such that two positions ``e`` apart where ``key`` holds can carry
    different values of ``value``, capped at ``max_spacing + 1`` (no such pair at distance
    ≤ ``max_spacing``), proved by enumeration as :func:`key_spacing` is (both formulas local, with
    the larger look-back and look-ahead of the two: every word up to length ``p + f + max_spacing + 1``).
    Returns 1 (the general case, always sound) for a non-local formula or beyond ``max_words``.

    Source: THEORY §4c (the output bound of a unique selection whose value is not its key: the
    earlier key = 1 positions that can make an output error sit at least this far from the chosen one).
    """
    lk, lv = locality(key), locality(value)
    if lk is None or lv is None:
        return 1
    words = _words(alphabet, max(lk[0], lv[0]) + max(lk[1], lv[1]) + max_spacing + 1, max_words)
    if words is None:
        return 1
    best = max_spacing + 1
    for w in words:
        tk, tv = truth(key, w), truth(value, w)
        ones = [i for i, b in enumerate(tk) if b]
        for x, a in enumerate(ones):
            for b in ones[x + 1:]:
                if b - a >= best:
                    break
                if tv[a] != tv[b]:
                    best = b - a
                    if best == 1:
                        return 1
    return best
