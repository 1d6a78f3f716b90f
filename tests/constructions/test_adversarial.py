"""Head-level key patterns (constructions/adversarial.py): the shared base stream and the leak a
head shows on a pattern, against the dense attention path on a stream built from scratch."""

from __future__ import annotations

import numpy as np
import pytest

from softhard.constructions import adversarial as A
from softhard.constructions.compile import assign_attention, compile_formula
from softhard.constructions.engine import run_head
from softhard.constructions.parse import parse_formula
from softhard.constructions.weights import build_transformer


def _model(formula: str, regime: str = "T"):
    g = compile_formula(parse_formula(formula), ["a", "b"])
    assign_attention(g, regime, None)
    return g, build_transformer(g, regime)


def test_base_stream_is_the_embedding_shared_and_read_only():
    _, m = _model("Y a")
    x = A.base_stream(m, 50)
    assert x is A.base_stream(m, 50)  # reused, not rebuilt
    assert not x.flags.writeable
    np.testing.assert_array_equal(x, m.embed(np.ones((1, 50), dtype=np.int64)))
    assert x.transpose(2, 0, 1).flags.c_contiguous  # the engine's layout: its columns are read without copies
    for k in range(51, 51 + A._BASE_SIZE):  # other lengths push it out of the cache
        A.base_stream(m, k)
    again = A.base_stream(m, 50)
    assert again is not x
    np.testing.assert_array_equal(again, x)
    _, m2 = _model("Y a")  # another model: its own stream
    assert A.base_stream(m2, 50) is not again


@pytest.mark.parametrize("formula,pattern", [("Y a", "ones"), ("(!a) S b", "ones"), ("(!a) S b", "zeros")])
def test_key_pattern_leak_equals_the_dense_path(formula, pattern):
    g, m = _model(formula)
    node = next(v for v in g if g.nodes[v].get("op") == "select" and g.nodes[v].get("key"))
    key = g.nodes[node]["key"]
    head = next(h for b in m.blocks for h in b.heads if h.name == node)
    n, inv_tau = 300, 40.0
    for _ in range(2):  # the second call reads the cached base stream
        ob = A.key_pattern_leak(m, node, key, n, inv_tau, patterns=(pattern,),
                                direction=g.nodes[node].get("direction", "past"))
        x = m.embed(np.ones((1, n), dtype=np.int64))
        x[:, 1:, m.index(key)] = A.key_pattern(n, pattern, direction=g.nodes[node].get("direction", "past"))
        x[:, 0, m.index(key)] = 0.0
        dense = run_head(head, x, soft=True, inv_tau=inv_tau, path="dense").leak[0, 1:]
        assert ob.pattern == pattern and ob.row == int(np.argmax(dense)) + 1
        assert ob.leak == pytest.approx(float(dense.max()), rel=1e-9) and ob.leak > 0


@pytest.mark.parametrize("formula,quantity", [("(!a) S b", "leak"), ("P (a & Y b)", "output"),
                                              ("(a & Y b) S (b & !Y a)", "leak")])
def test_key_pattern_leak_reads_only_the_heads_coordinates(formula, quantity):
    """key_pattern_leak fills only the coordinates the head reads (the rest of its stream is
    zero): every reported number equals, exactly, the head run on the whole embedding with the
    pattern written in (the stream a model would give it)."""
    g, m = _model(formula)
    n, inv_tau = 200, 60.0
    for node in [v for v in g if g.nodes[v].get("op") == "select" and g.nodes[v].get("key")]:
        key, direction = g.nodes[node]["key"], g.nodes[node].get("direction", "past")
        head = next(h for b in m.blocks for h in b.heads if h.name == node)
        for pattern in ("ones", "zeros", "single"):
            ob = A.key_pattern_leak(m, node, key, n, inv_tau, patterns=(pattern,), direction=direction,
                                    quantity=quantity)
            x = m.embed(np.ones((1, n), dtype=np.int64))
            x[:, 1:, m.index(key)] = A.key_pattern(n, pattern, direction=direction)
            x[:, 0, m.index(key)] = 0.0
            tr = run_head(head, x, soft=True, inv_tau=inv_tau)
            err = np.max(np.abs(tr.soft[0, 1:] - tr.hard[0, 1:]), axis=-1)
            seen = tr.leak[0, 1:] if quantity == "leak" else err
            r = int(np.argmax(seen))
            assert (ob.leak, ob.row, ob.output_error) == (float(seen[r]), r + 1, float(err[r]))
            assert (ob.score_scale, ob.key_dim) == (tr.score_scale, tr.key_dim)
