"""Key spacing (constructions/spacing.py): the least distance between two positions where a local
key holds, checked against an independent oracle — regular expressions over every word up to
length 12 — and its use by the compiler."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from softhard.constructions.compile import compile_formula
from softhard.constructions.parse import load_spec
from softhard.constructions.spacing import MAX_SPACING, key_spacing, locality


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
