"""The graph vocabulary (constructions/nodes.py): every graph the three input kinds build uses
only declared attribute names and values."""

from __future__ import annotations

from pathlib import Path

import pytest

import softhard
from softhard.constructions.ast import operators
from softhard.constructions.nodes import undeclared
from softhard.constructions.parse import load_spec
from softhard.solver.pipeline import build
from softhard.solver.tracr_analysis import analyse, model_info

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.ltl")), ids=lambda p: p.stem)
def test_formula_graphs_use_the_vocabulary(path):
    spec = load_spec(str(path))
    regime = "P" if "%" in operators(spec.formula) else "T"
    for comparator in (("head", "ln") if regime == "T" else ("pe",)):
        assert undeclared(build(spec, regime, comparator=comparator).graph) == []


def test_model_and_tracr_graphs_use_the_vocabulary():
    c, _ = softhard.build_model(softhard.load_model(EXAMPLES / "models" / "ab_subsequence.json"), n_max=6,
                                epsilon="1/4")
    assert undeclared(c.graph) == []
    tm = softhard.load_tracr(EXAMPLES / "tracr" / "frac_prevs")
    an = analyse(tm.hard_model(), model_info(tm))
    assert undeclared(an.bound.graph) == []
