"""Counting the words of a length range (model-file analyses, their budgets and certificates):
exact in closed form, or capped for a comparison with a limit at any length."""

from __future__ import annotations

import decimal
import math

from .errors import ParameterError

#: the most decimal digits of a word count computed exactly: a model certificate stores it as a
#: JSON integer, and Python converts int <-> str only up to 4300 digits
MAX_WORD_COUNT_DIGITS = 4000


def count_words(k: int, n_max: int, cap: int | None = None) -> int:
    """``Σ_{n=1}^{n_max} k^n`` (closed form), the number of words of length 1..``n_max`` over ``k``
    symbols.  With ``cap``: ``min(that, cap + 1)``, cheap for any ``n_max`` (for comparisons
    with a limit).  Raises :class:`ParameterError` (naming ``--n-max``) when, without ``cap``,
    the count has more than :data:`MAX_WORD_COUNT_DIGITS` digits."""
    if k <= 1:
        total = n_max * k
        return total if cap is None else min(total, cap + 1)
    if cap is not None:
        if n_max > cap.bit_length() + 1:  # k^n_max >= 2^n_max > cap
            return cap + 1
        return min((k ** (n_max + 1) - k) // (k - 1), cap + 1)
    if n_max * math.log10(k) > MAX_WORD_COUNT_DIGITS:
        raise ParameterError(f"--n-max {n_max}: there are more than 10^{MAX_WORD_COUNT_DIGITS} words of length "
                             f"<= n_max over {k} symbols, beyond what a model-file analysis counts exactly; use "
                             f"--n-max <= {int(MAX_WORD_COUNT_DIGITS / math.log10(k))}")
    return (k ** (n_max + 1) - k) // (k - 1)


def word_count_text(k: int, n_max: int) -> str:
    """The number of words of length 1..``n_max`` over ``k`` symbols for a message: exact below
    10^12, else "about 10^e" (from logarithms: any ``n_max``)."""
    if count_words(k, n_max, cap=10**12) <= 10**12:
        return str(count_words(k, n_max))
    try:
        return f"about 10^{int(n_max * math.log10(k))}"
    except OverflowError:  # n_max beyond float range (found by benchmarks/fuzz.py): decimal arithmetic
        with decimal.localcontext() as ctx:
            ctx.prec = len(str(n_max)) + 20
            return f"about 10^{int(decimal.Decimal(n_max) * decimal.Decimal(k).log10())}"
