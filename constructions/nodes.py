"""The computation graph's vocabulary: every graph, node and edge attribute, named once (issue 12).

All three input kinds produce a ``networkx.DiGraph`` in a :class:`~softhard.solver.pipeline.Construction`
— the formula compiler (:mod:`softhard.constructions.compile`), the composed bound of a model file
(:mod:`softhard.bounds.composed`) and of a compiled Tracr model (:mod:`softhard.bounds.tracr`) —
and certificates store it (``graph``, ``networkx.node_link_data``).  Like Tracr's
``compiler/nodes.py``, this module is the one place that says what each attribute means; a graph
uses no other names (``tests/constructions/test_nodes.py`` builds every example and checks).

Node ``kind`` is shared by all graphs: the transformer sublayer the node becomes.
"""

from __future__ import annotations

#: ``kind`` values: the transformer sublayer a node is realised by
KINDS = {
    "embed": "a coordinate of the embedding (a symbol, a constant, the positional encoding)",
    "attn": "an attention head (selection, uniform average, comparator head, parity head, a model's head)",
    "ffn": "a feed-forward sublayer (Boolean gates and clean-ups; a model's MLP)",
    "layernorm": "a layer normalisation (the ln comparator, THEORY §5 (a))",
    "residual-add": "the residual addition closing a layer (model graphs)",
    "output": "an output read from the residual stream (model graphs)",
}

#: ``op`` values of formula graphs (THEORY §3–§5)
OPS = {
    "atom": "the symbol at the position", "const": "a Boolean or numeric constant",
    "not": "negation", "and": "conjunction", "or": "disjunction", "implies": "implication",
    "select": "a temporal operator realised by one selection head (Y X S U P H F G)",
    "uniform": "a uniform average over the past (a count term #phi/(i+1))",
    "compare": "an integer linear comparison of count terms", "parity": "a parity test even()/odd()",
}

#: graph-level attributes (``g.graph``)
GRAPH_ATTRIBUTES = {
    "formula": "formula graphs: the formula the graph computes",
    "root": "formula graphs: the node holding the formula's truth value",
    "alphabet": "formula graphs: the symbols",
    "at": "formula graphs: where acceptance is judged (first/last position)",
    "layers": "formula graphs: number of transformer layers",
    "kind": "model/Tracr graphs: 'model' or 'tracr'",
    "name": "model/Tracr graphs: the model's name",
    "n_max": "model graphs: the length the gap premises cover",
    "premise": "Tracr graphs: which premise the bound rests on",
    "d": "model/Tracr graphs: residual width",
    "labels": "model/Tracr graphs: residual coordinate labels",
}

#: node attributes of every graph
COMMON = {
    "kind": "the sublayer (:data:`KINDS`)",
    "layer": "transformer layer index (0: embedding)",
    "mask": "attention mask of a head (past, strict-past, future, ...)",
    "rule": "attention rule of a head: AHA, UHA (or 'exact' for an exact MLP)",
}

#: node attributes of formula graphs (:mod:`softhard.constructions.compile`)
FORMULA = {
    "op": "the formula operator (:data:`OPS`)",
    "formula": "text of the subformula the node computes",
    "aux": "True for a helper node that is no subformula of the input",
    "step": "order of the node inside its layer",
    "symbol": "atom: the symbol",
    "value": "const: its value; select/uniform: the node whose value is read",
    "default": "select: the value when only BOS is attended",
    "direction": "select: past or future",
    "operator": "select: the temporal operator (Y X S U P H F G)",
    "key": "select: the node whose truth is the selection key",
    "key_const": "select: the key is 1 everywhere",
    "key_spacing": "select: proved minimum distance between two positions where the key is 1",
    "key_first": "select: proved first position (from the start; from the end for future) where the key can be 1",
    "attention": "select: how it is built, unique (UHA) or average (AHA over every key = 1 position, THEORY §4b)",
    "value_const": "select: the value is 1 everywhere (THEORY §4c)",
    "value_spacing": "select: proved minimum distance between two key = 1 positions whose values differ (THEORY §4c)",
    "average_ok": "select: the output does not depend on which maximal position is chosen (value = key: P, F)",
    "tie": "select: which maximal position UHA picks (rightmost/leftmost; all for an average-hard head)",
    "method": "compare: the comparator construction (ln, head, pe)",
    "terms": "compare: the count terms and coefficients",
    "const": "compare: the constant term",
    "bos": "compare/parity: the BOS weight term",
    "count": "parity: the count node tested",
}

#: node attributes of model and Tracr graphs (:mod:`softhard.bounds.composed`, :mod:`softhard.bounds.tracr`)
MODEL = {
    "error": "the node's composed error bound (SymPy text in n, tau)",
    "local": "the node's local error rule in terms of its inputs' errors",
    "head": "attn: the head's name",
    "gap": "attn: the minimum score gap (a premise)",
    "ties_max": "attn: most tied maxima in a row (a premise)",
    "tieless": "attn: every row uniform or with a unique maximum (a premise; the tie-free theta, THEORY §6)",
    "m_minus_1": "attn: largest number of competitors",
    "spread_max": "attn: largest value spread over attended positions",
    "tie_break": "attn: the UHA tie-break weight beta, if any",
    "written": "attn: coordinates the head writes and their error rule",
    "sigma": "attn: the head's score-error term",
    "theta": "attn: the head's leak term",
    "bos_competitor": "Tracr attn: the premise's case when BOS competes",
    "bos_in_argmax": "Tracr attn: the premise's case when BOS is a maximum",
    "groups": "ffn: number of independent unit groups",
    "type": "output: categorical or numerical",
    "coordinates": "output: the residual coordinates read",
    "at": "output: which position is read",
}

#: edge attributes
EDGE_ATTRIBUTES = {"role": "formula graphs: the parent's role for the child (arg, left, right, key, value, ...)"}

#: every node attribute name a graph may use
NODE_ATTRIBUTES = {**COMMON, **FORMULA, **MODEL}


def undeclared(g) -> list[str]:
    """Attribute names of ``g`` (graph, nodes, edges) not in this vocabulary, as ``where: name``."""
    out = [f"graph: {k}" for k in g.graph if k not in GRAPH_ATTRIBUTES]
    for v, a in g.nodes(data=True):
        out += [f"node {v!r}: {k}" for k in a if k not in NODE_ATTRIBUTES]
        if a.get("kind") not in KINDS:
            out.append(f"node {v!r}: kind {a.get('kind')!r}")
        if "op" in a and a["op"] not in OPS:
            out.append(f"node {v!r}: op {a['op']!r}")
    for u, v, a in g.edges(data=True):
        out += [f"edge {u!r}->{v!r}: {k}" for k in a if k not in EDGE_ATTRIBUTES]
    return out
