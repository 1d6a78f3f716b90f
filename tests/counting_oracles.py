"""Oracles for the counting example languages, written directly in Python (not through the
formula evaluator), with word samplers: uniform random words and near-balanced adversarial words
(count difference 0 or ±1 at every position — the hard cases of THEORY §5)."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from dataclasses import dataclass


def majority(w: str) -> bool:
    """More a's than b's."""
    return w.count("a") > w.count("b")


def dyck1(w: str) -> bool:
    """Balanced parentheses: no prefix closes more than it opens, and the totals are equal."""
    depth = 0
    for ch in w:
        depth += 1 if ch == "(" else -1
        if depth < 0:
            return False
    return depth == 0


def anbn(w: str) -> bool:
    """a^k b^k with k >= 1."""
    k = len(w) // 2
    return len(w) % 2 == 0 and k >= 1 and w == "a" * k + "b" * k


def parity(w: str) -> bool:
    """An odd number of 1s."""
    return w.count("1") % 2 == 1


def tomita5(w: str) -> bool:
    """An even number of 0s and an even number of 1s."""
    return w.count("0") % 2 == 0 and w.count("1") % 2 == 0


@dataclass(frozen=True)
class CountingLanguage:
    oracle: Callable[[str], bool]
    alphabet: str
    near: Callable[[random.Random, int], str]  # an adversarial (near-balanced) word of length L


def _pairs(rng: random.Random, L: int, x: str, y: str) -> str:
    """Concatenated ``xy`` / ``yx`` pairs (count difference 0 or ±1 at every position), then
    possibly one extra symbol."""
    out = "".join(rng.choice((x + y, y + x)) for _ in range(L // 2))
    if L % 2:
        out += rng.choice((x, y))
    return out


def _near_majority(rng: random.Random, L: int) -> str:
    return _pairs(rng, L, "a", "b")


def _near_dyck(rng: random.Random, L: int) -> str:
    # mostly "()" pairs, sometimes ")(" (a prefix dips to -1), sometimes a balanced nest
    r = rng.random()
    if r < 0.5:
        out = "".join("()" if rng.random() < 0.97 else ")(" for _ in range(L // 2))
    elif r < 0.8:
        out = _pairs(rng, L - L % 2, "(", ")")
    else:
        k = L // 2
        out = "(" * k + ")" * k
    return out + (rng.choice("()") if L % 2 else "")


def _near_anbn(rng: random.Random, L: int) -> str:
    k = max(1, L // 2)
    d = rng.choice((-1, 0, 0, 1))
    w = "a" * k + "b" * max(0, k + d)
    if rng.random() < 0.2 and len(w) > 2:  # one swapped adjacent pair
        i = rng.randrange(len(w) - 1)
        w = w[:i] + w[i + 1] + w[i] + w[i + 2:]
    return w


def _near_parity(rng: random.Random, L: int) -> str:
    # about half 1s (both C and n - C large: the parity head's worst case) and the pairs pattern
    return _pairs(rng, L, "0", "1") if rng.random() < 0.5 else "".join(rng.choice("01") for _ in range(L))


COUNTING_LANGUAGES: dict[str, CountingLanguage] = {
    "majority": CountingLanguage(majority, "ab", _near_majority),
    "dyck1": CountingLanguage(dyck1, "()", _near_dyck),
    "anbn": CountingLanguage(anbn, "ab", _near_anbn),
    "parity": CountingLanguage(parity, "01", _near_parity),
    "tomita5": CountingLanguage(tomita5, "01", _near_parity),
}


def length_grid(n_max: int, small: int = 12, points: int = 60) -> list[int]:
    """Every length up to ``small`` and ``points`` log-spaced lengths from ``small+1`` to ``n_max``
    (a numeric run costs per distinct length, so random words draw their lengths from this grid)."""
    lo = small + 1
    return sorted(set(range(1, small + 1)) | {round(lo * (n_max / lo) ** (k / (points - 1))) for k in range(points)})


def random_words(alphabet: str, count: int, lengths: list[int], seed: int) -> list[str]:
    """``count`` uniform random words, each length drawn uniformly from ``lengths`` (a new list;
    drawn once per process for each argument tuple: the three comparator configurations of a
    language in tests/test_counting_languages.py draw the same words)."""
    return list(_random_words(alphabet, count, tuple(lengths), seed))


@functools.cache
def _random_words(alphabet: str, count: int, lengths: tuple[int, ...], seed: int) -> tuple[str, ...]:
    rng = random.Random(seed)
    # choices draws a word's symbols in one call (uniform, as choice per symbol; ~5x faster)
    return tuple("".join(rng.choices(alphabet, k=rng.choice(lengths))) for _ in range(count))


def near_words(lang: CountingLanguage, count: int, lengths: list[int], seed: int) -> list[str]:
    """``count`` adversarial words, each of a length drawn uniformly from ``lengths`` (a new list;
    drawn once per process for each argument tuple, as :func:`random_words`)."""
    return list(_near_words(lang, count, tuple(lengths), seed))


@functools.cache
def _near_words(lang: CountingLanguage, count: int, lengths: tuple[int, ...], seed: int) -> tuple[str, ...]:
    rng = random.Random(seed)
    return tuple(lang.near(rng, rng.choice(lengths)) or lang.alphabet[0] for _ in range(count))
