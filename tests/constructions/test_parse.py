"""Tests of the formula front end: grammar, AST mapping, .ltl files, alphabets, tokenize."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from softhard.constructions.ast import (
    COMPARE_OPS, Atom, Binary, Compare, Const, Formula, Linear, Unary,
)
from softhard.constructions.errors import FormulaError, FormulaSyntaxError, InputFileError, ParameterError
from softhard.constructions.parse import (
    FormulaSpec, load_spec, parse_alphabet, parse_formula, parse_spec, tokenize,
)

a, b, c = Atom("a"), Atom("b"), Atom("c")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def U_(op: str, f: Formula) -> Unary:
    return Unary(op, f)


def B_(op: str, f: Formula, g: Formula) -> Binary:
    return Binary(op, f, g)


def lin(*terms: tuple[Formula, int], const: int = 0) -> Linear:
    return Linear(tuple(terms), const)


# ---------------------------------------------------------------------------------------------
# Precedence and associativity
# ---------------------------------------------------------------------------------------------

PRECEDENCE_CASES = [
    ("a", a),
    ("true", Const(True)),
    ("false", Const(False)),
    ("!a & b", B_("&", U_("!", a), b)),
    ("!(a & b)", U_("!", B_("&", a, b))),
    ("a | b & c", B_("|", a, B_("&", b, c))),
    ("a & b | c", B_("|", B_("&", a, b), c)),
    ("a & b & c", B_("&", B_("&", a, b), c)),
    ("a | b | c", B_("|", B_("|", a, b), c)),
    ("a -> b -> c", B_("->", a, B_("->", b, c))),
    ("(a -> b) -> c", B_("->", B_("->", a, b), c)),
    ("a | b -> c", B_("->", B_("|", a, b), c)),
    ("a -> b | c", B_("->", a, B_("|", b, c))),
    ("a S b U c", B_("S", a, B_("U", b, c))),
    ("a U b S c", B_("U", a, B_("S", b, c))),
    ("a S b S c", B_("S", a, B_("S", b, c))),
    ("(a S b) S c", B_("S", B_("S", a, b), c)),
    ("a & b S c", B_("&", a, B_("S", b, c))),
    ("a S b & c", B_("&", B_("S", a, b), c)),
    ("a U b | c", B_("|", B_("U", a, b), c)),
    ("Y a S b", B_("S", U_("Y", a), b)),
    ("a S !b", B_("S", a, U_("!", b))),
    ("!Y X P H F G a", U_("!", U_("Y", U_("X", U_("P", U_("H", U_("F", U_("G", a)))))))),
    ("Y Y a", U_("Y", U_("Y", a))),
    ("Y(a)", U_("Y", a)),
    ("!!a", U_("!", U_("!", a))),
    ("G (a -> F b)", U_("G", B_("->", a, U_("F", b)))),
    ("G a -> F b", B_("->", U_("G", a), U_("F", b))),
    ("#a > #b & c", B_("&", Compare(">", lin((a, 1)), lin((b, 1))), c)),
    ("c | #a > #b", B_("|", c, Compare(">", lin((a, 1)), lin((b, 1))))),
    ("#a > 0 S b", B_("S", Compare(">", lin((a, 1)), lin(const=0)), b)),
    ("Y (#a > #b)", U_("Y", Compare(">", lin((a, 1)), lin((b, 1))))),
    ("  a\n  &   // comment & d\n b ", B_("&", a, b)),
]


@pytest.mark.parametrize("text,expected", PRECEDENCE_CASES, ids=[t for t, _ in PRECEDENCE_CASES])
def test_precedence_and_associativity(text: str, expected: Formula) -> None:
    assert parse_formula(text) == expected


# ---------------------------------------------------------------------------------------------
# Symbols: quoting, digits
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text,symbol", [
    ('"("', "("),
    ('"Y"', "Y"),
    ('"abc"', "abc"),
    (r'"a\"b"', 'a"b'),
    (r'"\\"', "\\"),
    ('"//"', "//"),
    ('"#"', "#"),
    ('"a b"', "a b"),
    ("t", "t"),
    ("Z", "Z"),
    ("7", "7"),
])
def test_symbols(text: str, symbol: str) -> None:
    assert parse_formula(text) == Atom(symbol)


def test_operator_letters_are_not_symbols() -> None:
    assert parse_formula('"S" S "U"') == B_("S", Atom("S"), Atom("U"))
    with pytest.raises(FormulaSyntaxError):
        parse_formula("Y")
    with pytest.raises(FormulaSyntaxError):
        parse_formula("a & S")


def test_digits_as_symbols_and_integers() -> None:
    zero, one = Atom("0"), Atom("1")
    assert parse_formula("0 & Y 0") == B_("&", zero, U_("Y", zero))
    assert parse_formula("0 -> 1") == B_("->", zero, one)
    assert parse_formula("1 S 0") == B_("S", one, zero)
    assert parse_formula("(1)") == one
    assert parse_formula("#1 - #0 >= 0") == Compare(">=", lin((one, 1), (zero, -1)), lin(const=0))
    assert parse_formula("2*#0 > 1") == Compare(">", lin((zero, 2)), lin(const=1))
    assert parse_formula("1 > 0") == Compare(">", lin(const=1), lin(const=0))
    assert parse_formula("#Y 1 + 2 > 0") == Compare(">", lin((U_("Y", one), 1), const=2), lin(const=0))
    assert parse_formula("0 & #0 >= 10") == B_("&", zero, Compare(">=", lin((zero, 1)), lin(const=10)))
    assert parse_formula("0 <- 1") == Compare("<", lin(const=0), lin(const=-1))


# ---------------------------------------------------------------------------------------------
# Count terms
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text,expected", [
    ("#a > #b", Compare(">", lin((a, 1)), lin((b, 1)))),
    ('#"(" - #")" >= 0', Compare(">=", lin((Atom("("), 1), (Atom(")"), -1)), lin(const=0))),
    ("#a = 2*#b", Compare("=", lin((a, 1)), lin((b, 2)))),
    ("#a - #b >= -1", Compare(">=", lin((a, 1), (b, -1)), lin(const=-1))),
    ("-#a + 3 < #b", Compare("<", lin((a, -1), const=3), lin((b, 1)))),
    ("-2*#a != +4", Compare("!=", lin((a, -2)), lin(const=4))),
    ("#a <= 3 * # b", Compare("<=", lin((a, 1)), lin((b, 3)))),
    ("#!a > 0", Compare(">", lin((U_("!", a), 1)), lin(const=0))),
    ("#Y a > 0", Compare(">", lin((U_("Y", a), 1)), lin(const=0))),
    ("#(a S b) < 2", Compare("<", lin((B_("S", a, b), 1)), lin(const=2))),
    ("#(#a > 0) > 1", Compare(">", lin((Compare(">", lin((a, 1)), lin(const=0)), 1)), lin(const=1))),
    ("#true = 5", Compare("=", lin((Const(True), 1)), lin(const=5))),
    # merging: duplicates summed in order of first occurrence, zeros dropped, constants summed
    ("#a + #b + #a > 0", Compare(">", lin((a, 2), (b, 1)), lin(const=0))),
    ("#a + #b - #a > 1 + 2", Compare(">", lin((b, 1)), lin(const=3))),
    ("#a - #a + 1 - 1 = 0", Compare("=", lin(), lin())),
    ("#(a) + #a > 0", Compare(">", lin((a, 2)), lin())),
])
def test_count_syntax(text: str, expected: Formula) -> None:
    assert parse_formula(text) == expected


@pytest.mark.parametrize("text,col", [
    ("1.5*#a > 0", 1),
    ("#a > 0.5", 6),
    ("#a + 2.*#b > 0", 6),
])
def test_non_integer_coefficient_is_a_clear_error(text: str, col: int) -> None:
    with pytest.raises(FormulaSyntaxError) as ei:
        parse_formula(text)
    e = ei.value
    assert "integer" in str(e)
    assert (e.line, e.column) == (1, col)


# ---------------------------------------------------------------------------------------------
# Round trip: str(f) parses back to f
# ---------------------------------------------------------------------------------------------

SYMBOL = st.one_of(
    st.sampled_from(["a", "b", "0", "1", "Y", "S", "t", "(", ")", '"', "\\", "ab", "#", "//",
                     "a b", "é", "true", "10", "-", "x\\\"y", "x + -y", "+ -"]),
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"),
            min_size=1, max_size=4),
)


def _linear(formulas: st.SearchStrategy[Formula]) -> st.SearchStrategy[Linear]:
    @st.composite
    def build(draw: st.DrawFn) -> Linear:
        fs = draw(st.lists(formulas, max_size=3, unique=True))
        coeffs = [draw(st.integers(-5, 5).filter(bool)) for _ in fs]
        return Linear(tuple(zip(fs, coeffs, strict=True)), draw(st.integers(-20, 20)))
    return build()


FORMULAS: st.SearchStrategy[Formula] = st.recursive(
    st.one_of(SYMBOL.map(Atom), st.booleans().map(Const)),
    lambda inner: st.one_of(
        st.builds(Unary, st.sampled_from(["!", "Y", "X", "P", "H", "F", "G"]), inner),
        st.builds(Binary, st.sampled_from(["&", "|", "->", "S", "U"]), inner, inner),
        st.builds(Compare, st.sampled_from(COMPARE_OPS), _linear(inner), _linear(inner)),
    ),
    max_leaves=12,
)


@pytest.mark.parametrize("f,text", [
    (Compare(">=", lin((a, 1), (b, -1)), lin(const=-1)), "#a - #b >= -1"),
    (Compare("<", lin((a, -2), (b, 3), const=-4), lin()), "-2*#a + 3*#b - 4 < 0"),
    (Compare("=", lin((Atom("x + -y"), 1)), lin(const=0)), '#"x + -y" = 0'),
    (Compare("!=", lin((U_("Y", a), -1)), lin((U_("!", b), 1))), "-#(Y a) != #!b"),
])
def test_str_of_comparisons(f: Formula, text: str) -> None:
    assert str(f) == text
    assert parse_formula(text) == f


@settings(max_examples=400, deadline=None)
@given(FORMULAS)
def test_str_round_trip(f: Formula) -> None:
    assert parse_formula(str(f)) == f


# ---------------------------------------------------------------------------------------------
# Syntax errors: position and message
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text,line,col,fragments", [
    ("a &", 1, 4, ["expected a formula", "found end of input"]),
    ("", 1, 1, ["expected a formula", "end of input"]),
    ("a b", 1, 3, ["expected", "found 'b'"]),
    ("(a & b", 1, 7, ["expected ')'", "end of input"]),
    ("(a))", 1, 4, ["found ')'"]),
    ("a @ b", 1, 3, ["unexpected character '@'"]),
    ("a &\n  (b |\n   c))", 3, 6, ["found ')'"]),
    ("a\n&\n& b", 3, 1, ["expected a formula", "found '&'"]),
    ('"abc & b', 1, 1, ["unterminated quoted symbol"]),
    ('a & "x\\ny"', 1, 7, ["unknown escape"]),
    ('""', 1, 1, ["empty quoted symbol"]),
    ("Ya", 1, 1, ["'Ya' is not a symbol", '"Ya"']),
    ("a & abc", 1, 5, ["'abc' is not a symbol"]),
    ("10 & a", 1, 1, ["'10' is a multi-digit number"]),
    ("#10 > 1", 1, 2, ["'10' is a multi-digit number"]),
    ("Y #a > 0", 1, 3, ["found '#'", "needs parentheses"]),
    ("#a > #b > 0", 1, 9, ["found '>'"]),
    ("#a", 1, 3, ["comparison operator", "end of input"]),
    ("#a + b > 0", 1, 6, ["found 'b'"]),
    ("2 * a > 0", 1, 5, ["expected '#'", "found 'a'"]),
    ("a S", 1, 4, ["expected a formula"]),
])
def test_syntax_error_positions(text: str, line: int, col: int, fragments: list[str]) -> None:
    with pytest.raises(FormulaSyntaxError) as ei:
        parse_formula(text, source="f.ltl")
    e = ei.value
    assert (e.source, e.line, e.column) == ("f.ltl", line, col)
    msg = str(e)
    assert msg.startswith(f"f.ltl:{line}:{col}: ")
    for frag in fragments:
        assert frag in msg
    assert "\n" not in msg
    assert "Token(" not in msg and "lark" not in msg.lower()


SPEC_TEXT = """\
// a test specification
name: demo   // a comment
description: the demo language
alphabet: a b "(" "Y"
formula:
  // the formula starts on the next line
  a & Y b
    | "(" S "Y"
"""


def test_parse_spec_fields() -> None:
    spec = parse_spec(SPEC_TEXT, source="demo.ltl")
    assert spec == FormulaSpec(
        name="demo",
        description="the demo language",
        alphabet=("a", "b", "(", "Y"),
        formula=B_("|", B_("&", a, U_("Y", b)), B_("S", Atom("("), Atom("Y"))),
        at="last",
        source="demo.ltl",
    )


def test_spec_formula_error_reports_file_position() -> None:
    text = SPEC_TEXT.replace('| "(" S "Y"', '| "(" S S "Y"')
    with pytest.raises(FormulaSyntaxError) as ei:
        parse_spec(text, source="demo.ltl")
    assert (ei.value.line, ei.value.column) == (8, 13)
    assert str(ei.value).startswith("demo.ltl:8:13: expected a formula, found 'S'")


def test_spec_formula_error_on_formula_line() -> None:
    text = "alphabet: a b\nformula: a & & b\n"
    with pytest.raises(FormulaSyntaxError) as ei:
        parse_spec(text, source="x.ltl")
    assert (ei.value.line, ei.value.column) == (2, 14)


def test_spec_symbol_not_in_alphabet_names_symbol_and_position() -> None:
    text = "alphabet: a b\nformula:\n  a &\n    Y c\n"
    with pytest.raises(FormulaError) as ei:
        parse_spec(text, source="x.ltl")
    assert not isinstance(ei.value, FormulaSyntaxError)
    msg = str(ei.value)
    assert msg.startswith("x.ltl:4:7: symbol c is not in the alphabet")
    assert "{a b}" in msg


@pytest.mark.parametrize("text,line,col,fragment", [
    ("formula: a\n", 1, 1, "missing required key 'alphabet'"),
    ("alphabet: a\n", 1, 1, "missing required key 'formula'"),
    ("alphabet: a\nalphabet: b\nformula: a", 2, 1, "duplicate key 'alphabet'"),
    ("alphabet: a\n  colour: red\nformula: a", 2, 3, "unknown key 'colour'"),
    ("alphabet: a\nthis is not a key\nformula: a", 2, 1, "expected 'key: value'"),
    ("alphabet: a Y\nformula: a", 1, 13, "alphabet symbol 'Y' must be quoted"),
    ("alphabet: a Y\nformula: a &&", 1, 13, "alphabet symbol 'Y' must be quoted"),
    ("alphabet: a bc\nformula: a", 1, 13, "alphabet symbol 'bc' must be quoted"),
    ('alphabet: a "b\nformula: a', 1, 13, "unterminated quoted symbol"),
    ("alphabet: a\nat: middle\nformula: a", 2, 5, "'at' must be 'first' or 'last'"),
])
def test_spec_format_errors(text: str, line: int, col: int, fragment: str) -> None:
    with pytest.raises(FormulaSyntaxError) as ei:
        parse_spec(text, source="s.ltl")
    assert (ei.value.line, ei.value.column) == (line, col)
    assert fragment in str(ei.value)


@pytest.mark.parametrize("text,fragment", [
    ("alphabet: a b a\nformula: a", "s.ltl:1:15: symbol 'a' occurs twice"),
    ("alphabet:   // nothing\nformula: a", "the alphabet is empty"),
])
def test_spec_alphabet_errors(text: str, fragment: str) -> None:
    with pytest.raises(FormulaError) as ei:
        parse_spec(text, source="s.ltl")
    assert fragment in str(ei.value)


def test_spec_at_defaults_and_override() -> None:
    assert parse_spec("alphabet: a b\nformula: G (a -> F b)").at == "first"
    assert parse_spec("alphabet: a b\nformula: H (a -> P b)").at == "last"
    assert parse_spec("alphabet: a b\nformula: a & b").at == "last"
    assert parse_spec("alphabet: a b\nformula: F a & P b").at == "last"
    assert parse_spec("alphabet: a b\nformula: F (#a > #b)").at == "last"
    assert parse_spec("alphabet: a b\nat: last\nformula: G (a -> F b)").at == "last"
    assert parse_spec("alphabet: a b\nat: first // c\nformula: a").at == "first"


def test_spec_comments_and_quoted_slashes() -> None:
    spec = parse_spec('alphabet: "//" a // comment\nformula: "//" // comment\n  & !a // more\n')
    assert spec.alphabet == ("//", "a")
    assert spec.formula == B_("&", Atom("//"), U_("!", a))
    assert spec.name == "<string>" and spec.description == ""


def test_parse_alphabet() -> None:
    assert parse_alphabet('0 1 "(" "ab" "\\""') == ("0", "1", "(", "ab", '"')
    with pytest.raises(FormulaError):
        parse_alphabet("a a")
    with pytest.raises(FormulaError):
        parse_alphabet("   ")


# ---------------------------------------------------------------------------------------------
# load_spec
# ---------------------------------------------------------------------------------------------


def test_load_spec_file(tmp_path: Path) -> None:
    p = tmp_path / "lang.ltl"
    p.write_text("alphabet: a b c\nformula: a U b\n", encoding="utf-8")
    spec = load_spec(str(p))
    assert spec.name == "lang" and spec.source == str(p)
    assert spec.alphabet == ("a", "b", "c") and spec.at == "first"
    assert load_spec(p) == spec  # PathLike accepted
    assert load_spec(str(p), alphabet="abcd").alphabet == ("a", "b", "c", "d")
    with pytest.raises(FormulaError):
        load_spec(str(p), alphabet="ac")  # b is used by the formula


def test_load_spec_examples_exist() -> None:
    names = sorted(p.stem for p in EXAMPLES.glob("*.ltl"))
    assert names == ["a_then_b", "aba", "anbn", "dyck1", "dyck1_depth2", "majority", "parity", "tomita1", "tomita2",
                     "tomita4", "tomita5", "tomita7"]
    for p in EXAMPLES.glob("*.ltl"):
        spec = load_spec(str(p))
        assert spec.name == p.stem and spec.description


def test_load_spec_inline() -> None:
    spec = load_spec("Y b & a")
    assert spec.alphabet == ("b", "a") and spec.at == "last" and spec.source == "<formula>"
    assert spec.formula == B_("&", U_("Y", b), a)
    assert load_spec("a U b", alphabet="abc").alphabet == ("a", "b", "c")
    assert load_spec("a U b", alphabet=["b", "a"]).alphabet == ("b", "a")
    assert load_spec('"ab" S c', alphabet="ab c").alphabet == ("ab", "c")
    assert load_spec("F a").at == "first"


def test_load_spec_inline_errors() -> None:
    with pytest.raises(FormulaError, match="symbol c is not in the alphabet"):
        load_spec("a & c", alphabet="ab")
    with pytest.raises(FormulaError, match="occurs twice"):
        load_spec("a", alphabet="aba")
    with pytest.raises(FormulaError, match="mentions no symbol"):
        load_spec("true")
    with pytest.raises(InputFileError, match="does/not/exist.ltl: no such file"):
        load_spec("does/not/exist.ltl")
    with pytest.raises(FormulaSyntaxError) as ei:
        load_spec("a &")
    assert (ei.value.source, ei.value.line, ei.value.column) == ("<formula>", 1, 4)


def test_formula_spec_validates() -> None:
    with pytest.raises(FormulaError):
        FormulaSpec("x", "", (), a, "last", "<x>")
    with pytest.raises(FormulaError):
        FormulaSpec("x", "", ("a", "a"), a, "last", "<x>")
    with pytest.raises(FormulaError):
        FormulaSpec("x", "", ("b",), a, "last", "<x>")
    with pytest.raises(FormulaError):
        FormulaSpec("x", "", ("a",), a, "middle", "<x>")
    spec = FormulaSpec("x", "", ["a"], a, "first", "<x>")  # type: ignore[arg-type]
    assert spec.alphabet == ("a",)


# ---------------------------------------------------------------------------------------------
# tokenize
# ---------------------------------------------------------------------------------------------


def test_tokenize() -> None:
    assert tokenize("abba", ("a", "b")) == ["a", "b", "b", "a"]
    assert tokenize("(())", "()") == ["(", "(", ")", ")"]
    assert tokenize(" ab  c ab\n", ("ab", "c")) == ["ab", "c", "ab"]
    with pytest.raises(FormulaError, match=r"symbol 'c' at position 3 is not in the alphabet"):
        tokenize("abcab", ("a", "b"))
    with pytest.raises(FormulaError, match=r"symbol 'x' at position 2"):
        tokenize("ab x", ("ab", "c"))
    with pytest.raises(ParameterError, match="n < 1"):
        tokenize("", ("a", "b"))
    with pytest.raises(ParameterError, match="n < 1"):
        tokenize("   ", ("ab", "c"))


def test_grammar_is_package_data() -> None:
    grammar = resources.files("softhard.constructions").joinpath("grammar.lark")
    assert grammar.is_file()
    assert "CMP_OP" in grammar.read_text(encoding="utf-8")


LAZY_PROBE = """
import json, sys
from softhard.solver.cli.handlers import certify_model, certify_tracr  # the model and Tracr kinds' certify
before = "lark" in sys.modules
from softhard.constructions.parse import parse_formula
f = parse_formula("a U b")
try:
    parse_formula("a U (b")
    err = None
except Exception as e:
    err = [type(e).__name__, e.line, e.column]
print(json.dumps({"before": before, "after": "lark" in sys.modules, "repr": repr(f), "err": err}))
"""


def test_lark_is_imported_by_the_first_parse_not_by_the_kinds_that_parse_no_formula():
    out = subprocess.run([sys.executable, "-c", LAZY_PROBE], capture_output=True, text=True, timeout=120, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["before"] is False and got["after"] is True
    assert got["repr"] == repr(B_("U", a, b))
    with pytest.raises(FormulaSyntaxError) as e:  # the same error, in this process
        parse_formula("a U (b")
    assert got["err"] == ["FormulaSyntaxError", e.value.line, e.value.column]
