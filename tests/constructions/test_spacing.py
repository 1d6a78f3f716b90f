"""Key spacing (constructions/spacing.py): the least distance between two positions where a local
key holds, checked against an independent oracle — regular expressions over every word up to
length 12 — and its use by the compiler."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from softhard.constructions import spacing
from softhard.constructions.compile import compile_formula
from softhard.constructions.errors import ParameterError
from softhard.constructions.ast import FUTURE_OPS, PAST_OPS, operators
from softhard.constructions.parse import load_spec, parse_formula
from softhard.constructions.semantics import truth
from softhard.constructions.spacing import MAX_SPACING, key_first, key_spacing, locality


def _oracle(pattern: str, alphabet: str, length: int = 12) -> int:
    """Least distance between two end positions of matches of ``pattern`` (a regex that must
    match a suffix of the prefix), over every word up to ``length``; MAX_SPACING + 1 if none
    is closer."""
    rx = re.compile(f"(?:{pattern})$")
    best = MAX_SPACING + 1
    for L in range(1, length + 1):
        for w in itertools.product(alphabet, repeat=L):
            s = "".join(w)
            ends = [i for i in range(L) if rx.search(s[: i + 1])]
            best = min([best] + [b - a for a, b in zip(ends, ends[1:])])
    return best


@pytest.mark.parametrize("formula,regex,alphabet,want", [
    ("a & Y(b & Y a)", "aba", "ab", 2),          # "aba ends here": ababa -> 2
    ("a & Y b", "ba", "ab", 2),
    ("a & Y(a & Y(b & Y a))", "abaa", "ab", 3),   # abaa: the next can end 3 later (abaabaa)
    ("a", "a", "ab", 1),
    ("0 & Y 0 & Y Y 0", "000", "01", 1),          # 0000: overlapping
    ("a & Y(b & Y(b & Y a))", "abba", "ab", 3),   # abbabba
])
def test_spacing_matches_an_independent_oracle(formula, regex, alphabet, want):
    spec = load_spec(formula, alphabet=alphabet)
    assert _oracle(regex, alphabet) == want
    assert key_spacing(spec.formula, spec.alphabet) == want


def test_non_local_keys_get_spacing_one():
    for f in ("P a", "a S b", "H a", "F a", "#a > #b", "odd(#a)"):
        spec = load_spec(f, alphabet="ab")
        assert locality(spec.formula) is None
        assert key_spacing(spec.formula, spec.alphabet) == 1


def test_a_key_that_never_holds_and_the_word_cap():
    spec = load_spec("a & !a", alphabet="ab")
    assert key_spacing(spec.formula, spec.alphabet) == MAX_SPACING + 1
    spec = load_spec("a & Y(b & Y a)", alphabet="ab")
    assert key_spacing(spec.formula, spec.alphabet, max_words=10) == 1  # too many words: general case


def test_compiler_records_the_spacing():
    aba = Path(__file__).resolve().parents[2] / "examples" / "aba.ltl"
    g = compile_formula(load_spec(str(aba)).formula, ("a", "b"))
    sel = {v: a for v, a in g.nodes(data=True) if a["op"] == "select"}
    assert {a["operator"]: a["key_spacing"] for a in sel.values()} == {"Y": 1, "P": 2}


@pytest.mark.parametrize("text, direction, alphabet, expected", [
    ("0 & P 1", "past", "01", 2), ("P 1", "past", "01", 2), ("0 & P (1 & P 1)", "past", "01", 3),
    ("a & F b", "future", "ab", 2), ("#a - #b >= 2", "past", "ab", 2), ("1 & H 1", "past", "01", 1),
    ("P a & F b", "past", "ab", 2)])
def test_key_first_of_one_sided_non_local_keys(text, direction, alphabet, expected):
    """Issue 13 (tomita7 regime U): the first position where a non-local key can hold, for keys
    that look one way (P H S and counts for a past selection; F G U for a future one), against the
    reference semantics on every word up to length 7 (the position counted from the start, or from
    the end for a future selection); ``expected`` by hand (``0 & P 1`` first holds at 2 of ``10``).
    A key looking both ways keeps the general 1."""
    f = parse_formula(text)
    seen = min(((i + 1) if direction == "past" else (len(w) - i)
                for L in range(1, 8) for w in itertools.product(alphabet, repeat=L)
                for i, v in enumerate(truth(f, w)) if v), default=None)
    got = key_first(f, list(alphabet), direction)
    one_sided = not operators(f) & (FUTURE_OPS if direction == "past" else PAST_OPS)
    assert seen == expected and got == (expected if one_sided else 1)


def test_one_symbol_alphabet_prefix_enumeration_is_bounded_by_positions(monkeypatch):
    """Found by a 3 000-input fuzz run: over a one-symbol alphabet every length has one word, so the
    word budget (2^14) let the prefix enumeration of key_first run to words of length 16 384 —
    ~1.3·10^8 positions, 20 s.  A budget of positions stops it at the first L with
    L(L+1)/2 > 2^20 (L = 1448); the answer stays sound: ``H a & P !a`` holds nowhere over {a}
    (it needs another symbol), checked on every word up to that length by the reference semantics."""
    calls = []
    real = spacing.truth
    monkeypatch.setattr(spacing, "truth", lambda f, w: calls.append(len(w)) or real(f, w))
    f = parse_formula("H a & P !a")
    got = key_first(f, ["a"], "past")
    assert got == 1448 and 1447 * 1448 // 2 <= 2**20 < 1448 * 1449 // 2
    assert len(calls) == 1447 and max(calls) == 1447
    assert not any(real(f, ("a",) * 1447))


def test_a_huge_count_coefficient_is_refused_before_any_analysis(monkeypatch):
    """Found by the same fuzz run: ``bound '(H (4e18·#a >= 1) S …)'`` enumerated keys for 20 s and
    only then refused the coefficient (beyond 2^53); it is refused when the comparator is built."""
    calls = []
    monkeypatch.setattr(spacing, "truth", lambda f, w: calls.append(1))
    with pytest.raises(ParameterError, match=r"count coefficient 4000000000000000000 of #a is beyond 2\^53"):
        compile_formula(parse_formula("H (4000000000000000000*#a >= 1) S H (4000000000000000000*#a >= 1)"), ["a"])
    assert calls == []
