"""A selection head with no value columns (``W_V`` of shape ``(d, 0)``): its leak and every other
head's output, on the structured path (the group scan and the tied AHA path), against a separate
softmax and the dense path (found by a new-user trial: IndexError / ValueError)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from softhard.constructions.engine import forward
from softhard.constructions.hard_model import canonicalize
from softhard.constructions.modelfile import model_from_doc
from softhard.constructions.transformer import Transformer


def _no_value_model(rule: str, positional: bool) -> Transformer:
    """examples/models/ab_subsequence.json plus a first-layer head ``noval`` with no value columns
    (``W_V`` ``(d, 0)``, ``W_O`` ``(0, d)``): query ``one``, key ``a + bos/2`` (+ ``pos``, a new
    coordinate holding (j/n)/8, when ``positional``: then the key's scores increase along each
    group and the head runs on the scan of :func:`_structured_eval_order`, else on the tied AHA
    path), past mask."""
    doc = json.loads((Path(__file__).resolve().parents[2] / "examples" / "models" / "ab_subsequence.json").read_text())
    key = [["a", 0, 1], ["bos", 0, "1/2"]]
    if positional:  # one more residual coordinate: every matrix's d grows by one
        d = doc["d_model"] + 1
        doc["d_model"], doc["residual"] = d, doc["residual"] + ["pos"]
        doc["token_embedding"]["shape"][1] = d
        doc["positional"] = {"features": [{"family": "j/n", "coordinate": "pos", "coefficient": "1/8"}]}
        for layer in doc["layers"]:
            for h in layer["heads"]:
                for m in ("W_Q", "W_K", "W_V"):
                    h[m]["shape"][0] = d
                h["W_O"]["shape"][1] = d
            for mlp in layer["mlp"]:
                mlp["W1"]["shape"][0], mlp["W2"]["shape"][1] = d, d
        key.append(["pos", 0, 1])
    d = doc["d_model"]
    doc["layers"][0]["heads"].append({"name": "noval", "mask": "past", "rule": rule,
                                      "W_Q": {"shape": [d, 1], "entries": [["one", 0, 1]]},
                                      "W_K": {"shape": [d, 1], "entries": key},
                                      "W_V": {"shape": [d, 0], "entries": []},
                                      "W_O": {"shape": [0, d], "entries": []}})
    return canonicalize(model_from_doc(doc)).transformer()


@pytest.mark.parametrize("rule,positional", [("AHA", False), ("AHA", True), ("UHA-rightmost", True)])
@pytest.mark.parametrize("word", ["abab", "bbab" * 40])
def test_a_head_without_value_columns(rule, positional, word):
    """Found by a new-user trial: the structured path raised IndexError (the group scan) or
    ValueError (the tied AHA path) on a head with no value columns.  Its leak is checked against a
    separate softmax of the scores s_0 = 1/2 (BOS), s_j = [w_j = a] + (j/n)/8·[positional]
    (j = 1..i, past mask), its (empty) outputs and every other head's against the dense path."""
    tr = _no_value_model(rule, positional)
    tok = tr.encode([tuple(word)])
    inv_tau, n = 40.0, len(word)
    got = forward(tr, tok, mode="soft", inv_tau=inv_tau)
    dense = forward(tr, tok, mode="soft", inv_tau=inv_tau, path="dense")
    h = got.heads["noval"]
    assert h.path == "structured" and dense.heads["noval"].path == "dense"
    assert h.soft.shape == (1, n + 1, 0) and h.hard.shape == (1, n + 1, 0)
    want = [0.0]
    for i in range(1, n + 1):
        s = [0.5] + [(1.0 if c == "a" else 0.0) + (j / n / 8 if positional else 0.0)
                     for j, c in enumerate(word[:i], start=1)]
        top = max(s)
        w = [math.exp((x - top) * inv_tau) for x in s]
        want.append(sum(x for x, si in zip(w, s) if si != top) / sum(w))
    np.testing.assert_allclose(h.leak[0], want, rtol=1e-9, atol=1e-300)
    np.testing.assert_allclose(h.leak, dense.heads["noval"].leak, rtol=1e-9, atol=1e-300)
    for name in ("seen_a", "b_after_a"):
        np.testing.assert_allclose(got.heads[name].soft, dense.heads[name].soft, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got.x, dense.x, rtol=1e-12, atol=1e-15)
