"""Numeric functions of a bound without SymPy's printers (ISSUE 16).

``sympy.lambdify`` costs 50–130 ms per expression (its code printers), which a certify paid a
dozen times.  :func:`compile_tree` writes the same straight-line Python from the expression tree
of :func:`softhard.bounds.cache.encode_expr` (this module imports no SymPy: a tree read from the
derivation cache is evaluated without it; :func:`softhard.bounds.cache.compile_expr` is the same for a
SymPy expression) (Add, Mul, Pow, exp, log, Max, Min, Abs, floor,
ceiling; symbols; exact integers and rationals; floats) and compiles it once, in well under a
millisecond.  Two backends: ``"mpmath"`` (rationals as ``mpf(p)/mpf(q)`` evaluated at the
caller's working precision, as lambdify's mpmath printer writes them) and ``"float"`` (NumPy
float64 scalars: overflow gives ``inf``/``nan``, never an exception).  An expression with any
other head raises :class:`Unsupported`; callers then use ``lambdify`` (same values).

Numeric only: for reporting and for choosing values that a proof then checks, never a proof.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np


class Unsupported(Exception):
    """The expression has a head :func:`compile_expr` does not write."""


_FUNCS = {
    "mpmath": {"exp": "mpmath.exp", "log": "mpmath.log", "Abs": "abs", "floor": "mpmath.floor",
               "ceiling": "mpmath.ceil", "Max": "max", "Min": "min"},
    "float": {"exp": "np.exp", "log": "np.log", "Abs": "abs", "floor": "np.floor", "ceiling": "np.ceil",
              "Max": "max", "Min": "min"},
}


def _src(t: list, names: dict[str, str], backend: str) -> str:
    head = t[0]
    if head == "Symbol":
        if t[1] not in names:
            raise Unsupported(f"free symbol {t[1]}")
        return names[t[1]]
    if head == "Integer":
        return f"mpmath.mpf({t[1]})" if backend == "mpmath" else repr(float(int(t[1])))
    if head == "Rational":
        return (f"(mpmath.mpf({t[1]}) / mpmath.mpf({t[2]}))" if backend == "mpmath"
                else f"({float(int(t[1]))!r} / {float(int(t[2]))!r})")
    if head == "const" and t[1] in ("pi", "E"):
        if backend == "mpmath":
            return "mpmath.pi" if t[1] == "pi" else "mpmath.e"
        return repr(math.pi if t[1] == "pi" else math.e)
    args = [_src(a, names, backend) for a in t[1:]]
    if head == "Add":
        return "(" + " + ".join(args) + ")"
    if head == "Mul":
        return "(" + " * ".join(args) + ")"
    if head == "Pow":
        return f"({args[0]} ** {args[1]})"
    if head in _FUNCS[backend]:
        return f"{_FUNCS[backend][head]}({', '.join(args)})"
    raise Unsupported(head)


def compile_tree(tree: list, names: list[str], backend: str):
    """A Python function of the values of the symbols named ``names`` (in order) computing the
    expression tree ``tree`` (:func:`softhard.bounds.cache.encode_expr`'s format; no SymPy needed).

    ``backend``: ``"mpmath"`` (at the caller's working precision) or ``"float"`` (NumPy float64).
    Raises :class:`Unsupported` for a head or a free symbol it does not handle.  Numeric only
    (module docstring)."""
    args = {name: f"_a{i}" for i, name in enumerate(names)}
    body = _src(tree, args, backend)
    src = f"def _f({', '.join(args.values())}):\n    return {body}\n"
    ns = {"mpmath": mpmath, "np": np}
    exec(compile(src, "<softhard.bounds.fastfn>", "exec"), ns)  # noqa: S102 - our own generated code
    f = ns["_f"]
    f.source = src
    return f
