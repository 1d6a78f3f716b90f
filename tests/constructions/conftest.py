"""Shared inputs of the constructions tests."""

from __future__ import annotations

import numpy as np
import pytest

from softhard.constructions.compile import compile_formula
from softhard.constructions.engine import forward
from softhard.constructions.parse import parse_formula
from softhard.constructions.weights import build_transformer


@pytest.fixture
def s_head_input():
    """``(head, x)`` of the ``!a S b`` selection head (strict past, UHA-rightmost, one group) of
    ``(a U b) | ((!a S b) & H (a | Y b))`` in regime T: ``x`` is the hard residual stream (shape
    ``(1, n + 1, d)``) that reaches it for one random word of length ``n`` (a function of n, seed)."""
    g = compile_formula(parse_formula("(a U b) | ((!a S b) & H (a | Y b))"), ["a", "b"])
    m = build_transformer(g, "T")

    def make(n: int, seed: int):
        tok = np.random.default_rng(seed).integers(1, 3, size=(1, n))
        for li, blk in enumerate(m.blocks):
            for h in blk.heads:
                if h.name == "!a S b":
                    return h, forward(m, tok, mode="hard", keep_residuals=True).residuals[li]
        raise AssertionError("no '!a S b' head")
    return make
