"""Average-hard selection heads (THEORY §4b) in the numeric engine: the right nodes are built
average-hard, the structured O(n) path agrees with the dense one, and the head's output on its
attaining input equals the closed form computed independently."""

from __future__ import annotations

import math

import numpy as np
import pytest

from softhard.constructions.compile import assign_attention, compile_formula
from softhard.constructions.engine import forward_pass
from softhard.constructions.errors import ParameterError
from softhard.constructions.parse import parse_formula
from softhard.constructions.weights import build_transformer


def model(text, regime="T", construction="auto"):
    g = compile_formula(parse_formula(text), "abc")
    assign_attention(g, regime, construction)
    return g, build_transformer(g, regime)


def test_which_nodes_are_average():
    g, _ = model("P a & Y b & (a S b) & F c & H a & G b")
    att = {v: g.nodes[v]["attention"] for v in g if g.nodes[v]["op"] == "select"}
    assert att == {"P a": "average", "Y b": "unique", "a S b": "unique", "F c": "average",
                   "P !a": "average", "F !b": "average"}
    assert all(g.nodes[v]["rule"] == "AHA" for v, a in att.items() if a == "average")
    g, _ = model("P a & Y b", construction="unique")
    assert g.nodes["P a"]["attention"] == "unique" and g.nodes["P a"]["rule"] == "UHA-rightmost"
    g, _ = model("P a", regime="U")
    assert g.nodes["P a"]["attention"] == "unique"
    with pytest.raises(ParameterError, match="needs regime T"):
        model("P a", regime="U", construction="average")


@pytest.mark.parametrize("text", ["P a", "F a", "H b", "G c", "P(b & P a)", "F(a & F b) | P c"])
def test_structured_equals_dense(text):
    _, m = model(text)
    rng = np.random.default_rng(3)
    words = [tuple(rng.choice(list("abc"), size=41)) for _ in range(12)] + [tuple("b" * 41), tuple("a" + "b" * 40)]
    tok = m.encode(words)
    for it in (2.0, 12.0):
        A = forward_pass(m, tok, soft=True, inv_tau=it, path="auto", chunk=None, keep_residuals=False, pair=False)[0]
        D = forward_pass(m, tok, soft=True, inv_tau=it, path="dense", chunk=None, keep_residuals=False, pair=False)[0]
        for k in A.heads:
            np.testing.assert_allclose(A.heads[k].soft, D.heads[k].soft, rtol=0, atol=1e-14)
            # (a later head reads an earlier head's soft output, equal to within rounding on both paths)
            np.testing.assert_allclose(A.heads[k].hard, D.heads[k].hard, rtol=0, atol=1e-14)
            np.testing.assert_allclose(A.heads[k].leak, D.heads[k].leak, rtol=1e-12, atol=1e-300)
        if it == 12.0:  # every key Boolean (every node within eta): every head takes the O(n) path
            assert all(tr.path == "structured" for tr in A.heads.values())


def test_output_on_the_attaining_word_is_the_closed_form():
    n, it = 200_000, 15.0
    _, m = model("P a")
    tr = forward_pass(m, m.encode([tuple("a" + "b" * (n - 1))]), soft=True, inv_tau=it, path="auto", chunk=None,
                      keep_residuals=False, pair=False)[0].heads["P a"]
    assert tr.path == "structured"
    x = math.exp(-it / 2)
    expected = 1 / (1 + x + (n - 2) * x * x)  # weight on the one position with b = 1, query n
    assert abs(tr.soft[0, n, 0] - expected) < 1e-13
    assert tr.hard[0, n, 0] == 1.0
    assert tr.soft[0, 1, 0] == 0.0  # query 1 sees BOS only (value 0)
