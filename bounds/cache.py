"""On-disk cache of SymPy derivation results: derived once per construction shape, reused (ISSUE 16).

SymPy stays the source of every derivation; this layer only stores what a derivation returned and
hands it back, structurally identical, the next time the same inputs come.  Cached: the bounds a
rule derives (:func:`cached_bound`, e.g. one per (regime, key_const, spacing) selection), the
result of substituting exact parameters into a bound (:func:`subs`: ``Max`` re-evaluation there
was 15% of a certify), LaTeX texts (:func:`latex_of`: SymPy's ``latex`` calls ``simplify``,
which imports ``sympy.physics.units``), ``srepr`` and ``str`` texts (:func:`srepr_of`, :func:`str_of`) and the SMT-LIB2 text of each box query
(:func:`text_of`, used by ``solver.check``; Z3 still runs on every query).

Keys: SHA-256 of the entry's kind, its inputs, the package version, SymPy's version and a hash of
the source of every module in ``bounds/``, ``constructions/`` and ``solver/`` (so editing a
derivation or an encoding invalidates every entry).  Values: JSON; expressions as trees ``[head, *args]`` in SymPy's own
argument order, rebuilt with ``evaluate=False`` — so no ``Max``/``Add`` re-evaluation, and the
rebuilt expression ``==`` the derived one (tests/bounds/test_cache.py compares cached against
live derivations).  An entry that cannot be encoded (an unknown head) is simply not cached.

Keys, the fingerprint and the two layers (memory, disk) are :mod:`softhard.bounds.store`, which
imports no SymPy (where the disk layer lives, ``SOFTHARD_CACHE=0``, unwritable directories).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import sympy as sp
from sympy.core.parameters import global_parameters

from .core import Bound
from .fastfn import Unsupported, compile_tree
from .store import cache_dir, cached_text, entry_key, fingerprint, load, save

__all__ = ["Unencodable", "cache_dir", "cached_bound", "cached_text", "compile_expr", "decode_expr", "encode_expr", "fingerprint",
           "latex_of", "srepr_of", "str_of", "subs", "text_of"]

#: SymPy heads rebuilt with ``evaluate=False`` (every other head is refused: the entry is not cached)
_HEADS = {name: getattr(sp, name) for name in ("Add", "Mul", "Pow", "Max", "Min", "exp", "log", "Abs", "floor",
                                                "ceiling")}

_exprs: dict[str, sp.Basic] = {}  # key -> decoded expression (subs results), per process


class Unencodable(Exception):
    """An expression (or a :class:`Bound` field) :func:`encode_expr` cannot write as a tree."""


# ------------------------------------------------------------------------------------------
# expressions <-> JSON trees


def encode_expr(e) -> list:
    """``e`` (a SymPy object) as a JSON tree in its own argument order.  Raises
    :class:`Unencodable` for a head outside :data:`_HEADS`."""
    if isinstance(e, sp.Symbol):
        if type(e) is not sp.Symbol:  # Dummy, Wild: identity not reproducible
            raise Unencodable(type(e).__name__)
        # the assumptions the symbol was created with (not the deduced ones): the same Symbol back
        return ["Symbol", e.name, dict(sorted(getattr(e, "_assumptions_orig", e.assumptions0).items()))]
    if isinstance(e, sp.Integer):
        return ["Integer", str(e.p)]
    if isinstance(e, sp.Rational):
        return ["Rational", str(e.p), str(e.q)]
    if isinstance(e, sp.Float):
        return ["Float", sp.srepr(e)]
    for name, c in (("pi", sp.pi), ("E", sp.E), ("oo", sp.oo), ("zoo", sp.zoo), ("nan", sp.nan), ("true", sp.true),
                    ("false", sp.false), ("NegativeInfinity", sp.S.NegativeInfinity)):
        if e is c:
            return ["const", name]
    head = type(e).__name__
    if head not in _HEADS or _HEADS[head] is not type(e):
        raise Unencodable(head)
    return [head, *[encode_expr(a) for a in e.args]]


_CONSTS = {"pi": sp.pi, "E": sp.E, "oo": sp.oo, "zoo": sp.zoo, "nan": sp.nan, "true": sp.true, "false": sp.false,
           "NegativeInfinity": sp.S.NegativeInfinity}


def decode_expr(t: list):
    """The SymPy object of a tree from :func:`encode_expr`, built without evaluation."""
    head = t[0]
    if head == "Symbol":
        return sp.Symbol(t[1], **t[2])
    if head == "Integer":
        return sp.Integer(int(t[1]))
    if head == "Rational":
        return sp.Rational(int(t[1]), int(t[2]))
    if head == "Float":
        return sp.sympify(t[1])
    if head == "const":
        return _CONSTS[t[1]]
    return _HEADS[head](*[decode_expr(a) for a in t[1:]], evaluate=False)


# ------------------------------------------------------------------------------------------
# the two layers


def latex_of(expr, compute: Callable[[], str]) -> str:
    """:func:`cached_text` keyed by the expression's tree (the caller's printer settings are fixed)."""
    return text_of("latex", expr, None, compute)


def srepr_of(expr) -> str:
    """``sympy.srepr(expr)``, cached by the expression's tree (SymPy's printers sort the terms of
    every ``Add``/``Mul``: ~5 ms for a bound, a tenth of a warm assemble; ISSUE 16)."""
    return text_of("srepr", expr, None, lambda: sp.srepr(expr))


def str_of(expr) -> str:
    """``str(expr)`` (SymPy's default printer), cached by the expression's tree like :func:`srepr_of`."""
    return text_of("str", expr, None, lambda: str(expr))


def text_of(kind: str, expr, extra, compute: Callable[[], str]) -> str:
    """:func:`cached_text` keyed by ``kind``, the expression's tree and ``extra`` (JSON-able), e.g.
    the SMT-LIB2 text of a claim's box query; computed live when the expression has no tree."""
    try:
        inputs = [encode_expr(expr), extra]
    except (Unencodable, ValueError):  # (ValueError: an integer past str()'s digit limit)
        return compute()
    return cached_text(kind, inputs, compute)


def subs(expr, values: dict):
    """``sympify(expr).subs(values)``, cached: ``values`` maps symbols to exact numbers.  Live (not
    cached) when the expression or a value cannot be encoded, or under ``sympy.evaluate(False)``."""
    expr = sp.sympify(expr)
    if not global_parameters.evaluate:  # under sympy.evaluate(False) a live subs builds other trees
        return expr.subs(values)
    try:
        inputs = [encode_expr(expr), sorted([encode_expr(k), encode_expr(sp.sympify(v))] for k, v in values.items())]
    except (Unencodable, TypeError, ValueError):  # (also: same-named symbols of other assumptions
        return expr.subs(values)                  # sort as dicts; an integer past str()'s digit limit)
    key = entry_key("subs", inputs)
    if key in _exprs:
        return _exprs[key]
    hit = load(key)
    if isinstance(hit, list):
        try:
            _exprs[key] = decode_expr(hit)
            return _exprs[key]
        except (KeyError, TypeError, ValueError, IndexError):
            pass  # a malformed entry: substitute live and overwrite it
    out = expr.subs(values)
    try:
        enc = encode_expr(out)
    except (Unencodable, ValueError):
        return out
    save(key, enc)
    _exprs[key] = out
    return out


def _encode_bound(b: Bound) -> dict:
    out = {}
    for f in dataclasses.fields(b):
        v = getattr(b, f.name)
        if isinstance(v, sp.Basic):
            out[f.name] = {"expr": encode_expr(v)}
        elif v is None or isinstance(v, (bool, int, str)):
            out[f.name] = {"value": v}
        elif isinstance(v, dict) and not v:
            out[f.name] = {"value": {}}
        else:
            raise Unencodable(f"{f.name}: {type(v).__name__}")
    return out


def _decode_bound(d: dict) -> Bound:
    return Bound(**{k: (decode_expr(v["expr"]) if "expr" in v else v["value"]) for k, v in d.items()})


def cached_bound(kind: str, inputs, compute: Callable[[], Bound]) -> Bound:
    """The :class:`Bound` a rule derives from ``inputs`` (JSON-able), derived once and reused.
    A fresh :class:`Bound` object is returned on every call (callers may set fields)."""
    key = entry_key("bound:" + kind, inputs)
    hit = load(key)
    if isinstance(hit, dict):
        try:
            return _decode_bound(hit)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError):
            pass  # a malformed entry: derive live and overwrite it
    b = compute()
    try:
        enc = _encode_bound(b)
    except Unencodable:
        return b
    save(key, enc)
    return b


def compile_expr(expr, symbols, backend: str):
    """A Python function of the values of ``symbols`` (SymPy symbols, in order) computing ``expr``:
    :func:`softhard.bounds.fastfn.compile_tree` of its tree.  ``backend``: ``"mpmath"`` or
    ``"float"``.  Raises :class:`~softhard.bounds.fastfn.Unsupported` for a head or a free symbol it
    does not handle (the caller falls back to ``sympy.lambdify``)."""
    try:
        tree = encode_expr(expr)
    except Unencodable as e:
        raise Unsupported(str(e)) from None
    return compile_tree(tree, [s.name for s in symbols], backend)
