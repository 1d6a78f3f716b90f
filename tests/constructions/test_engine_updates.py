"""The engine's search and sparse MLP updates against independent recomputations (moved out of
test_engine.py, which holds the forward pass and the attention paths)."""

from __future__ import annotations

import numpy as np

from softhard.constructions.compile import assign_attention, compile_formula
from softhard.constructions.engine import forward
from softhard.constructions.parse import parse_formula
from softhard.constructions.residual import Columns, mlp_updates
from softhard.constructions.simulate import adversarial_words, edge_words, periodic_words
from softhard.constructions.transformer import MLP
from softhard.constructions.weights import build_transformer


def test_adversarial_words_pick_the_largest_leak_of_one_plain_forward():
    """adversarial_words picks, per head, the candidate with the largest leak of
    one plain soft forward pass over all candidates (and for an average-hard head the largest
    |soft − hard|), recomputed here without the search's code."""
    g = compile_formula(parse_formula("P (a & Y b) | (!a S b)"), ["a", "b"])
    assign_attention(g, "T", "auto")  # P: an average-hard head, searched on edge words too
    m = build_transformer(g, "T")
    n, it = 30, 4.0 * 30 * 1.4
    got = adversarial_words(m, n, it)
    cands = periodic_words(m.alphabet, n, 3)
    g = m.meta["graph"]
    outs = {v for v, a in g.nodes(data=True) if a.get("attention") == "average"}
    if outs:
        cands = list(dict.fromkeys(cands + edge_words(m.alphabet, n)))
    tr = forward(m, m.encode(cands), mode="soft", inv_tau=it)
    want = {name: cands[int(np.argmax(h.leak[:, 1:].max(axis=1)))] for name, h in tr.heads.items()}
    for name in outs & set(tr.heads):
        h = tr.heads[name]
        want[name + ":output"] = cands[int(np.argmax(np.abs(h.soft[:, 1:] - h.hard[:, 1:]).max(axis=(1, 2))))]
    assert outs and got == want and len(got) == len(tr.heads) + len(outs) >= 4


def test_mlp_updates_sparse_path_with_shared_unit_outputs():
    """The sparse MLP path hands a hidden unit's fresh output to its first weight-1 column without
    a copy: a unit writing two columns with weight 1, later units adding into those columns (in
    place), a single weight-1 term without bias (the ReLU makes the new array), a −1 first term,
    an input column that later updates must not alter.  Integer-valued inputs make every sum
    exact, so the result must equal relu(x W1 + b1) W2 computed densely here."""
    rng = np.random.default_rng(3)
    d, B, N = 6, 3, 17
    X = rng.integers(-4, 5, size=(d, B, N)).astype(np.float64)
    W1 = np.zeros((d, 5))
    W1[0, 0] = 1.0                                   # unit 0: x0 alone (no bias): relu writes the new array
    W1[1, 1], W1[2, 1] = 1.0, 1.0                    # unit 1: x1 + x2 + 1
    W1[3, 2] = -1.0                                  # unit 2: −x3 (first term −1)
    W1[0, 3], W1[4, 3] = 1.0, 2.0                    # unit 3: x0 + 2 x4 − 2
    W1[5, 4] = 3.0                                   # unit 4: 3 x5
    b1 = np.array([0.0, 1.0, 0.0, -2.0, 0.0])
    W2 = np.zeros((5, d))
    W2[0, 1], W2[0, 2] = 1.0, 1.0                    # unit 0 -> two columns, both weight 1
    W2[1, 1], W2[1, 3] = 1.0, -1.0                   # then added into column 1 (in place)
    W2[2, 2], W2[2, 5] = 2.0, 1.0
    W2[3, 1], W2[3, 5] = 1.0, 1.0
    W2[4, 0] = 1.0
    m = MLP(name="m", W1=W1, b1=b1, W2=W2, b2=np.zeros(d))
    x0 = X.copy()
    upd = mlp_updates(m, Columns(X))
    assert np.array_equal(X, x0)  # the stream is read only
    H = np.maximum(np.einsum("dbn,dh->hbn", X, W1) + b1[:, None, None], 0.0)
    want = np.einsum("hbn,hc->cbn", H, W2)
    assert sorted(upd) == [0, 1, 2, 3, 5]
    for c, v in upd.items():
        assert np.array_equal(v, want[c]), c
    assert not any(np.shares_memory(upd[a], upd[b]) for a in upd for b in upd if a < b)
    assert not any(np.shares_memory(v, X) for v in upd.values())
