"""Second, independent check of a claim with ball arithmetic (python-flint ``arb``).

The claim ``∀ integer n ∈ [lo, hi]: f(n) ≤ η`` is checked by evaluating ``f`` on boxes of ``n``
directly (no solver, no enclosure variables), subdividing until every box's upper bound is below
η (proved) or a single integer's lower bound is above η (refuted).  Comparisons are three-valued
(SOLVER-NOTES.md): only a True ``upper < η`` proves, only a True ``lower > η`` refutes.

This guards against an encoding error in :mod:`softhard.solver.encode`: the two methods share no
code beyond SymPy's expression tree.  The ball evaluation itself is :mod:`softhard.solver.balls`,
on the expression's tree (:func:`softhard.bounds.cache.encode_expr`), which needs no SymPy: this
module is its SymPy face.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

import flint
import sympy as sp

from ..bounds.cache import Unencodable, encode_expr
from ..constructions.errors import SolverError
from .balls import ArbResult, arb_row, compile_tree, exceeds_row, tree_arb_check, tree_exceeds, tree_value_at
from .oracle import note_answer

__all__ = ["ArbResult", "arb_check", "arb_eval", "exceeds", "tree_of", "value_at"]


@lru_cache(maxsize=512)
def tree_of(expr: sp.Expr) -> list:
    """The expression's tree (:func:`~softhard.bounds.cache.encode_expr`); raises
    :class:`SolverError` for an expression outside the trees (a function ball arithmetic cannot
    evaluate here: ``sin``, a ``Dummy`` symbol)."""
    try:
        return encode_expr(expr)
    except Unencodable:
        raise SolverError(f"arb check cannot evaluate {type(expr).__name__} term {expr}") from None


def arb_eval(expr: sp.Expr, nval: flint.arb) -> flint.arb:
    """Ball enclosure of ``expr`` with ``n`` in the ball ``nval`` (rigorous, current flint precision):
    :func:`softhard.solver.balls.compile_tree` of its tree — one ball operation per node, in the
    tree's order, constants built at evaluation time.  Raises :class:`SolverError` for a float
    constant or a function it cannot evaluate."""
    return compile_tree(tree_of(expr))(nval)


def exceeds(expr: sp.Expr, tol: Fraction, nv: int, prec: int = 256) -> tuple[bool, str]:
    """Rigorously ``expr(nv) > tol``?  (:func:`softhard.solver.balls.tree_exceeds`: both balls at
    ``prec`` bits.)  Returns the verdict and the value's ball as text (20 digits)."""
    tree = tree_of(expr)
    out = tree_exceeds(tree, tol, nv, prec=prec)
    note_answer(exceeds_row(tree, tol, nv, prec, out))
    return out


def value_at(expr: sp.Expr, nv: int, prec: int = 256) -> flint.arb:
    """Rigorous ball for ``expr(nv)`` at an integer ``nv``."""
    return tree_value_at(tree_of(expr), nv, prec=prec)


def arb_check(expr: sp.Expr, eta: Fraction, lo: int, hi: int | None, *, prec: int = 128,
              max_boxes: int = 20000, deadline_s: float = 20.0) -> ArbResult:
    """Check ``∀ integer n ∈ [lo, hi]: expr(n) ≤ eta`` by subdivision
    (:func:`softhard.solver.balls.tree_arb_check`; ``hi=None``: all n ≥ lo, checked up to 2^40 and
    the rest reported unknown unless the expression does not depend on n)."""
    tree = tree_of(expr)
    out = tree_arb_check(tree, eta, lo, hi, prec=prec, max_boxes=max_boxes, deadline_s=deadline_s)
    note_answer(arb_row(tree, eta, lo, hi, prec, max_boxes, out))
    return out
