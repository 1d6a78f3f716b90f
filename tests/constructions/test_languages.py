"""Each example formula recognises the language it claims: compared with a regular expression
written independently of the formula, on every non-empty word up to length 12 and on 10,000
random words of lengths 1..500 (fixed seed)."""

from __future__ import annotations

import itertools
import re

import pytest

from languages import EXAMPLES, LANGUAGES, MAX_EXHAUSTIVE, MAX_LEN, N_RANDOM, random_words
from softhard.constructions.parse import FormulaSpec, load_spec
from softhard.constructions.semantics import accepts


def _spec(name: str) -> FormulaSpec:
    return load_spec(str(EXAMPLES / f"{name}.ltl"))


def test_every_example_has_a_language() -> None:
    # regular languages: a regex here; counting languages: a Python oracle in counting_oracles
    from counting_oracles import COUNTING_LANGUAGES
    assert not set(LANGUAGES) & set(COUNTING_LANGUAGES)
    assert sorted(p.stem for p in EXAMPLES.glob("*.ltl")) == sorted({*LANGUAGES, *COUNTING_LANGUAGES})


@pytest.mark.parametrize("name", sorted(LANGUAGES))
def test_example_spec(name: str) -> None:
    spec = _spec(name)
    lang = LANGUAGES[name]
    assert "".join(spec.alphabet) == lang.alphabet
    assert spec.at == ("first" if name == "a_then_b" else "last")


@pytest.mark.parametrize("name", sorted(LANGUAGES))
def test_all_short_words(name: str) -> None:
    spec, lang = _spec(name), LANGUAGES[name]
    regex = re.compile(lang.regex)
    n_in = 0
    for n in range(1, MAX_EXHAUSTIVE + 1):
        for t in itertools.product(lang.alphabet, repeat=n):
            w = "".join(t)
            expected = regex.fullmatch(w) is not None
            assert accepts(spec, w) == expected, (name, w)
            n_in += expected
    assert n_in > 0


@pytest.mark.parametrize("name", sorted(LANGUAGES))
def test_random_long_words(name: str) -> None:
    spec, lang = _spec(name), LANGUAGES[name]
    regex = re.compile(lang.regex)
    words = random_words(lang, seed=20260101 + sorted(LANGUAGES).index(name))
    assert len(words) == N_RANDOM and all(1 <= len(w) <= MAX_LEN for w in words)
    n_in = 0
    for w in words:
        expected = regex.fullmatch(w) is not None
        assert accepts(spec, w) == expected, (name, len(w), w)
        n_in += expected
    # the sample exercises both verdicts substantially
    assert 0.15 * N_RANDOM <= n_in <= 0.85 * N_RANDOM, n_in
