"""Compile a formula to its computation graph (a ``networkx.DiGraph``).

One node per distinct subformula (shared subterms appear once), plus auxiliary nodes for what the
construction needs but the formula does not name (the key ``ψ ∨ ¬φ`` of a since/until, the inner
``P ¬φ`` of ``H φ``).  Edges point from a node to the nodes that read it (data dependencies).

Node attributes (plain data, so ``networkx.node_link_data`` serialises the graph):

* ``op``: ``atom`` | ``const`` | ``not`` | ``and`` | ``or`` | ``implies`` | ``select``;
* ``formula``: canonical text of the (sub)formula the node computes; ``aux``: True if it is not a
  subformula of the input;
* ``kind``: ``embed`` (read from the embedding), ``ffn`` (an exact ReLU gate), ``attn``
  (an attention head followed by the clean-up ``round_η``);
* ``layer``: the block the node is computed in (attention depth; embedding = 0) and ``step``: its
  position inside the block's MLP sequence (0 = embedding or attention sublayer);
* for ``select`` (THEORY §4: "the last (or first) j in the mask with b(j)=1; return v(j), or the
  default if none"): ``operator`` (Y X S U P F), ``direction`` (past|future), ``mask``
  (strict_past|strict_future), ``tie`` (rightmost for past, leftmost for future: the nearest),
  ``rule`` (UHA-rightmost|UHA-leftmost), ``key`` and ``value`` (node ids of b and v), ``key_const``
  (True when b ≡ 1), ``default`` (0, supplied by BOS);
* for ``atom``: ``symbol``; for ``const``: ``value`` (0 or 1).

Graph attributes: ``formula``, ``root`` (node id of the whole formula), ``alphabet``, ``at``
(where acceptance is judged), ``layers`` (number of blocks after the embedding).
"""

from __future__ import annotations

from typing import Sequence

import networkx as nx

from .ast import Atom, Binary, Compare, Const, Formula, Unary, acceptance_position
from .errors import FormulaError

_PAST = {"Y": "past", "P": "past", "S": "past", "X": "future", "F": "future", "U": "future"}


class _Builder:
    def __init__(self, alphabet: Sequence[str]):
        self.g = nx.DiGraph()
        self.alphabet = tuple(alphabet)
        self.by_formula: dict[str, str] = {}

    # -- node creation -------------------------------------------------------------------
    def _add(self, formula: str, op: str, parents: dict[str, str], aux: bool, **attrs) -> str:
        if formula in self.by_formula:
            nid = self.by_formula[formula]
            if not aux:
                self.g.nodes[nid]["aux"] = False
            return nid
        nid = formula
        self.by_formula[formula] = nid
        kind = {"atom": "embed", "const": "embed", "select": "attn"}.get(op, "ffn")
        layer, step = self._place(op, list(parents.values()))
        self.g.add_node(nid, op=op, formula=formula, aux=aux, kind=kind, layer=layer, step=step, **attrs)
        for role, p in parents.items():
            self.g.add_edge(p, nid, role=role)
        return nid

    def _ready(self, nid: str) -> int:
        a = self.g.nodes[nid]
        return 1 if a["op"] == "select" else a["step"]

    def _place(self, op: str, parents: list[str]) -> tuple[int, int]:
        if op in ("atom", "const"):
            return 0, 0
        layers = [self.g.nodes[p]["layer"] for p in parents]
        if op == "select":
            return 1 + max(layers), 0
        layer = max(layers)
        step = 1 + max([self._ready(p) for p in parents if self.g.nodes[p]["layer"] == layer], default=0)
        return layer, step

    def const(self, value: bool) -> str:
        return self._add("true" if value else "false", "const", {}, aux=True, value=int(value))

    def is_const(self, nid: str):
        a = self.g.nodes[nid]
        return a["value"] if a["op"] == "const" else None

    # -- gates with constant folding -------------------------------------------------------
    def gate(self, op: str, formula: str, args: list[str], aux: bool) -> str:
        cs = [self.is_const(a) for a in args]
        if op == "not" and cs[0] is not None:
            return self.const(not cs[0])
        if op == "not" and self.g.nodes[args[0]]["op"] == "not":  # ¬¬x = x
            (inner,) = [u for u, _ in self.g.in_edges(args[0])]
            return inner
        if op in ("and", "or", "implies") and any(c is not None for c in cs):
            x, y = args
            cx, cy = cs
            if op == "and":
                if 0 in (cx, cy):
                    return self.const(False)
                return y if cx == 1 else x
            if op == "or":
                if 1 in (cx, cy):
                    return self.const(True)
                return y if cx == 0 else x
            # implies
            if cx == 0 or cy == 1:
                return self.const(True)
            if cx == 1:
                return y
            return self.gate("not", formula, [x], aux=aux)  # x -> false  ==  !x
        roles = ("arg",) if op == "not" else ("left", "right")
        if op != "not" and args[0] == args[1]:
            if op in ("and", "or"):
                return args[0]
            return self.const(True)
        return self._add(formula, op, dict(zip(roles, args)), aux=aux)

    def select(self, operator: str, formula: str, key: str, value: str, aux: bool) -> str:
        direction = _PAST[operator]
        cv = self.is_const(value)
        ck = self.is_const(key)
        if cv == 0 or ck == 0:
            return self.const(False)  # value ≡ 0 or no position ever selected: default 0
        return self._add(
            formula, "select", {"key": key, "value": value}, aux=aux,
            operator=operator, direction=direction,
            mask="strict_past" if direction == "past" else "strict_future",
            tie="rightmost" if direction == "past" else "leftmost",
            rule="UHA-rightmost" if direction == "past" else "UHA-leftmost",
            key=key, value=value, key_const=(ck == 1), default=0)

    # -- formulas -----------------------------------------------------------------------------
    def build(self, f: Formula, aux: bool = False) -> str:
        text = str(f)
        if text in self.by_formula:
            nid = self.by_formula[text]
            if not aux:
                self.g.nodes[nid]["aux"] = False
            return nid
        if isinstance(f, Atom):
            if f.symbol not in self.alphabet:
                raise FormulaError(f"symbol {f.symbol!r} is not in the alphabet {list(self.alphabet)}")
            return self._add(text, "atom", {}, aux=aux, symbol=f.symbol)
        if isinstance(f, Const):
            nid = self.const(f.value)
            if not aux:
                self.g.nodes[nid]["aux"] = False
            return nid
        if isinstance(f, Compare):
            raise FormulaError(
                f"count comparison {text!r}: the transformer construction for counting is not available "
                "in this version (THEORY §5)")
        if isinstance(f, Unary):
            a = self.build(f.arg)
            op = f.op
            if op == "!":
                return self.gate("not", text, [a], aux)
            if op in ("Y", "X"):
                return self.select(op, text, self.const(True), a, aux)
            if op in ("P", "F"):
                return self.select(op, text, a, a, aux)
            # H φ = ¬P¬φ, G φ = ¬F¬φ (the inner P¬φ / F¬φ is an auxiliary node)
            inner = self.build(Unary("P" if op == "H" else "F", Unary("!", f.arg)), aux=True)
            return self.gate("not", text, [inner], aux)
        if isinstance(f, Binary):
            x = self.build(f.left)
            y = self.build(f.right)
            if f.op in ("&", "|", "->"):
                return self.gate({"&": "and", "|": "or", "->": "implies"}[f.op], text, [x, y], aux)
            # φ S ψ / φ U ψ: key b = ψ ∨ ¬φ, value v = ψ (THEORY §4)
            key = self.build(Binary("|", f.right, Unary("!", f.left)), aux=True)
            return self.select(f.op, text, key, y, aux)
        raise FormulaError(f"cannot compile formula node {f!r}")


def compile_formula(formula: Formula, alphabet: Sequence[str], at: str | None = None) -> nx.DiGraph:
    """Compile ``formula`` over ``alphabet`` to its computation graph (see module docstring).

    ``at`` ("first"/"last") is where acceptance is judged; default from
    :func:`softhard.constructions.ast.acceptance_position`.

    Raises :class:`FormulaError` for a symbol outside the alphabet or an unsupported operator.
    Implements THEORY §3 (Boolean gates) and §4 (one selection per temporal operator).
    """
    if not alphabet:
        raise FormulaError("the alphabet is empty")
    b = _Builder(alphabet)
    for s in alphabet:  # every symbol gets a coordinate, even if unused
        b._add(str(Atom(s)), "atom", {}, aux=True, symbol=s)
    root = b.build(formula)
    g = b.g
    g.graph.update(
        formula=str(formula), root=root, alphabet=list(alphabet),
        at=at or acceptance_position(formula),
        layers=max((d["layer"] for _, d in g.nodes(data=True)), default=0))
    return g


def select_nodes(g: nx.DiGraph) -> list[str]:
    """Ids of the attention (selection) nodes in topological order."""
    return [v for v in nx.topological_sort(g) if g.nodes[v]["op"] == "select"]
