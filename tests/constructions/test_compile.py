"""Compilation to the computation graph and the explicit transformers (issue 2 items 4–5)."""

from __future__ import annotations

import itertools
import json

import networkx as nx
import numpy as np
import pytest

from softhard.constructions.ast import subformulas
from softhard.constructions.compile import compile_formula, select_nodes
from softhard.constructions.engine import forward
from softhard.constructions.errors import FormulaError, ParameterError
from softhard.constructions.parse import parse_formula
from softhard.constructions.semantics import truth
from softhard.constructions.weights import build_transformer


def test_one_node_per_distinct_subformula():
    f = parse_formula("(Y a & Y a) | (a S Y a) | H !Y a")
    g = compile_formula(f, ["a", "b"])
    texts = [d["formula"] for _, d in g.nodes(data=True)]
    assert len(texts) == len(set(texts))
    ya = [v for v, d in g.nodes(data=True) if d["formula"] == "Y a"]
    assert len(ya) == 1  # shared subterm built once
    assert g.out_degree(ya[0]) >= 3  # read by &, S (value), and the key of H's inner P
    for sub in subformulas(f):
        if str(sub) in ("(Y a) & (Y a)",):  # x & x folds to x
            continue
        assert str(sub) in texts, str(sub)
    assert nx.is_directed_acyclic_graph(g)


def test_node_attributes():
    g = compile_formula(parse_formula("a S b & X c U a"), ["a", "b", "c"])
    sels = {g.nodes[v]["operator"]: g.nodes[v] for v in select_nodes(g)}
    s, u, x = sels["S"], sels["U"], sels["X"]
    assert s["mask"] == "strict_past" and s["tie"] == "rightmost" and s["rule"] == "UHA-rightmost"
    assert u["mask"] == "strict_future" and u["tie"] == "leftmost" and u["rule"] == "UHA-leftmost"
    assert x["key_const"] and not s["key_const"]
    assert g.nodes[s["key"]]["formula"] == "b | !a"  # key ψ ∨ ¬φ, value ψ (THEORY §4)
    assert g.nodes[s["value"]]["formula"] == "b"
    for v, d in g.nodes(data=True):
        for p in g.predecessors(v):
            assert g.nodes[p]["layer"] <= d["layer"]
            if d["kind"] == "attn":
                assert g.nodes[p]["layer"] < d["layer"]
    json.dumps(nx.node_link_data(g, edges="links"))  # plain data


@pytest.mark.parametrize("formula", [
    "Y a", "X b", "a S b", "a U b", "P (a & Y b)", "H (a -> Y b)", "F b & G !c", "!(a S (b U c))",
    "Y Y Y a", "(a -> b) U (c S a)", "true S a", "false U b", "a & !a", "X X (a | b)",
])
@pytest.mark.parametrize("regime", ["T", "U"])
def test_hard_transformer_equals_reference_semantics(formula, regime):
    f = parse_formula(formula)
    g = compile_formula(f, ["a", "b", "c"])
    m = build_transformer(g, regime)
    out = m.index(m.outputs[0])
    for n in range(1, 6):
        words = list(itertools.product("abc", repeat=n))
        x = forward(m, m.encode(words), mode="hard").x[:, 1:, out]
        want = np.array([truth(f, "".join(w)) for w in words], dtype=float)
        assert np.array_equal(x, want), (formula, n)


def test_bos_coordinates_are_zero():
    g = compile_formula(parse_formula("H (a -> Y b) | !F c"), ["a", "b", "c"])
    for regime in "TU":
        m = build_transformer(g, regime)
        tr = forward(m, m.encode([list("abcab")]), mode="hard", keep_residuals=True)
        for x in tr.residuals:
            row = x[0, 0]
            assert row[m.index("bos")] == 1 and np.count_nonzero(row) == 1


def test_runs_n_2000():
    f = parse_formula("(a S b) & H (a -> Y b) & X F a")
    g = compile_formula(f, ["a", "b"])
    rng = np.random.default_rng(0)
    w = "".join(rng.choice(list("ab"), size=2000))
    for regime, it in (("T", 2000 * 4 * np.log(4) * 1.01), ("U", np.log(4) * 1.01)):
        m = build_transformer(g, regime)
        tr = forward(m, m.encode([list(w)]), mode="soft", inv_tau=it)
        out = tr.x[0, 1:, m.index(m.outputs[0])]
        assert np.array_equal(out > 0.5, truth(f, w))
        assert all(t.path == "structured" for t in tr.heads.values())


def test_bad_parameters():
    g = compile_formula(parse_formula("Y a"), ["a", "b"])
    for kw in ({"beta": "1/2"}, {"beta": "0"}, {"eta": "1/2"}, {"eta": "-1"}, {"eta": "nan"}):
        with pytest.raises(ParameterError):
            build_transformer(g, "T", **kw)
    with pytest.raises(ParameterError):
        build_transformer(g, "Z")
    m = build_transformer(g, "T")
    for bad in (0, -1, float("nan"), float("inf"), "x"):
        with pytest.raises(ParameterError):
            forward(m, m.encode([["a"]]), mode="soft", inv_tau=bad)
    with pytest.raises(ParameterError):
        m.encode([["c"]])
    with pytest.raises(FormulaError):
        compile_formula(parse_formula("Y c"), ["a", "b"])
