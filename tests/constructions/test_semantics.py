"""The vectorised reference semantics against a brute-force evaluator written from the
definitions (THEORY §4 strict temporal operators, §5 counting), quantifier by quantifier."""

from __future__ import annotations

import itertools
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from softhard.constructions.ast import (
    Atom, Binary, Compare, Const, Formula, Linear, Parity, Unary, subformulas,
)
from softhard.constructions.errors import FormulaError, ParameterError
from softhard.constructions.parse import load_spec, parse_formula
from softhard.constructions.semantics import accepts, evaluate, linear_values, truth


# ---------------------------------------------------------------------------------------------
# Brute-force oracle: positions 1..n, each quantifier a literal loop
# ---------------------------------------------------------------------------------------------


def holds(f: Formula, w: str, i: int) -> bool:
    """Truth of ``f`` at position ``i`` (1-based) of ``w``."""
    return _holds(f, w, i)


@cache
def _holds(f: Formula, w: str, i: int) -> bool:
    n = len(w)
    assert 1 <= i <= n
    if isinstance(f, Atom):
        return w[i - 1] == f.symbol
    if isinstance(f, Const):
        return f.value
    if isinstance(f, Unary):
        g = f.arg
        if f.op == "!":
            return not _holds(g, w, i)
        if f.op == "Y":
            return i > 1 and _holds(g, w, i - 1)
        if f.op == "X":
            return i < n and _holds(g, w, i + 1)
        if f.op == "P":  # exists j < i
            return any(_holds(g, w, j) for j in range(1, i))
        if f.op == "H":  # forall j < i
            return all(_holds(g, w, j) for j in range(1, i))
        if f.op == "F":  # exists j > i
            return any(_holds(g, w, j) for j in range(i + 1, n + 1))
        if f.op == "G":  # forall j > i
            return all(_holds(g, w, j) for j in range(i + 1, n + 1))
    if isinstance(f, Binary):
        lf, rt = f.left, f.right
        if f.op == "&":
            return _holds(lf, w, i) and _holds(rt, w, i)
        if f.op == "|":
            return _holds(lf, w, i) or _holds(rt, w, i)
        if f.op == "->":
            return (not _holds(lf, w, i)) or _holds(rt, w, i)
        if f.op == "S":  # exists j < i: r(j) and forall k in (j, i): l(k)
            return any(_holds(rt, w, j) and all(_holds(lf, w, k) for k in range(j + 1, i))
                       for j in range(1, i))
        if f.op == "U":  # exists j > i: r(j) and forall k in (i, j): l(k)
            return any(_holds(rt, w, j) and all(_holds(lf, w, k) for k in range(i + 1, j))
                       for j in range(i + 1, n + 1))
    if isinstance(f, Compare):
        lhs, rhs = _value(f.lhs, w, i), _value(f.rhs, w, i)
        return {"<": lhs < rhs, "<=": lhs <= rhs, ">": lhs > rhs, ">=": lhs >= rhs,
                "=": lhs == rhs, "!=": lhs != rhs}[f.op]
    if isinstance(f, Parity):
        return (_value(f.arg, w, i) % 2 == 0) == f.even
    raise AssertionError(f"unknown node {f!r}")


def _value(lin: Linear, w: str, i: int) -> int:
    """Σ coeff · |{j <= i : φ(j)}| + const."""
    return lin.const + sum(c * sum(1 for j in range(1, i + 1) if _holds(g, w, j))
                           for g, c in lin.terms)


def oracle(f: Formula, w: str) -> list[bool]:
    return [holds(f, w, i) for i in range(1, len(w) + 1)]


WORDS_AB = ["".join(t) for n in range(1, 7) for t in itertools.product("ab", repeat=n)]

FORMULAS = [
    "a", "b", "true", "false", "!a", "a & b", "a | b", "a -> b", "b -> a",
    "Y a", "X a", "Y Y a", "X X b", "Y X a", "X Y a",
    "P a", "H a", "F a", "G a", "P b & H a", "F b | G a",
    "a S b", "b S a", "a U b", "b U a", "true S a", "false S a", "a U false", "!a U a",
    "(a S b) U (b S a)", "a S (b U a)", "(a U b) S (Y a)", "Y (a S Y b)", "X (b U X a)",
    "a S b S a", "a U b U a", "G (a -> F b)", "H (b -> P a)", "(a -> F b) & G (a -> F b)",
    "P (a & Y (b & Y a))", "F (a & X b) S b",
    "#a > #b", "#a >= #b", "#a - #b >= -1", "#a = 2*#b", "#a != #b + 1", "2*#a <= #b + 1",
    "#(Y a) = #b", "#(a S b) != 1", "#(X b) > 0", "#(F a) < 3", "#!a > #a",
    "P (#a > #b)", "G (#a >= #b)", "(#a > #b) S b", "a U (#b - #a = 0)", "#(#a > #b) >= 2",
    "1 > 0", "#true = 3", "-#a + 3 > #b",
]


@pytest.mark.parametrize("text", FORMULAS)
def test_against_brute_force_all_short_words(text: str) -> None:
    f = parse_formula(text)
    subs = subformulas(f)
    for w in WORDS_AB:
        values = evaluate(f, w)
        assert list(values) == subs
        for g in subs:
            v = values[g]
            assert v.dtype == bool and v.shape == (len(w),)
            assert v.tolist() == oracle(g, w), (text, str(g), w)


def test_batch_equals_single_words() -> None:
    f = parse_formula("(a S b) U (#a > #b) | G (a -> F b) & Y X a")
    for n in range(1, 7):
        words = ["".join(t) for t in itertools.product("ab", repeat=n)]
        batch = np.array([list(w) for w in words])
        got = truth(f, batch)
        assert got.shape == (len(words), n)
        assert got.tolist() == [oracle(f, w) for w in words]


# ---- random formulas (hypothesis) ------------------------------------------------------------

ATOMS = st.sampled_from([Atom("a"), Atom("b"), Const(True), Const(False)])


@st.composite
def _linear(draw: st.DrawFn, inner: st.SearchStrategy[Formula]) -> Linear:
    fs = draw(st.lists(inner, max_size=2, unique=True))
    return Linear(tuple((g, draw(st.integers(-3, 3).filter(bool))) for g in fs),
                  draw(st.integers(-3, 3)))


RANDOM_FORMULAS = st.recursive(
    ATOMS,
    lambda inner: st.one_of(
        st.builds(Unary, st.sampled_from(["!", "Y", "X", "P", "H", "F", "G"]), inner),
        st.builds(Binary, st.sampled_from(["&", "|", "->", "S", "U"]), inner, inner),
        st.builds(Compare, st.sampled_from(["<", "<=", ">", ">=", "=", "!="]),
                  _linear(inner), _linear(inner)),
    ),
    max_leaves=8,
)
RANDOM_WORDS = ["".join(t) for n in range(1, 6) for t in itertools.product("ab", repeat=n)]


@settings(max_examples=300, deadline=None)
@given(RANDOM_FORMULAS)
def test_random_formulas_against_brute_force(f: Formula) -> None:
    for w in RANDOM_WORDS:
        assert truth(f, w).tolist() == oracle(f, w), (str(f), w)


# ---- boundary conventions, spelled out -------------------------------------------------------


def test_strict_boundaries() -> None:
    w = "aaaa"
    assert truth(parse_formula("Y a"), w).tolist() == [False, True, True, True]
    assert truth(parse_formula("X a"), w).tolist() == [True, True, True, False]
    assert truth(parse_formula("P a"), w).tolist() == [False, True, True, True]
    assert truth(parse_formula("H b"), w).tolist() == [True, False, False, False]
    assert truth(parse_formula("F a"), w).tolist() == [True, True, True, False]
    assert truth(parse_formula("G b"), w).tolist() == [False, False, False, True]
    assert truth(parse_formula("a S a"), w).tolist() == [False, True, True, True]
    assert truth(parse_formula("b S a"), "abaa").tolist() == [False, True, True, True]
    assert truth(parse_formula("b S a"), "abba").tolist() == [False, True, True, True]
    assert truth(parse_formula("(a & Y a) S b"), "baba").tolist() == [False, True, False, True]
    assert truth(parse_formula("a U b"), "aab").tolist() == [True, True, False]
    assert truth(parse_formula("#a = 1"), "baab").tolist() == [False, True, False, False]


def test_linear_values() -> None:
    a, b = Atom("a"), Atom("b")
    f = parse_formula("#a - 2*#b + 1 > 0")
    vals = evaluate(f, "aabab")
    assert linear_values(Linear(((a, 1), (b, -2)), 1), vals).tolist() == [2, 3, 1, 2, 0]
    assert linear_values(Linear((), 7), vals, (3,)).tolist() == [7, 7, 7]
    with pytest.raises(ParameterError):
        linear_values(Linear((), 7), vals)


def test_multi_character_symbols() -> None:
    f = parse_formula('"ab" S "c"')
    assert truth(f, ["c", "ab", "ab", "d"]).tolist() == [False, True, True, True]
    spec = load_spec('"ab" S "c"', alphabet=["ab", "c", "d"])
    assert accepts(spec, "c ab ab") is True
    assert accepts(spec, "c ab d ab") is False


# ---------------------------------------------------------------------------------------------
# accepts
# ---------------------------------------------------------------------------------------------


def test_accepts_positions() -> None:
    past, future = parse_formula("P b"), parse_formula("F b")
    assert accepts(past, "ba") and not accepts(past, "ab")
    assert accepts(future, "ab") and not accepts(future, "ba")
    assert accepts(future, "ba", at="last") is False
    assert accepts(parse_formula("a"), "ab") is False  # propositional: last position
    assert accepts(parse_formula("a"), "ab", at="first") is True
    mixed = parse_formula("F a | P a")  # mixed: last position
    assert accepts(mixed, "ab") is True and accepts(mixed, "ba") is False
    assert accepts(mixed, "ba", at="first") is True
    assert accepts(parse_formula("X (#a > 0)"), "ba") is False  # count: last position


def test_accepts_spec_and_errors() -> None:
    spec = load_spec("(a -> F b) & G (a -> F b)", alphabet="ab")
    assert spec.at == "first"
    assert accepts(spec, "aab") and not accepts(spec, "aba")
    assert accepts(spec, "aba", at="last") is False  # at the last a, F b is false
    assert accepts(spec, "bab", at="last") is True
    first_only = load_spec("G b", alphabet="ab")
    assert accepts(first_only, "ab") is True and accepts(first_only, "ba") is False
    assert accepts(first_only, "ba", at="last") is True  # G is vacuous at the last position
    with pytest.raises(ParameterError, match="n < 1"):
        accepts(spec, "")
    with pytest.raises(ParameterError, match="n < 1"):
        accepts(parse_formula("a"), "")
    with pytest.raises(ParameterError, match="n < 1"):
        truth(parse_formula("a"), [])
    with pytest.raises(ParameterError):
        accepts(spec, "ab", at="middle")
    with pytest.raises(FormulaError, match="symbol 'c' at position 2"):
        accepts(spec, "acb")
    with pytest.raises(FormulaError, match="symbol 'c' at position 3"):
        accepts(spec, ["a", "b", "c"])
    assert accepts(spec, ["a", "b"]) is True
    with pytest.raises(ParameterError):
        accepts(spec, np.array([list("ab"), list("ba")]))


@pytest.mark.parametrize("text,word", [
    ("4000000000000000000*#a >= 1", "aaab"),                              # 1.2e19 wrapped negative
    ("40000000000000000000*#a >= 1", "aaab"),                             # >= 2^63: OverflowError
    ("4611686018427387904*#a - 4611686018427387904*#b >= 1", "abaab"),    # 2^62 each: wraps in between
    ("#a >= 9223372036854775808", "ab"),                                 # constant 2^63
    ("#a - 2*#b + 99999999999999999999 > 100000000000000000000 - #a", "aabab"),
    ("even(9223372036854775809*#a + 9223372036854775807)", "aab"),
    ("(3000000000000000000*#a > 5000000000000000000*#b) S b", "abaaab"),
])
def test_huge_count_coefficients_are_exact(text, word):
    """Issue 15 C5: counts were combined in int64, so 4e18*#a at #a = 3 wrapped negative ("reference
    rejects") and coefficients >= 2^63 raised OverflowError.  The brute-force oracle computes in
    Python integers; the values of the linear forms are checked against it too."""
    f = parse_formula(text)
    assert truth(f, word).tolist() == oracle(f, word)
    vals = evaluate(f, word)
    for g in subformulas(f):
        if isinstance(g, Compare):
            for lin in (g.lhs, g.rhs):
                got = linear_values(lin, vals, (len(word),)).tolist()
                assert got == [_value(lin, word, i) for i in range(1, len(word) + 1)]
    batch = np.array([list(word)] * 2)
    assert truth(f, batch).tolist() == [oracle(f, word)] * 2
