"""Oracles for the example languages: regular expressions written independently of the formulas,
with samplers of members and near misses (shared by the semantics and transformer tests)."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MAX_EXHAUSTIVE = 12
N_RANDOM = 10_000
MAX_LEN = 500

Sampler = Callable[[random.Random, int], str]


@dataclass(frozen=True)
class Language:
    regex: str          # the language, as a Python regular expression (re.fullmatch)
    alphabet: str
    member: Sampler     # a word in the language of length about L (L >= 1)
    near_miss: Sampler  # a word close to the language, usually outside it


def _split(rng: random.Random, total: int, parts: int) -> list[int]:
    cuts = sorted(rng.randint(0, total) for _ in range(parts - 1))
    return [b - a for a, b in zip([0, *cuts], [*cuts, total], strict=True)]


def _repeat_to(rng: random.Random, L: int, pieces: list[str]) -> str:
    out = ""
    while len(out) < L:
        out += rng.choice(pieces)
    return out


def _dyck_block(rng: random.Random, inner_pairs: int) -> str:
    return "(" + "()" * inner_pairs + ")"


def _dyck_member(rng: random.Random, L: int) -> str:
    out = ""
    while len(out) < L:
        out += _dyck_block(rng, rng.choice([0, 0, 1, 2, 5, rng.randint(0, 40)]))
    return out


def _dyck_near(rng: random.Random, L: int) -> str:
    w = _dyck_member(rng, max(L - 4, 2))
    k = rng.randint(0, len(w))
    choice = rng.randrange(4)
    if choice == 0:    # insert a pair somewhere: depth may become 3 (or stay fine)
        return w[:k] + "()" + w[k:]
    if choice == 1:    # a depth-3 block
        return w[:k] + "((()))" + w[k:] if rng.random() < 0.5 else w + "((()))"
    if choice == 2:    # a proper prefix (unbalanced unless it ends between blocks)
        return w[: max(1, k)]
    return ")" + w[1:]  # starts with a close


def _no_aba(rng: random.Random, L: int) -> str:
    # a-runs separated by at least two b's never contain the factor aba
    out = "b" * rng.randint(0, 3)
    while len(out) < L:
        out += "a" * rng.randint(1, 5) + "b" * rng.randint(2, 5)
    return out


LANGUAGES: dict[str, Language] = {
    "tomita1": Language(
        r"1*", "01",
        member=lambda rng, L: "1" * L,
        near_miss=lambda rng, L: "1" * (L - 1) + "0" if rng.random() < 0.5 else "0" + "1" * (L - 1),
    ),
    "tomita2": Language(
        r"(10)*", "01",
        member=lambda rng, L: "10" * max(1, L // 2),
        near_miss=lambda rng, L: rng.choice(["", "1", "0", "01", "00", "11"]).join(
            ["10" * rng.randint(0, L // 4), "10" * rng.randint(1, L // 4 + 1)]),
    ),
    "tomita4": Language(
        r"(1|01|001)*(0|00)?", "01",
        member=lambda rng, L: _repeat_to(rng, L, ["1", "01", "001"]) + rng.choice(["", "0", "00"]),
        near_miss=lambda rng, L: _repeat_to(rng, L, ["1", "01", "001", "001"]) + "000"
        + _repeat_to(rng, rng.randint(0, 20), ["1", "01", "001"]),
    ),
    "tomita7": Language(
        # 0*1*0*1* written so that each run's end is determined by the next symbol: the same
        # language (equal to 0*1*0*1* on all 131,071 words up to length 16) without the
        # backtracking that cost ~0.45 s per 10,000 near misses (ISSUE 16, lang12); not the
        # possessive 0*+1*+0*+1*+, which Python 3.10 (supported: pyproject) cannot compile
        r"0*(?:1+(?:0+1*)?)?", "01",
        member=lambda rng, L: "".join(s * k for s, k in zip("0101", _split(rng, L, 4), strict=True)),
        near_miss=lambda rng, L: "".join(
            s * max(1, k) for s, k in zip("01010", _split(rng, L, 5), strict=True)),
    ),
    "aba": Language(
        r"[ab]*aba[ab]*", "ab",
        member=lambda rng, L: (lambda u, k: u[:k] + "aba" + u[k:])(
            "".join(rng.choices("ab", k=max(0, L - 3))), rng.randint(0, max(0, L - 3))),
        near_miss=_no_aba,
    ),
    "a_then_b": Language(
        r"([ab]*b)?", "ab",
        member=lambda rng, L: "".join(rng.choices("ab", k=L - 1)) + "b",
        near_miss=lambda rng, L: "".join(rng.choices("ab", k=L - 1)) + "a",
    ),
    "dyck1_depth2": Language(
        r"(\((\(\))*\))*", "()",
        member=_dyck_member,
        near_miss=_dyck_near,
    ),
}


def _mutate(rng: random.Random, w: str, alphabet: str) -> str:
    for _ in range(rng.randint(1, 3)):
        k = rng.randrange(len(w) + 1)
        op = rng.randrange(4)
        if op == 0 and k < len(w):  # substitute
            w = w[:k] + rng.choice(alphabet) + w[k + 1:]
        elif op == 1 and len(w) > 1 and k < len(w):  # delete
            w = w[:k] + w[k + 1:]
        elif op == 2:  # insert one symbol
            w = w[:k] + rng.choice(alphabet) + w[k:]
        else:  # insert a short factor
            w = w[:k] + "".join(rng.choice(alphabet) for _ in range(rng.randint(2, 3))) + w[k:]
    return w


def random_words(lang: Language, seed: int) -> list[str]:
    """N_RANDOM words of lengths 1..MAX_LEN: uniform, members, mutated members, near misses (a new
    list; drawn once per process for each ``(lang, seed)``: the transformer tests of both regimes
    draw the same words)."""
    return list(_random_words(lang, seed))


@functools.cache
def _random_words(lang: Language, seed: int) -> tuple[str, ...]:
    rng = random.Random(seed)
    words = []
    for i in range(N_RANDOM):
        L = rng.randint(1, MAX_LEN)
        kind = i % 4
        if kind == 0:
            w = "".join(rng.choices(lang.alphabet, k=L))  # uniform; choices draws ~5x faster than choice
        elif kind == 1:
            w = lang.member(rng, L)
        elif kind == 2:
            w = _mutate(rng, lang.member(rng, L), lang.alphabet)
        else:
            w = lang.near_miss(rng, L)
        w = w[:MAX_LEN] or rng.choice(lang.alphabet)
        words.append(w)
    return tuple(words)


