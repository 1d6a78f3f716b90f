"""Each example formula recognises the language it claims: compared with a regular expression
written independently of the formula, on every non-empty word up to length 12 and on 10,000
random words of lengths 1..500 (fixed seed).

The reference semantics is evaluated in batches of words of one length (``truth`` on a ``(B, n)``
array, judged at the spec's position: what :func:`accepts` does for one word; batch = single words
is tests/constructions/test_semantics.py::test_batch_equals_single_words); :func:`accepts` itself is
also run on a sample of the words (every 50th) and must agree with the batch."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from languages import EXAMPLES, LANGUAGES, MAX_EXHAUSTIVE, MAX_LEN, N_RANDOM, random_words
from softhard.constructions.parse import FormulaSpec, load_spec
from softhard.constructions.semantics import accepts, truth


def _spec(name: str) -> FormulaSpec:
    return load_spec(str(EXAMPLES / f"{name}.ltl"))


def _verdicts(spec: FormulaSpec, words: list[str]) -> dict[str, bool]:
    """{word: the formula accepts it}: ``truth`` on the words of each length as one ``(B, n)`` batch,
    at the spec's judging position; :func:`accepts` on every 50th word must give the same."""
    by_len: dict[int, list[str]] = {}
    for w in words:
        by_len.setdefault(len(w), []).append(w)
    k = 0 if spec.at == "first" else -1
    out = {}
    for n, ws in by_len.items():  # one symbol per character (these alphabets), as UTF-32 code points
        batch = np.frombuffer("".join(ws).encode("utf-32-le"), dtype="<U1").reshape(len(ws), n)
        t = truth(spec.formula, batch)[:, k]
        out.update(zip(ws, t.tolist()))
    for w in words[::50]:
        assert accepts(spec, w) == out[w], w
    return out


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
    words = ["".join(t) for n in range(1, MAX_EXHAUSTIVE + 1) for t in itertools.product(lang.alphabet, repeat=n)]
    got = _verdicts(spec, words)
    n_in = 0
    for w in words:
        expected = regex.fullmatch(w) is not None
        assert got[w] == expected, (name, w)
        n_in += expected
    assert n_in > 0


@pytest.mark.parametrize("name", sorted(LANGUAGES))
def test_random_long_words(name: str) -> None:
    spec, lang = _spec(name), LANGUAGES[name]
    regex = re.compile(lang.regex)
    words = random_words(lang, seed=20260101 + sorted(LANGUAGES).index(name))
    assert len(words) == N_RANDOM and all(1 <= len(w) <= MAX_LEN for w in words)
    got = _verdicts(spec, words)
    n_in = 0
    for w in words:
        expected = regex.fullmatch(w) is not None
        assert got[w] == expected, (name, len(w), w)
        n_in += expected
    # the sample exercises both verdicts substantially
    assert 0.15 * N_RANDOM <= n_in <= 0.85 * N_RANDOM, n_in
