"""The registry of bound rules: for each graph op, the function that gives the
:class:`~softhard.bounds.core.Bound` of a node with that op.

A rule is ``rule(graph, node_id, regime) -> Bound | None`` (None: the node is exact, no claim).
:mod:`softhard.bounds.derive` registers the selection rule and imports
:mod:`softhard.bounds.counting`, which registers the counting rules;
:func:`softhard.bounds.derive.derive` looks every node's op up here.
"""

from __future__ import annotations

#: ``op -> rule(graph, node_id, regime) -> Bound | None`` (None: the node is exact, no claim)
BOUND_RULES: dict = {}


def bound_rule(op: str):
    """Register the function that gives the :class:`Bound` of attention nodes with ``op``."""
    def deco(fn):
        BOUND_RULES[op] = fn
        return fn
    return deco
