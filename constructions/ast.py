"""Abstract syntax of softhard formulas (temporal logic with past and future, and counting).

Formulas are immutable, hashable trees, so equal subformulas compare equal and a compiler can
share them.  ``str(f)`` prints a fully parenthesised canonical text that parses back to ``f``.

Operators (THEORY §4, strict semantics):

* ``Atom(symbol)``: the input symbol at the position is ``symbol``.
* ``Const(True|False)``: ``true`` / ``false``.
* ``Unary(op, arg)`` with ``op`` in ``! Y X P H F G``.
* ``Binary(op, left, right)`` with ``op`` in ``& | -> S U``.

Counting (THEORY §5): a *count term* ``#φ`` is the number of positions ``j <= i`` where ``φ``
holds; ``Compare(op, lhs, rhs)`` compares two integer linear combinations of count terms.
``Linear(terms, const)`` is ``Σ coeff·#φ + const`` with integer coefficients.

Modular counting (THEORY §5, parity): ``Parity(arg, even)`` holds when the integer ``arg`` (a
``Linear``) is even (``even(L)``) or odd (``odd(L)``).  This is *not* expressible with
comparisons alone (parity is outside counting logic, see ``examples/README.md``); its
construction needs the positional embedding ``(j, j², (−1)^j)``.
"""

from __future__ import annotations

from dataclasses import dataclass

UNARY_OPS = ("!", "Y", "X", "P", "H", "F", "G")
BINARY_OPS = ("&", "|", "->", "S", "U")
COMPARE_OPS = ("<", "<=", ">", ">=", "=", "!=")
PAST_OPS = frozenset({"Y", "P", "H", "S"})
FUTURE_OPS = frozenset({"X", "F", "G", "U"})


class Formula:
    """Base class of formula nodes."""

    __slots__ = ()

    def children(self) -> tuple["Formula", ...]:
        return ()


def _quote(symbol: str) -> str:
    if len(symbol) == 1 and symbol.isascii() and symbol.isalnum() and symbol not in "YXPHFGSU":
        return symbol
    return '"' + symbol.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class Atom(Formula):
    symbol: str

    def __str__(self) -> str:
        return _quote(self.symbol)


@dataclass(frozen=True)
class Const(Formula):
    value: bool

    def __str__(self) -> str:
        return "true" if self.value else "false"


@dataclass(frozen=True)
class Unary(Formula):
    op: str
    arg: Formula

    def __post_init__(self):
        if self.op not in UNARY_OPS:
            raise ValueError(f"unknown unary operator {self.op!r}")

    def children(self):
        return (self.arg,)

    def __str__(self) -> str:
        return f"{self.op}{_paren(self.arg)}" if self.op == "!" else f"{self.op} {_paren(self.arg)}"


@dataclass(frozen=True)
class Binary(Formula):
    op: str
    left: Formula
    right: Formula

    def __post_init__(self):
        if self.op not in BINARY_OPS:
            raise ValueError(f"unknown binary operator {self.op!r}")

    def children(self):
        return (self.left, self.right)

    def __str__(self) -> str:
        return f"{_paren(self.left)} {self.op} {_paren(self.right)}"


@dataclass(frozen=True)
class Linear:
    """Integer linear combination ``Σ coeff·#formula + const`` of count terms.

    ``terms`` is a tuple of ``(formula, coeff)`` pairs, formulas distinct, coefficients nonzero ints.
    """

    terms: tuple[tuple[Formula, int], ...]
    const: int = 0

    def __post_init__(self):
        for _f, c in self.terms:
            if not isinstance(c, int) or isinstance(c, bool):
                raise ValueError(f"count coefficient must be an integer, got {c!r}")
        if not isinstance(self.const, int) or isinstance(self.const, bool):
            raise ValueError(f"constant must be an integer, got {self.const!r}")

    def __str__(self) -> str:
        # Signs are placed per term (never by rewriting the joined text, which could alter a
        # quoted symbol such as "x + -y").
        parts: list[tuple[bool, str]] = []  # (negative, magnitude text)
        for f, c in self.terms:
            parts.append((c < 0, f"#{_paren(f)}" if abs(c) == 1 else f"{abs(c)}*#{_paren(f)}"))
        if self.const or not parts:
            parts.append((self.const < 0, str(abs(self.const))))
        neg, text = parts[0]
        out = ("-" if neg else "") + text
        for neg, text in parts[1:]:
            out += f" {'-' if neg else '+'} {text}"
        return out


@dataclass(frozen=True)
class Compare(Formula):
    op: str
    lhs: Linear
    rhs: Linear

    def __post_init__(self):
        if self.op not in COMPARE_OPS:
            raise ValueError(f"unknown comparison {self.op!r}")

    def children(self):
        return tuple(f for f, _ in self.lhs.terms) + tuple(f for f, _ in self.rhs.terms)

    def __str__(self) -> str:
        return f"{self.lhs} {self.op} {self.rhs}"


@dataclass(frozen=True)
class Parity(Formula):
    """``even(L)`` (``even=True``) or ``odd(L)``: the parity of the linear combination ``L``."""

    arg: Linear
    even: bool = True

    def children(self):
        return tuple(f for f, _ in self.arg.terms)

    def __str__(self) -> str:
        return f"{'even' if self.even else 'odd'}({self.arg})"


def _paren(f: Formula) -> str:
    s = str(f)
    if isinstance(f, (Atom, Const, Parity)):
        return s
    if isinstance(f, Unary):
        return s if f.op == "!" else f"({s})"
    return f"({s})"


def subformulas(f: Formula):
    """All subformulas of ``f`` (post-order, each distinct one once)."""
    seen: dict[Formula, None] = {}

    def walk(g: Formula):
        for c in g.children():
            walk(c)
        if g not in seen:
            seen[g] = None

    walk(f)
    return list(seen)


def operators(f: Formula) -> set[str]:
    """Set of operator names occurring in ``f`` (``#`` for count comparisons, ``%`` and ``#`` for
    parity tests)."""
    out: set[str] = set()
    for g in subformulas(f):
        if isinstance(g, (Unary, Binary)):
            out.add(g.op)
        elif isinstance(g, Compare):
            out.add("#")
        elif isinstance(g, Parity):
            out.update(("#", "%"))
    return out


def symbols(f: Formula) -> list[str]:
    """Alphabet symbols mentioned by ``f``, in order of first occurrence."""
    out: dict[str, None] = {}
    for g in subformulas(f):
        if isinstance(g, Atom):
            out[g.symbol] = None
    return list(out)


def acceptance_position(f: Formula) -> str:
    """Where a word is judged: ``"last"`` or ``"first"`` position.

    Rule (documented in README): formulas with a future operator (X F G U) and no past operator
    (Y P H S, or a count term, which looks at the prefix) are judged at the first position;
    every other formula — pure past, propositional, or mixed — at the last position.
    """
    ops = operators(f)
    has_future = bool(ops & FUTURE_OPS)
    has_past = bool(ops & PAST_OPS) or "#" in ops
    return "first" if has_future and not has_past else "last"


def nesting_depth(f: Formula) -> int:
    """The nesting depth of ``f`` (an atom or constant: 1; each operator adds 1; a count term
    ``#φ`` counts as a child of its comparison), computed without recursion."""
    deepest, stack = 0, [(f, 1)]
    while stack:
        g, d = stack.pop()
        deepest = max(deepest, d)
        stack.extend((c, d + 1) for c in g.children())
    return deepest
