"""Reference (hard) semantics of softhard formulas, vectorised with NumPy.

This is the ground truth the transformers are compared with: it is written directly from the
definitions, not from any attention construction.

* THEORY §4 (strict temporal operators), at position ``i`` of ``w = w_1 … w_n``:
  ``Y φ``: ``i > 1 ∧ φ(i−1)``;  ``X φ``: ``i < n ∧ φ(i+1)``;
  ``φ S ψ``: ``∃ j<i: ψ(j) ∧ ∀ k∈(j,i): φ(k)``;  ``φ U ψ``: ``∃ j>i: ψ(j) ∧ ∀ k∈(i,j): φ(k)``;
  ``P ψ = ⊤ S ψ``, ``H φ = ¬P¬φ``, ``F ψ = ⊤ U ψ``, ``G φ = ¬F¬φ``.
* THEORY §5 (counting): ``#φ`` at ``i`` is ``C_φ(i) = |{j ≤ i : φ(j)}|``; a comparison
  ``Σ a_k C_k(i) + c  op  Σ b_k C_k(i) + d`` is evaluated in exact integers; ``even(L)`` /
  ``odd(L)`` test the parity of the integer ``L(i)``.

Arrays: a truth array has shape ``(n,)`` — index ``k`` is position ``k+1`` — or ``(B, n)`` for a
batch of ``B`` words of the same length (every operation acts along the last axis).

Public API::

    evaluate(formula, word) -> dict[Formula, np.ndarray]     # every subformula
    truth(formula, word) -> np.ndarray                       # the formula itself
    linear_values(linear, values) -> np.ndarray               # Σ c·C_φ + const, exact integers
    accepts(spec_or_formula, word, at=None) -> bool
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .ast import Atom, Binary, Compare, Const, Formula, Linear, Parity, Unary, acceptance_position, subformulas
from .errors import FormulaError, ParameterError
from .parse import ACCEPT_AT, FormulaSpec, tokenize

__all__ = ["evaluate", "truth", "linear_values", "accepts", "Word"]

Word = str | Sequence[str] | np.ndarray
"""A word: a ``str`` (one symbol per character), a sequence of symbols, or an array of symbols
of shape ``(n,)`` (one word) or ``(B, n)`` (a batch of words of equal length)."""

_COMPARE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt,
    ">=": operator.ge, "=": operator.eq, "!=": operator.ne,
}


def _symbol_array(word: Word) -> np.ndarray:
    """The word as an array of symbols, shape ``(n,)`` or ``(B, n)``, ``n >= 1``."""
    if isinstance(word, np.ndarray):
        arr = word
    elif isinstance(word, str):  # one symbol per code point; UTF-32 is exactly NumPy's '<U1'
        arr = np.frombuffer(word.encode("utf-32-le"), dtype="<U1")
    else:
        arr = np.array(list(word), dtype=str)
    if arr.ndim not in (1, 2):
        raise ParameterError(f"a word must have shape (n,) or (B, n), got shape {arr.shape}")
    if arr.shape[-1] < 1:
        raise ParameterError("n < 1: the word is empty")
    return arr


# ---- the operators, on Boolean arrays of shape (..., n) ----------------------------------------


def _yesterday(phi: np.ndarray) -> np.ndarray:
    """``(Y φ)(i) = i > 1 ∧ φ(i−1)``."""
    out = np.zeros_like(phi)
    out[..., 1:] = phi[..., :-1]
    return out


def _next(phi: np.ndarray) -> np.ndarray:
    """``(X φ)(i) = i < n ∧ φ(i+1)``."""
    out = np.zeros_like(phi)
    out[..., :-1] = phi[..., 1:]
    return out


def _since(phi: np.ndarray, psi: np.ndarray) -> np.ndarray:
    """``(φ S ψ)(i) = ∃ j<i: ψ(j) ∧ ∀ k∈(j,i): φ(k)``, in O(n).

    Let ``b = ψ ∨ ¬φ``.  If a witness ``j`` exists, the last ``j' < i`` with ``b(j')`` is
    ``≥ j`` and, since ``φ`` holds strictly between ``j`` and ``i``, ``ψ(j')`` holds; conversely
    if the last such ``j'`` has ``ψ(j')`` then every ``k ∈ (j', i)`` has ``¬b(k)``, so ``φ(k)``.
    Hence ``φ S ψ`` holds at ``i`` iff the last ``j < i`` with ``b(j)`` exists and has ``ψ(j)``.
    """
    n = phi.shape[-1]
    idx = np.arange(n)
    last_upto = np.maximum.accumulate(np.where(psi | ~phi, idx, -1), axis=-1)  # last j <= i
    last_before = np.full_like(last_upto, -1)
    last_before[..., 1:] = last_upto[..., :-1]  # last j < i
    safe = np.maximum(last_before, 0)
    chosen = psi[safe] if psi.ndim == 1 else np.take_along_axis(psi, safe, axis=-1)
    return (last_before >= 0) & chosen


def _until(phi: np.ndarray, psi: np.ndarray) -> np.ndarray:
    """``(φ U ψ)(i) = ∃ j>i: ψ(j) ∧ ∀ k∈(i,j): φ(k)`` — ``S`` on the reversed word."""
    return _since(phi[..., ::-1], psi[..., ::-1])[..., ::-1]


def _unary(op: str, a: np.ndarray) -> np.ndarray:
    true = np.ones_like(a)
    if op == "!":
        return ~a
    if op == "Y":
        return _yesterday(a)
    if op == "X":
        return _next(a)
    if op == "P":  # P ψ = ⊤ S ψ
        return _since(true, a)
    if op == "H":  # H φ = ¬P¬φ
        return ~_since(true, ~a)
    if op == "F":  # F ψ = ⊤ U ψ
        return _until(true, a)
    if op == "G":  # G φ = ¬F¬φ
        return ~_until(true, ~a)
    raise FormulaError(f"unknown unary operator {op!r}")  # pragma: no cover - ast validates


def _binary(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if op == "&":
        return a & b
    if op == "|":
        return a | b
    if op == "->":
        return ~a | b
    if op == "S":
        return _since(a, b)
    if op == "U":
        return _until(a, b)
    raise FormulaError(f"unknown binary operator {op!r}")  # pragma: no cover - ast validates


def linear_values(linear: Linear, values: Mapping[Formula, np.ndarray],
                  shape: tuple[int, ...] | None = None) -> np.ndarray:
    """``Σ coeff·C_φ(i) + const`` (THEORY §5) as an exact integer array of shape ``(n,)`` or ``(B, n)``:
    int64 when no value can reach 2^63, else Python integers (an object array).

    ``values`` maps each term formula ``φ`` to its truth array (as returned by :func:`evaluate`);
    ``C_φ(i)`` counts the positions ``j ≤ i`` where ``φ`` holds.  ``shape`` is needed only when
    ``linear`` has no terms.  Raises ``KeyError`` if a term formula has no truth array and
    :class:`ParameterError` if the shape is unknown.
    """
    if shape is None:
        if not linear.terms:
            raise ParameterError("linear_values: a constant needs an explicit shape")
        shape = values[linear.terms[0][0]].shape
    return _exact_sum([(values[f], c) for f, c in linear.terms], linear.const, shape)


def _exact_sum(terms: list[tuple[np.ndarray, int]], const: int, shape: tuple[int, ...]) -> np.ndarray:
    """``Σ c·cumsum(truth) + const`` in exact integers: int64 while ``|const| + Σ|c|·n < 2^63``
    proves that no partial sum overflows, else Python integers (an object array)."""
    n = shape[-1] if shape else 0
    fits = abs(const) + sum(abs(c) for _, c in terms) * n < 2**63
    total = np.full(shape, const, dtype=np.int64 if fits else object)
    for truth_, c in terms:
        counts = np.cumsum(truth_, axis=-1, dtype=np.int64)
        total += c * (counts if fits else counts.astype(object))
    return total


@dataclass(frozen=True)
class _Step:
    node: Formula
    args: tuple[int, ...] = ()  # indices of earlier steps: operands, or count-term formulas
    lhs: tuple[tuple[int, int], ...] = ()  # Compare: (step index, coeff) pairs of each side
    rhs: tuple[tuple[int, int], ...] = ()


@lru_cache(maxsize=256)
def _plan(formula: Formula) -> tuple[_Step, ...]:
    """Post-order evaluation plan of the distinct subformulas, operands referenced by index
    (so evaluation does not re-hash AST nodes, which is O(size) per hash)."""
    nodes = subformulas(formula)
    index = {g: k for k, g in enumerate(nodes)}
    steps = []
    for g in nodes:
        if isinstance(g, Compare):
            steps.append(_Step(g, lhs=tuple((index[f], c) for f, c in g.lhs.terms),
                               rhs=tuple((index[f], c) for f, c in g.rhs.terms)))
        elif isinstance(g, Parity):
            steps.append(_Step(g, lhs=tuple((index[f], c) for f, c in g.arg.terms)))
        else:
            steps.append(_Step(g, tuple(index[c] for c in g.children())))
    return tuple(steps)


_acceptance_position = lru_cache(maxsize=256)(acceptance_position)


def _linear(terms: tuple[tuple[int, int], ...], const: int, vals: list[np.ndarray],
            shape: tuple[int, ...]) -> np.ndarray:
    return _exact_sum([(vals[k], c) for k, c in terms], const, shape)


def _run(formula: Formula, word: Word) -> tuple[tuple[_Step, ...], list[np.ndarray]]:
    w = _symbol_array(word)
    steps = _plan(formula)
    vals: list[np.ndarray] = []
    for st in steps:
        g = st.node
        if isinstance(g, Atom):
            v = np.asarray(w == g.symbol, dtype=bool)
            if v.shape != w.shape:  # elementwise == declined (e.g. a non-string array)
                v = np.vectorize(lambda s, sym=g.symbol: s == sym, otypes=[bool])(w)
        elif isinstance(g, Const):
            v = np.full(w.shape, g.value, dtype=bool)
        elif isinstance(g, Unary):
            v = _unary(g.op, vals[st.args[0]])
        elif isinstance(g, Binary):
            v = _binary(g.op, vals[st.args[0]], vals[st.args[1]])
        elif isinstance(g, Compare):
            lhs = _linear(st.lhs, g.lhs.const, vals, w.shape)
            rhs = _linear(st.rhs, g.rhs.const, vals, w.shape)
            v = _COMPARE[g.op](lhs, rhs)
        elif isinstance(g, Parity):
            v = (_linear(st.lhs, g.arg.const, vals, w.shape) % 2 == 0) == g.even
        else:
            raise FormulaError(f"not a formula node: {g!r}")
        vals.append(v)
    return steps, vals


def evaluate(formula: Formula, word: Word) -> dict[Formula, np.ndarray]:
    """Truth arrays of every subformula of ``formula`` on ``word`` (hard semantics, THEORY §4-5).

    ``word``: a ``str`` (each character a symbol — use :func:`parse.tokenize` or a list for
    multi-character symbols), a sequence of symbols, or an array of shape ``(n,)`` or ``(B, n)``.
    Returns ``{subformula: bool array of shape (n,) or (B, n)}``, index ``k`` = position ``k+1``,
    in post-order (the formula itself last).  Symbols outside the formula satisfy no atom.

    Cost: O(n) NumPy work per distinct subformula.
    Raises :class:`ParameterError` for an empty word (``n < 1``) or a badly shaped array.
    """
    steps, vals = _run(formula, word)
    return {st.node: v for st, v in zip(steps, vals, strict=True)}


def truth(formula: Formula, word: Word) -> np.ndarray:
    """Truth array of ``formula`` on ``word``: bool, shape ``(n,)`` (or ``(B, n)`` for a batch),
    index ``k`` = position ``k+1``.  Same conventions and errors as :func:`evaluate`."""
    return _run(formula, word)[1][-1]


def accepts(spec_or_formula: FormulaSpec | Formula, word: Word, at: str | None = None) -> bool:
    """Whether the formula accepts ``word``: its truth value at the judging position.

    The position is ``at`` if given, else ``spec.at`` for a :class:`FormulaSpec`, else
    :func:`ast.acceptance_position` (``"first"`` for future-only formulas, ``"last"`` otherwise).
    With a spec, a ``str`` word is split by :func:`parse.tokenize` and a sequence of symbols is
    checked against the alphabet; with a bare formula, a ``str`` is split into characters.
    A batch ``(B, n)`` is not accepted here (use :func:`truth`).

    Raises :class:`ParameterError` for an empty word or ``at`` not ``"first"``/``"last"``;
    :class:`FormulaError` for a symbol outside the spec's alphabet (its 1-based position).
    """
    if isinstance(spec_or_formula, FormulaSpec):
        formula = spec_or_formula.formula
        where = at or spec_or_formula.at
        if isinstance(word, str):
            word = tokenize(word, spec_or_formula.alphabet)
        elif not isinstance(word, np.ndarray):
            word = list(word)
            allowed = set(spec_or_formula.alphabet)
            for i, sym in enumerate(word, 1):
                if sym not in allowed:
                    raise FormulaError(
                        f"symbol {sym!r} at position {i} is not in the alphabet")
    else:
        formula = spec_or_formula
        where = at or _acceptance_position(formula)
    if where not in ACCEPT_AT:
        raise ParameterError(f"at must be 'first' or 'last', got {where!r}")
    t = truth(formula, word)
    if t.ndim != 1:
        raise ParameterError(f"accepts takes one word, got an array of shape {t.shape}")
    return bool(t[0] if where == "first" else t[-1])
