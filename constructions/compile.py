"""Compile a formula to its computation graph (a ``networkx.DiGraph``).

One node per distinct subformula (shared subterms appear once), plus auxiliary nodes for what the
construction needs but the formula does not name (the key ``ψ ∨ ¬φ`` of a since/until, the inner
``P ¬φ`` of ``H φ``).  Edges point from a node to the nodes that read it (data dependencies).

Node attributes (plain data, so ``networkx.node_link_data`` serialises the graph):

* ``op``: ``atom`` | ``const`` | ``not`` | ``and`` | ``or`` | ``implies`` | ``select`` | ``uniform``
  | ``compare`` | ``parity``;
* ``formula``: canonical text of the (sub)formula the node computes; ``aux``: True if it is not a
  subformula of the input;
* ``kind``: ``embed`` (read from the embedding), ``ffn`` (an exact ReLU gate), ``attn``
  (an attention head, followed by the clean-up ``round_η`` except for ``uniform``),
  ``layernorm`` (a layer normalisation followed by a clean-up: the ``ln`` comparator);
* ``layer``: the block the node is computed in (attention depth; embedding = 0) and ``step``: its
  position inside the block's MLP sequence (0 = embedding or attention sublayer);
* for ``select`` (THEORY §4: "the last (or first) j in the mask with b(j)=1; return v(j), or the
  default if none"): ``operator`` (Y X S U P F), ``direction`` (past|future), ``mask``
  (strict_past|strict_future), ``tie`` (rightmost for past, leftmost for future: the nearest),
  ``rule`` (UHA-rightmost|UHA-leftmost), ``key`` and ``value`` (node ids of b and v), ``key_const``
  (True when b ≡ 1), ``key_spacing`` (the least distance between two positions with b = 1, proved
  by enumeration for local keys, else 1: :mod:`softhard.constructions.spacing`), ``key_first``
  (the first position, counted from the start for past and from the end for future selections,
  where b can be 1: :func:`~softhard.constructions.spacing.key_first`), ``value_const`` (True when
  v ≡ 1), ``value_spacing`` (the least distance between two positions with b = 1 whose values v
  differ, proved by enumeration for local key and value, else 1:
  :func:`~softhard.constructions.spacing.value_spacing`; THEORY §4c), ``default`` (0,
  supplied by BOS); after :func:`assign_attention`: ``attention`` (``unique`` | ``average``) and
  ``average_ok`` (True when the output does not depend on which maximal position is chosen: key =
  value, i.e. P and F; THEORY §4b);
* for ``atom``: ``symbol``; for ``const``: ``value`` (0 or 1);
* counting (THEORY §5; the constructions are in :mod:`softhard.constructions.counting`):

  - ``uniform``: uniform attention over ``j ≤ i`` and BOS; ``value`` is the node id of a Boolean
    φ (the node's coordinate is then the proportion ``C_φ(i)/(i+1)``) or ``None`` (the BOS
    indicator: ``1/(i+1)``); ``mask`` past, ``rule`` AHA.  Exact in exact arithmetic.
  - ``compare``: ``[Σ_k a_k C_k(i) + c ≥ 0]``; ``terms`` is a list of ``[uniform node id, a_k]``
    (integers), ``const`` the integer ``c``, ``bos`` the ``1/(i+1)`` node; the comparator reads
    ``F(i) = Σ_k a_k C_k/(i+1) + (c + ½)/(i+1)``, never 0, with ``|F| ≥ 1/(2(i+1))``.
    ``method`` is ``ln`` (kind ``layernorm``), ``head`` or ``pe`` (kind ``attn``; ``mask`` past,
    ``rule`` AHA).  Every other comparison (``> < <= = !=``) is compiled to these and gates.
  - ``parity``: ``[C_φ(i) even]``; ``count`` is the uniform node of φ, ``bos`` the ``1/(i+1)``
    node; ``mask`` past, ``rule`` AHA.  ``even(L)`` / ``odd(L)`` of a linear combination are
    compiled to one such head per odd-coefficient term and XOR gates.

Graph attributes: ``formula``, ``root`` (node id of the whole formula), ``alphabet``, ``at``
(where acceptance is judged), ``layers`` (number of blocks after the embedding).
"""

from __future__ import annotations

from typing import Sequence

import networkx as nx

from .ast import Atom, Binary, Compare, Const, Formula, Linear, Parity, Unary, acceptance_position
from .errors import FormulaError, ParameterError
from .spacing import key_first, key_spacing, value_spacing
from .parameters import check_comparator, check_comparator_weights, check_construction

_PAST = {"Y": "past", "P": "past", "S": "past", "X": "future", "F": "future", "U": "future"}

def _negate(f: Formula) -> Formula:
    """``¬f``, with a double negation cancelled (``¬¬g = g``: same semantics, one node fewer)."""
    return f.arg if isinstance(f, Unary) and f.op == "!" else Unary("!", f)

class _Builder:
    def __init__(self, alphabet: Sequence[str], comparator: str = "head"):
        self.g = nx.DiGraph()
        self.alphabet = tuple(alphabet)
        self.by_formula: dict[str, str] = {}
        self.comparator = comparator
        self.uniform_of: dict[str | None, str] = {}  # value node id (None: BOS) -> uniform node id

    # -- node creation -------------------------------------------------------------------
    def _add(self, formula: str, op: str, parents: dict[str, str], aux: bool, kind: str | None = None,
             **attrs) -> str:
        if formula in self.by_formula:
            nid = self.by_formula[formula]
            if not aux:
                self.g.nodes[nid]["aux"] = False
            return nid
        nid = formula
        self.by_formula[formula] = nid
        kind = kind or {"atom": "embed", "const": "embed", "select": "attn"}.get(op, "ffn")
        layer, step = self._place(kind, list(parents.values()))
        self.g.add_node(nid, op=op, formula=formula, aux=aux, kind=kind, layer=layer, step=step, **attrs)
        for role, p in parents.items():
            self.g.add_edge(p, nid, role=role)
        return nid

    def _ready(self, nid: str) -> int:
        """MLP step after which the node's coordinate holds its value (attention nodes: their
        clean-up at step 1, except uniform averages, written by the attention itself)."""
        a = self.g.nodes[nid]
        return 1 if a["kind"] == "attn" and a["op"] != "uniform" else a["step"]

    def _place(self, kind: str, parents: list[str]) -> tuple[int, int]:
        if kind == "embed":
            return 0, 0
        layers = [self.g.nodes[p]["layer"] for p in parents]
        if kind == "attn":
            return 1 + max(layers, default=0), 0
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

    def select(self, operator: str, formula: str, key: str, value: str, aux: bool,
               key_formula: Formula | None = None, value_formula: Formula | None = None) -> str:
        direction = _PAST[operator]
        cv = self.is_const(value)
        ck = self.is_const(key)
        if cv == 0 or ck == 0:
            return self.const(False)  # value ≡ 0 or no position ever selected: default 0
        # the least distance between two key = 1 positions, proved by enumeration (1: general case)
        spacing = 1 if ck == 1 or key_formula is None else key_spacing(key_formula, self.alphabet)
        # the first position (from the start, or the end for a future selection) where b can be 1
        first = 1 if ck == 1 or key_formula is None else key_first(key_formula, self.alphabet, direction)
        # the least distance between two key = 1 positions whose values differ (THEORY §4c); the value
        # is the key for P/F (never differ); 1: general case
        kf = Const(True) if ck == 1 else key_formula
        vspacing = (1 if kf is None or value_formula is None or cv == 1 or key == value
                    else max(spacing, value_spacing(kf, value_formula, self.alphabet)))
        return self._add(
            formula, "select", {"key": key, "value": value}, aux=aux,
            operator=operator, direction=direction,
            mask="strict_past" if direction == "past" else "strict_future",
            tie="rightmost" if direction == "past" else "leftmost",
            rule="UHA-rightmost" if direction == "past" else "UHA-leftmost",
            key=key, value=value, key_const=(ck == 1), key_spacing=spacing, key_first=first, default=0,
            value_const=(cv == 1), value_spacing=vspacing)

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
            return self._alias(text, self.comparison(f, text), aux)
        if isinstance(f, Parity):
            return self._alias(text, self.parity(f, text), aux)
        if isinstance(f, Unary):
            a = self.build(f.arg)
            op = f.op
            if op == "!":
                return self.gate("not", text, [a], aux)
            if op in ("Y", "X"):
                return self.select(op, text, self.const(True), a, aux, value_formula=f.arg)
            if op in ("P", "F"):
                return self.select(op, text, a, a, aux, key_formula=f.arg)
            # H φ = ¬P¬φ, G φ = ¬F¬φ (the inner P¬φ / F¬φ is an auxiliary node)
            inner = self.build(Unary("P" if op == "H" else "F", _negate(f.arg)), aux=True)
            return self.gate("not", text, [inner], aux)
        if isinstance(f, Binary):
            x = self.build(f.left)
            y = self.build(f.right)
            if f.op in ("&", "|", "->"):
                return self.gate({"&": "and", "|": "or", "->": "implies"}[f.op], text, [x, y], aux)
            # φ S ψ / φ U ψ: key b = ψ ∨ ¬φ, value v = ψ (THEORY §4)
            key_f = Binary("|", f.right, _negate(f.left))
            key = self.build(key_f, aux=True)
            return self.select(f.op, text, key, y, aux, key_formula=key_f, value_formula=f.right)
        raise FormulaError(f"cannot compile formula node {f!r}")

    # -- counting (THEORY §5) ---------------------------------------------------------------
    def _alias(self, text: str, nid: str, aux: bool) -> str:
        """Let the formula text ``text`` name the node ``nid`` (a comparison compiled to a
        canonical comparator node or gates)."""
        self.by_formula.setdefault(text, nid)
        if not aux and self.g.nodes[nid]["op"] != "const":
            self.g.nodes[nid]["aux"] = False
        return nid

    def uniform(self, value: str | None, term: Formula | None) -> str:
        """The uniform average of the Boolean node ``value`` (``C/(i+1)``), or with ``value=None``
        of the BOS indicator (``1/(i+1)``)."""
        if value in self.uniform_of:
            return self.uniform_of[value]
        if value is None:
            nid = self._add("1/(i+1)", "uniform", {}, aux=True, kind="attn", value=None, mask="past", rule="AHA")
        else:
            nid = self._add(f"{Linear(((term, 1),), 0)}/(i+1)", "uniform", {"value": value}, aux=True,
                            kind="attn", value=value, mask="past", rule="AHA")
        self.uniform_of[value] = nid
        return nid

    def _terms(self, terms: dict[Formula, int]) -> dict[str, tuple[int, Formula]]:
        """Count terms by graph node (formulas compiling to the same node are merged; ``#false``
        terms, which are 0, are dropped): ``{node id: (coefficient, a formula for its text)}``."""
        out: dict[str, tuple[int, Formula]] = {}
        for f, c in terms.items():
            nid = self.build(f)
            if self.is_const(nid) == 0:
                continue
            c0, f0 = out.get(nid, (0, f))
            out[nid] = (c0 + c, f0)
        return {k: v for k, v in out.items() if v[0] != 0}

    def geq(self, terms: dict[Formula, int], const: int) -> str:
        """Node of ``[Σ coeff·#φ + const ≥ 0]`` (THEORY §5): a comparator on the uniform averages
        (folded to a constant when the signs decide it: counts are ≥ 0)."""
        merged = self._terms(terms)
        coeffs = [c for c, _ in merged.values()]
        if all(c >= 0 for c in coeffs) and const >= 0:  # counts are >= 0: always true
            return self.const(True)
        if all(c <= 0 for c in coeffs) and const < 0:  # always false
            return self.const(False)
        text = str(Compare(">=", Linear(tuple((f, c) for c, f in merged.values()), const), Linear((), 0)))
        if text in self.by_formula:
            return self.by_formula[text]
        # refused here, before anything is analysed (a key enumeration over such a node took 20 s first)
        check_comparator_weights(text, [(str(Linear(((f, 1),), 0)), c) for c, f in merged.values()], const)
        us = [(self.uniform(nid, f), c) for nid, (c, f) in merged.items()]
        bos = self.uniform(None, None)
        parents = {f"term{k}": u for k, (u, _) in enumerate(us)}
        parents["bos"] = bos
        method = self.comparator
        return self._add(text, "compare", parents, aux=True, kind="layernorm" if method == "ln" else "attn",
                         method=method, terms=[[u, c] for u, c in us], const=const, bos=bos,
                         mask="past", rule="AHA")

    def comparison(self, f: Compare, text: str) -> str:
        """``L1 op L2`` as ``[D ≥ 0]`` nodes with ``D = L1 − L2`` (integers: ``D > 0`` is
        ``D − 1 ≥ 0``), a conjunction for ``=`` and its negation for ``!=``."""
        d: dict[Formula, int] = {}
        for g_, c in f.lhs.terms:
            d[g_] = d.get(g_, 0) + c
        for g_, c in f.rhs.terms:
            d[g_] = d.get(g_, 0) - c
        k = f.lhs.const - f.rhs.const
        neg = {g_: -c for g_, c in d.items()}
        if f.op == ">=":
            return self.geq(d, k)
        if f.op == ">":
            return self.geq(d, k - 1)
        if f.op == "<=":
            return self.geq(neg, -k)
        if f.op == "<":
            return self.geq(neg, -k - 1)
        eq_text = text if f.op == "=" else str(Compare("=", f.lhs, f.rhs))
        eq = self.gate("and", eq_text, [self.geq(d, k), self.geq(neg, -k)], aux=f.op != "=")
        if f.op == "=":
            return eq
        return self.gate("not", text, [eq], aux=False)

    def parity(self, f: Parity, text: str) -> str:
        """``even(L)`` / ``odd(L)``: one parity head ``[C_φ even]`` per odd-coefficient term of ``L``,
        combined with XOR gates (``x ⊕ y = (x ∨ y) ∧ ¬(x ∧ y)``) and the parity of the constant."""
        terms = {g_: c for g_, c in f.arg.terms}
        if f.even and len(terms) == 1 and f.arg.const == 0 and next(iter(terms.values())) == 1:
            (phi,) = terms
            nid = self.build(phi)
            if self.is_const(nid) == 0:
                return self.const(True)  # C ≡ 0
            cnt = self.uniform(nid, phi)
            bos = self.uniform(None, None)
            return self._add(text, "parity", {"count": cnt, "bos": bos}, aux=True, kind="attn", count=cnt, bos=bos,
                             mask="past", rule="AHA")
        merged = self._terms(terms)
        odd_terms = [g_ for c, g_ in merged.values() if c % 2]
        acc: Formula | None = None
        for g_ in odd_terms:
            odd_g = Unary("!", Parity(Linear(((g_, 1),), 0), True))
            acc = odd_g if acc is None else Binary("&", Binary("|", acc, odd_g), Unary("!", Binary("&", acc, odd_g)))
        if acc is None:
            acc = Const(False)
        if f.arg.const % 2:
            acc = Unary("!", acc)
        if f.even:
            acc = Unary("!", acc)
        return self.build(acc, aux=True)


def compile_formula(formula: Formula, alphabet: Sequence[str], at: str | None = None, *,
                    comparator: str = "head") -> nx.DiGraph:
    """Compile ``formula`` over ``alphabet`` to its computation graph (see module docstring).

    ``at`` ("first"/"last") is where acceptance is judged; default from
    :func:`softhard.constructions.ast.acceptance_position`.  ``comparator`` is the method used for
    count comparisons: ``ln`` (layer normalisation), ``head`` (temperature-scaled comparator head)
    or ``pe`` (unbounded-PE comparator head); see :mod:`softhard.constructions.counting`.

    Raises :class:`FormulaError` for a symbol outside the alphabet or an unsupported operator, and
    :class:`ParameterError` for an unknown comparator.
    Implements THEORY §3 (Boolean gates), §4 (one selection per temporal operator) and §5 (counting).
    """
    if not alphabet:
        raise FormulaError("the alphabet is empty")
    check_comparator(comparator)
    b = _Builder(alphabet, comparator)
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


def cleaned_nodes(g: nx.DiGraph) -> list[str]:
    """Ids of the nodes whose raw output is cleaned up by ``round_η`` into the node's coordinate
    (selections, comparators, parity heads), in topological order."""
    return [v for v in nx.topological_sort(g) if g.nodes[v]["op"] in ("select", "compare", "parity")]


def average_eligible(g: nx.DiGraph, v: str) -> bool:
    """True when selection ``v``'s output does not depend on which maximal position is chosen: its
    value is its key (``P φ``, ``F φ``: the output is 1 iff some position in the mask has b = 1),
    so an average-hard head over every such position computes it (THEORY §4b)."""
    a = g.nodes[v]
    return a["op"] == "select" and not a["key_const"] and a["key"] == a["value"]


def assign_attention(g: nx.DiGraph, regime: str, construction: str | None = "auto") -> dict[str, str]:
    """Choose per selection node of ``g`` (in place) how it is built: ``unique`` (UHA, THEORY §4)
    or ``average`` (AHA over every position with b = 1, score ``b(j)``, BOS ``1/2``, no position
    term; THEORY §4b).  ``construction``: ``auto`` (default, ``None`` too) | ``unique`` | ``average``.

    ``auto`` picks ``average`` for every eligible node (:func:`average_eligible`) in regime T: its
    output-error bound is below the unique construction's for every n ≥ 2, τ and β (THEORY §4b), so
    it needs the smaller certified 1/τ; in regimes U/P (one τ for every n) the unique construction
    is kept (an average-hard head without position term needs 1/τ = Θ(log n)).  ``average`` asks for
    it on every eligible node (regime T only).  Sets node attributes ``attention``, ``average_ok``,
    and for average nodes ``rule = "AHA"``, ``tie = "all"``.  Returns ``{node: attention}``.

    Raises :class:`ParameterError` for an unknown method, or ``average`` outside regime T.
    """
    method = check_construction(construction or "auto")
    if method == "average" and regime != "T":
        raise ParameterError(f"construction 'average' needs regime T (bounded PE, tau shrinking with n); regime "
                             f"{regime} keeps one tau for every n, which only the unique construction achieves "
                             f"(THEORY §4b)")
    out = {}
    for v in select_nodes(g):
        a = g.nodes[v]
        ok = average_eligible(g, v)
        avg = ok and regime == "T" and method in ("auto", "average")
        a["average_ok"] = ok
        a["attention"] = "average" if avg else "unique"
        if avg:
            a["rule"], a["tie"] = "AHA", "all"
        out[v] = a["attention"]
    return out
