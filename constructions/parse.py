"""Formula language front end: text -> AST, ``.ltl`` specification files, word tokenisation.

The formula syntax (``grammar.lark``, documented in ``examples/README.md``) is the ASCII
notation of THEORY §4 (temporal operators ``Y X P H F G S U``) and §5 (count comparisons
``Σ c·#φ + c0  op  Σ c·#φ + c0``).  Every error on bad input is a :class:`FormulaSyntaxError`
(does not parse; message ``source:line:col: expected …, found …``) or a :class:`FormulaError`
(parses, but is not acceptable, e.g. a symbol outside the alphabet).

Public API::

    parse_formula(text, *, source="<formula>") -> Formula
    parse_alphabet(text, *, source="<alphabet>") -> tuple[str, ...]
    parse_spec(text, *, source="<string>") -> FormulaSpec
    load_spec(path_or_inline_formula, alphabet=None) -> FormulaSpec
    tokenize(word, alphabet) -> list[str]
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from .ast import Atom, Binary, Compare, Const, Formula, Linear, Parity, Unary, acceptance_position, nesting_depth, symbols
from .errors import FormulaError, FormulaSyntaxError, InputFileError, ParameterError
from .paths import is_file

if TYPE_CHECKING:  # annotations only: lark itself is imported on first use (:func:`_lark`)
    from lark import Lark, Token, Tree
    from lark.exceptions import UnexpectedInput
__all__ = ["FormulaSpec", "parse_formula", "parse_alphabet", "parse_spec", "load_spec", "tokenize"]

OPERATOR_LETTERS = frozenset("YXPHFGSU")
ACCEPT_AT = ("first", "last")

Position = tuple[int, int]  # (line, column), both 1-based

# --------------------------------------------------------------------------------------------
# Lark parser
# --------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _lark():
    """``lark`` and ``lark.exceptions`` on first use (~0.1 s; a model/Tracr certify parses no formula)."""
    import lark.exceptions  # third-party, lazily; binds ``lark`` too
    return lark


@lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = resources.files(__package__).joinpath("grammar.lark").read_text(encoding="utf-8")
    # cache=True: Lark stores the built LALR tables in the temp directory, keyed by a hash of the
    # grammar, the options and Lark's version (0.5 s of every command's start-up without it)
    return _lark().Lark(grammar, parser="lalr", lexer="basic", start="start", maybe_placeholders=False, cache=True)


# Terminals that can begin a formula; when any of them is expected we just say "a formula".
_FORMULA_START = frozenset({
    "NAME", "NUMBER", "STRING", "TRUE", "FALSE", "LPAR", "NOT", "YESTERDAY", "NEXT", "PAST",
    "HISTORICALLY", "FUTURE", "GLOBALLY", "HASH", "SIGN", "DECIMAL", "EVEN", "ODD",
})
_BINARY_OPS = ("AND", "OR", "IMPLIES", "SINCE", "UNTIL")
_DISPLAY = {
    "AND": "'&'", "OR": "'|'", "IMPLIES": "'->'", "SINCE": "'S'", "UNTIL": "'U'",
    "RPAR": "')'", "LPAR": "'('", "HASH": "'#'", "STAR": "'*'", "SIGN": "'+'/'-'",
    "CMP_OP": "a comparison operator (< <= > >= = !=)", "NUMBER": "an integer",
    "$END": "end of input",
}
_ORDER = ("formula", "binop", "AND", "OR", "IMPLIES", "SINCE", "UNTIL", "SIGN", "STAR", "HASH",
          "NUMBER", "CMP_OP", "LPAR", "RPAR", "$END")


def _describe_expected(expected: Iterable[str]) -> str:
    exp = set(expected)
    if exp == {"LPAR"}:  # after even / odd
        return "'('"
    items: list[str] = []
    if exp & {"NAME", "STRING", "LPAR"}:
        items.append("formula")
        exp -= _FORMULA_START
    if all(op in exp for op in _BINARY_OPS):
        items.append("binop")
        exp -= set(_BINARY_OPS)
    items += [t for t in exp if t in _DISPLAY]
    items.sort(key=lambda t: _ORDER.index(t) if t in _ORDER else len(_ORDER))
    words = [{"formula": "a formula", "binop": "an operator (& | -> S U)"}.get(t) or _DISPLAY[t]
             for t in items]
    if not words:
        return "something else"
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


def _describe_found(tok: Token) -> str:
    if tok.type == "$END":
        return "end of input"
    return f"'{tok.value}'"


def _error_position(e: UnexpectedInput) -> Position:
    if isinstance(e, _lark().exceptions.UnexpectedToken) and e.token.type == "$END":
        tok = e.token
        if getattr(tok, "end_line", None) is not None and tok.end_column is not None:
            return tok.end_line, tok.end_column
        return 1, 1
    return (e.line if e.line and e.line > 0 else 1), (e.column if e.column and e.column > 0 else 1)


def _syntax_error(e: UnexpectedInput, text: str, source: str) -> FormulaSyntaxError:
    line, col = _error_position(e)
    if isinstance(e, _lark().exceptions.UnexpectedCharacters):
        pos = e.pos_in_stream
        ch = text[pos] if pos is not None and 0 <= pos < len(text) else "?"
        if ch == '"':
            msg = "unterminated quoted symbol (a quoted symbol ends with '\"' on the same line)"
        else:
            msg = f"unexpected character {ch!r}"
    elif isinstance(e, _lark().exceptions.UnexpectedToken):
        tok = e.token
        expected = set(e.expected)
        if e.interactive_parser is not None:  # exact set: LALR lookaheads over-approximate it
            with contextlib.suppress(Exception):  # defensive: keep the LALR set
                expected = set(e.interactive_parser.accepts()) or expected
        msg = f"expected {_describe_expected(expected)}, found {_describe_found(tok)}"
        if tok.type == "HASH" and "NOT" in expected and "HASH" not in expected:
            msg += " (a comparison under a unary operator needs parentheses, e.g. Y (#a > #b))"
        elif tok.type == "DECIMAL":
            msg += " (count coefficients and constants are integers)"
    else:  # pragma: no cover - other UnexpectedInput subclasses are not raised by LALR
        msg = "does not parse"
    return FormulaSyntaxError(msg, source=source, line=line, column=col)


# --------------------------------------------------------------------------------------------
# Tree -> AST
# --------------------------------------------------------------------------------------------


def _token(node: Tree | Token) -> Token:
    if not isinstance(node, _lark().Token):  # pragma: no cover - the grammar guarantees a token
        raise AssertionError(f"expected a token, got {node!r}")
    return node


def _position(tok: Token) -> Position:
    return (tok.line or 1), (tok.column or 1)


class _Builder:
    """Converts a Lark parse tree to AST nodes, remembering where each symbol first occurs."""

    def __init__(self, source: str):
        self.source = source
        self.symbol_positions: dict[str, Position] = {}

    def error(self, tok: Token, message: str) -> FormulaSyntaxError:
        line, column = _position(tok)
        return FormulaSyntaxError(message, source=self.source, line=line, column=column)

    def formula(self, t: Tree | Token) -> Formula:
        if isinstance(t, _lark().Token):  # pragma: no cover - grammar never yields a bare token here
            raise self.error(t, f"unexpected {t.value!r}")
        kind = t.data
        if kind == "start":
            return self.formula(t.children[0])
        if kind == "binary":
            left, op, right = t.children
            return Binary(str(op), self.formula(left), self.formula(right))
        if kind == "unary":
            op, arg = t.children
            return Unary(str(op), self.formula(arg))
        if kind == "const":
            return Const(_token(t.children[0]).type == "TRUE")
        if kind == "atom":
            return Atom(self.symbol(_token(t.children[0])))
        if kind == "comparison":
            lhs, op, rhs = t.children
            return Compare(str(op), self.linear(lhs), self.linear(rhs))
        if kind == "parity":
            which, arg = t.children
            return Parity(self.linear(arg), even=_token(which).type == "EVEN")
        raise AssertionError(f"unknown parse-tree node {kind!r}")  # pragma: no cover

    def symbol(self, tok: Token) -> str:
        if tok.type == "STRING":
            sym = _unquote(tok, self.source)
        else:
            sym = str(tok)
            if len(sym) != 1 and tok.type == "NUMBER":
                raise self.error(
                    tok,
                    f"'{sym}' is a multi-digit number, not a symbol: an unquoted symbol is one "
                    f"letter or digit; write \"{sym}\" for a symbol, or use integers only in "
                    f"count comparisons (#a > {sym})")
            if len(sym) != 1:
                raise self.error(
                    tok,
                    f"'{sym}' is not a symbol: an unquoted symbol is one letter or digit; quote "
                    f"longer symbols (\"{sym}\") and put spaces between symbols and operators "
                    f"(e.g. 'Y a', not 'Ya')")
        self.symbol_positions.setdefault(sym, _position(tok))
        return sym

    def linear(self, t: Tree) -> Linear:
        coeffs: dict[Formula, int] = {}
        const = 0
        sign = 1
        for child in t.children:
            if isinstance(child, _lark().Token):  # SIGN between terms
                sign = -1 if child == "-" else 1
                continue
            if child.data == "signed_term":
                *s, term = child.children
                sign = -1 if s and s[0] == "-" else 1
            else:
                term = child
            f, c = self.term(term)
            if f is None:
                const += sign * c
            else:
                coeffs[f] = coeffs.get(f, 0) + sign * c
        return Linear(tuple((f, c) for f, c in coeffs.items() if c != 0), const)

    def term(self, t: Tree) -> tuple[Formula | None, int]:
        if t.data == "count_term":
            return self.count(t.children[0]), 1
        if t.data == "scaled_term":
            coeff, _star, count = t.children
            return self.count(count), self.integer(coeff)
        if t.data == "const_term":
            return None, self.integer(t.children[0])
        raise AssertionError(f"unknown term node {t.data!r}")  # pragma: no cover

    def count(self, t: Tree) -> Formula:
        _hash, arg = t.children
        return self.formula(arg)

    def integer(self, coeff: Tree) -> int:
        tok = _token(coeff.children[0])
        if tok.type == "DECIMAL":
            raise self.error(tok, f"count coefficients and constants must be integers, found {tok.value}")
        return int(tok)


_ESCAPE = re.compile(r"\\(.)")


def _unquote(tok: Token, source: str) -> str:
    """Body of a double-quoted symbol token; only ``\\"`` and ``\\\\`` escapes are allowed."""
    body = tok.value[1:-1]
    for m in _ESCAPE.finditer(body):
        if m.group(1) not in '"\\':
            raise FormulaSyntaxError(
                f"unknown escape '\\{m.group(1)}' in quoted symbol (only \\\" and \\\\ are allowed)",
                source=source, line=_position(tok)[0], column=_position(tok)[1] + 1 + m.start())
    if not body:
        raise FormulaSyntaxError('empty quoted symbol ""', source=source, line=tok.line,
                                 column=tok.column)
    return _ESCAPE.sub(lambda m: m.group(1), body)


#: the deepest formula accepted (an atom is level 1): later stages recurse a few frames per level
MAX_NESTING = 100


def _parse_with_positions(text: str, source: str) -> tuple[Formula, dict[str, Position]]:
    try:
        tree = _parser().parse(text)
    except _lark().exceptions.UnexpectedInput as e:
        raise _syntax_error(e, text, source) from None
    builder = _Builder(source)
    too_deep = f"formula is nested too deeply (more than {MAX_NESTING} levels)"
    try:
        formula = builder.formula(tree)
    except RecursionError:
        raise FormulaSyntaxError(too_deep, source=source) from None
    if nesting_depth(formula) > MAX_NESTING:
        raise FormulaSyntaxError(too_deep, source=source)
    return formula, builder.symbol_positions


def parse_formula(text: str, *, source: str = "<formula>") -> Formula:
    """Parse one formula (THEORY §4 temporal operators, §5 count comparisons and parity tests
    ``even(L)`` / ``odd(L)``) into an AST.

    ``text`` may span lines and contain ``//`` comments.  ``str(parse_formula(s))`` re-parses to
    the same AST.  Count terms of a comparison side are merged per formula (``#a + #a`` is
    ``2*#a``) in order of first occurrence; zero coefficients are dropped; constants are summed.

    Raises :class:`FormulaSyntaxError` (with ``source``, ``line``, ``column``) if ``text`` does
    not parse: the message names what was expected and what was found; also (without a position)
    for a formula nested more than :data:`MAX_NESTING` levels deep.
    """
    return _parse_with_positions(text, source)[0]


# --------------------------------------------------------------------------------------------
# Alphabets
# --------------------------------------------------------------------------------------------

_ALPHABET_TOKEN = re.compile(
    r'(?P<quoted>"(?:[^"\\\n]|\\.)*")|(?P<comment>//[^\n]*)|(?P<open>"[^\n]*)|(?P<bare>(?:(?!//)\S)+)')


def _alphabet_with_positions(text: str, source: str, line: int = 1, col0: int = 1
                             ) -> list[tuple[str, Position]]:
    """Symbols of one alphabet line with their (line, column); ``col0`` is the text's column."""
    out: list[tuple[str, Position]] = []
    for m in _ALPHABET_TOKEN.finditer(text):
        raw, col = m.group(0), col0 + m.start()
        if m.lastgroup == "comment":
            break
        if m.lastgroup == "open":
            raise FormulaSyntaxError("unterminated quoted symbol in alphabet", source=source,
                                     line=line, column=col)
        if m.lastgroup == "quoted":
            sym = _unquote(_lark().Token("STRING", raw, line=line, column=col), source)
        else:
            sym = raw
            if len(sym) != 1 or not (sym.isascii() and sym.isalnum()) or sym in OPERATOR_LETTERS:
                raise FormulaSyntaxError(
                    f"alphabet symbol '{sym}' must be quoted (unquoted symbols are single letters "
                    f"or digits other than the operators Y X P H F G S U), e.g. \"{sym}\"",
                    source=source, line=line, column=col)
        out.append((sym, (line, col)))
    return out


def parse_alphabet(text: str, *, source: str = "<alphabet>") -> tuple[str, ...]:
    """Parse a whitespace-separated alphabet, symbols written as in formulas (``a b "(" ")"``).

    Raises :class:`FormulaSyntaxError` for an unquoted multi-character or operator-letter symbol
    or a bad quoted symbol; :class:`FormulaError` if the alphabet is empty or repeats a symbol.
    """
    syms = _alphabet_with_positions(text, source)
    return _check_alphabet(syms, source)


def _check_alphabet(syms: Sequence[tuple[str, Position | None]], source: str) -> tuple[str, ...]:
    if not syms:
        raise FormulaError(f"{source}: the alphabet is empty")
    seen: dict[str, Position | None] = {}
    for sym, pos in syms:
        if sym in seen:
            where = f"{source}:{pos[0]}:{pos[1]}" if pos else source
            raise FormulaError(f"{where}: symbol {sym!r} occurs twice in the alphabet")
        if len(sym) > 1 and any(ch.isspace() for ch in sym):
            where = f"{source}:{pos[0]}:{pos[1]}" if pos else source
            raise FormulaError(f"{where}: alphabet symbol {sym!r} contains whitespace")
        seen[sym] = pos
    return tuple(seen)


def _coerce_alphabet(alphabet: str | Iterable[str], source: str = "<alphabet>") -> tuple[str, ...]:
    """An alphabet given by a caller: a string of one-character symbols (or, if the string
    contains whitespace, whitespace-separated symbols), or an iterable of symbols."""
    if isinstance(alphabet, str):
        syms = alphabet.split() if any(ch.isspace() for ch in alphabet) else list(alphabet)
    else:
        syms = list(alphabet)
    for s in syms:
        if not isinstance(s, str) or not s:
            raise FormulaError(f"{source}: alphabet symbols must be non-empty strings, got {s!r}")
    return _check_alphabet([(s, None) for s in syms], source)


# --------------------------------------------------------------------------------------------
# Specifications (.ltl files)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FormulaSpec:
    """A formula with its alphabet and acceptance position.

    * ``name``, ``description``: one-line strings (``name`` defaults to the file stem, or to
      the formula text for an inline formula; ``description`` to ``""``).
    * ``alphabet``: the symbols, distinct, in declaration order.
    * ``at``: ``"first"`` or ``"last"`` — the position whose truth value decides acceptance;
      defaults to :func:`ast.acceptance_position`.
    * ``source``: file path or ``"<formula>"``.

    Construction validates the fields and raises :class:`FormulaError` if the alphabet is empty
    or repeats a symbol, a formula symbol is not in the alphabet, or ``at`` is unknown.
    """

    name: str
    description: str
    alphabet: tuple[str, ...]
    formula: Formula
    at: str
    source: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "alphabet", tuple(self.alphabet))
        _check_alphabet([(s, None) for s in self.alphabet], self.source)
        if self.at not in ACCEPT_AT:
            raise FormulaError(f"{self.source}: 'at' must be 'first' or 'last', got {self.at!r}")
        _check_symbols(self.formula, self.alphabet, self.source, {})


def _check_symbols(formula: Formula, alphabet: Sequence[str], source: str,
                   positions: dict[str, Position]) -> None:
    allowed = set(alphabet)
    for sym in symbols(formula):
        if sym not in allowed:
            pos = positions.get(sym)
            where = f"{source}:{pos[0]}:{pos[1]}" if pos else source
            shown = " ".join(str(Atom(s)) for s in alphabet)
            raise FormulaError(f"{where}: symbol {str(Atom(sym))} is not in the alphabet {{{shown}}}")


_KEYS = ("name", "description", "alphabet", "at", "formula")
_KEY_LINE = re.compile(r"^(\s*)([A-Za-z_][A-Za-z0-9_]*)\s*:")
_COMMENT = re.compile(r"//.*$")


def parse_spec(text: str, *, source: str = "<string>") -> FormulaSpec:
    """Parse the text of an ``.ltl`` file (format in ``examples/README.md``).

    Lines ``key: value`` with keys ``name``, ``description``, ``alphabet`` (required), ``at``
    (``first``/``last``), then ``formula:`` (required) whose value runs to the end of the text.
    ``//`` starts a comment to end of line (outside quoted symbols); blank lines are ignored.

    Raises :class:`FormulaSyntaxError` (``source:line:col``, positions in the file) for a
    malformed line, unknown/duplicate/missing key or a formula that does not parse;
    :class:`FormulaError` for an empty or repeating alphabet or a formula symbol outside the
    alphabet (with the symbol's first ``line:col``).
    """
    lines = re.findall(r"[^\n]*\n|[^\n]+$", text)  # keep ends; only "\n" ends a line (as in Lark)
    fields: dict[str, tuple[str, int, int]] = {}  # key -> (raw value, line, column of value)
    formula_at: tuple[int, int] | None = None  # (line index, offset of the formula in that line)
    for idx, raw in enumerate(lines):
        lineno = idx + 1
        stripped = raw.strip()
        if not stripped or stripped.startswith("//"):
            continue
        m = _KEY_LINE.match(raw)
        if not m:
            col = len(raw) - len(raw.lstrip()) + 1
            raise FormulaSyntaxError(
                f"expected 'key: value' with key one of {', '.join(_KEYS)}, found {stripped[:30]!r}",
                source=source, line=lineno, column=col)
        key = m.group(2)
        keycol = len(m.group(1)) + 1
        if key not in _KEYS:
            raise FormulaSyntaxError(f"unknown key {key!r} (expected one of {', '.join(_KEYS)})",
                                     source=source, line=lineno, column=keycol)
        if key in fields:
            raise FormulaSyntaxError(f"duplicate key {key!r}", source=source, line=lineno, column=keycol)
        value = raw[m.end():]
        valcol = m.end() + 1 + len(value) - len(value.lstrip(" \t"))
        fields[key] = (value, lineno, valcol)
        if key == "formula":
            formula_at = (idx, m.end())
            break

    if "alphabet" not in fields:
        raise FormulaSyntaxError("missing required key 'alphabet'", source=source,
                                 line=len(lines) or 1, column=1)
    if formula_at is None:
        raise FormulaSyntaxError("missing required key 'formula' (it must come last)", source=source,
                                 line=len(lines) or 1, column=1)

    def one_line(key: str) -> str | None:
        return _COMMENT.sub("", fields[key][0]).strip() if key in fields else None

    # In file order: alphabet, at, formula.
    raw_alpha, aline, acol = fields["alphabet"]
    alpha_syms = _alphabet_with_positions(raw_alpha.strip(" \t\r\n"), source, aline, acol)
    if not alpha_syms:
        raise FormulaError(f"{source}:{aline}:{acol}: the alphabet is empty")
    alphabet = _check_alphabet(alpha_syms, source)

    at = one_line("at")
    if at is not None and at not in ACCEPT_AT:
        _, line, col = fields["at"]
        raise FormulaSyntaxError(f"'at' must be 'first' or 'last', found {at!r}", source=source,
                                 line=line, column=col)

    # Blank out everything before the formula (keeping newlines) so Lark reports file positions.
    idx, off = formula_at
    prefix = "".join(ch if ch == "\n" else " " for ch in "".join(lines[:idx]) + lines[idx][:off])
    formula, positions = _parse_with_positions(prefix + text[len(prefix):], source)
    _check_symbols(formula, alphabet, source, positions)

    name = one_line("name") or (Path(source).stem if not source.startswith("<") else source)
    return FormulaSpec(
        name=name,
        description=one_line("description") or "",
        alphabet=alphabet,
        formula=formula,
        at=at or acceptance_position(formula),
        source=source,
    )


_FILE_NAME = re.compile(r"[\w.~/\\-]+")


def _looks_like_a_file_name(text: str) -> bool:
    """A word that is rather a file name than a formula: path characters only, and a path
    separator, a dot, or four or more characters (``tomita9``, ``examples/x``)."""
    return bool(_FILE_NAME.fullmatch(text)) and (bool(re.search(r"[./\\]", text)) or len(text) >= 4)


def load_spec(path_or_inline_formula: str | os.PathLike[str],
              alphabet: str | Sequence[str] | None = None) -> FormulaSpec:
    """Load an ``.ltl`` file, or build a spec from an inline formula.

    If the argument names an existing file (or, for a bare name such as ``tomita4``, the file
    ``tomita4.ltl`` exists) it is parsed with :func:`parse_spec` (``alphabet``, if given, then
    replaces the file's alphabet).  A name that looks like a file but is neither a file nor a
    formula is an :class:`InputFileError` saying both.  Otherwise the argument is a formula; its
    alphabet is ``alphabet`` if given — a string of one-character symbols (``"ab"``), a
    whitespace-separated string (``"ab cd"``) or a sequence of symbols — else the symbols the
    formula mentions, in order of first occurrence.  ``at`` is
    :func:`ast.acceptance_position` of the formula unless the file says otherwise.

    Raises :class:`FormulaSyntaxError` if the text does not parse, :class:`InputFileError` if a
    ``*.ltl`` path does not exist or is not UTF-8 text, :class:`FormulaError` if a symbol is outside the alphabet or the alphabet is empty
    or repeats a symbol.
    """
    is_pathlike = isinstance(path_or_inline_formula, os.PathLike)
    text = os.fspath(path_or_inline_formula)
    path = Path(text)
    if "\n" not in text and len(text) < 4096 and is_file(path):
        try:
            body = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise InputFileError(f"{text}: not a UTF-8 text file (byte {e.start}: {e.reason})") from None
        except OSError as e:
            raise InputFileError(f"{text}: cannot read ({e.strerror or e})") from None
        spec = parse_spec(body, source=text)
        if alphabet is None:
            return spec
        alpha = _coerce_alphabet(alphabet, source=text)
        return FormulaSpec(spec.name, spec.description, alpha, spec.formula, spec.at, spec.source)
    if is_pathlike or text.endswith(".ltl"):
        raise InputFileError(f"{text}: no such file")
    if _looks_like_a_file_name(text) and is_file(text + ".ltl"):
        return load_spec(text + ".ltl", alphabet)
    source = "<formula>"
    try:
        formula, positions = _parse_with_positions(text, source)
    except FormulaSyntaxError:
        if _looks_like_a_file_name(text):
            raise InputFileError(f"no file {text!r} or {text + '.ltl'!r}; to give a formula, quote it, with "
                                 "multi-character symbols in double quotes and spaces between symbols and operators "
                                 "(e.g. 'Y a', '\"ab\" S b')") from None
        raise
    if alphabet is None:
        syms = symbols(formula)
        if not syms:
            raise FormulaError(f"{source}: the formula mentions no symbol; give an alphabet")
        alpha = tuple(syms)
    else:
        alpha = _coerce_alphabet(alphabet)
        _check_symbols(formula, alpha, source, positions)
    return FormulaSpec(name=" ".join(text.split()), description="", alphabet=alpha, formula=formula,
                       at=acceptance_position(formula), source=source)


# --------------------------------------------------------------------------------------------
# Words
# --------------------------------------------------------------------------------------------


def tokenize(word: str, alphabet: str | Sequence[str]) -> list[str]:
    """Split ``word`` into alphabet symbols.

    If every symbol of ``alphabet`` is one character, ``word`` is split into characters (and, when
    no symbol is whitespace, whitespace between them is ignored, so ``"a b b"`` is ``abb``);
    otherwise it is split on whitespace.  Returns a list of length ``n >= 1``.

    Raises :class:`ParameterError` for an empty word (``n < 1``) and :class:`FormulaError`
    naming the first symbol not in ``alphabet`` and its 1-based position.
    """
    alpha = _coerce_alphabet(alphabet) if isinstance(alphabet, str) else tuple(alphabet)
    allowed = set(alpha)
    if all(len(s) == 1 for s in alpha):
        toks = list(word) if any(s.isspace() for s in alpha) else [ch for ch in word if not ch.isspace()]
    else:
        toks = word.split()
    if not toks:
        raise ParameterError("n < 1: the word is empty")
    if not allowed.issuperset(toks):
        for i, t in enumerate(toks, 1):
            if t not in allowed:
                raise FormulaError(f"symbol {t!r} at position {i} is not in the alphabet "
                                   f"{{{' '.join(str(Atom(s)) for s in alpha)}}}")
    return toks
