"""``softhard bound``'s growth orders (solver/cli/handlers/bound.py): the SymPy limit behind each
is kept per bound shape, so a deeply nested formula costs a few limits, not one per node (a
99-deep ``Y…Y a`` took 25 s; a new-user trial, stop 16)."""

from __future__ import annotations

import json

import sympy as sp

from softhard.bounds import selection as S
from softhard.bounds.core import n
from softhard.bounds.store import set_disk_cache
from softhard.solver.cli import main
from softhard.solver.cli.handlers import bound as B


def test_growth_gives_the_order_and_leading_constant():
    """Orders checked by hand: n·log 2/β + log n at β = 1/4 grows as 4·log(2)·n; log n + 3 as
    log n; n·log n + n² as n²; a constant is Θ(1)."""
    quarter = {S.beta: sp.Rational(1, 4)}
    order, const = B.growth(n * sp.log(2) / S.beta + sp.log(n), quarter)
    assert order == "Θ(n)" and sp.simplify(sp.sympify(const) - 4 * sp.log(2)) == 0  # printed log(16)
    assert B.growth(sp.log(n) + 3, {}) == ("Θ(log n)", "1")
    assert B.growth(n * sp.log(n) + n**2, {}) == ("Θ(n²)", "1")
    assert B.growth(sp.Max(sp.log(n), n * sp.log(n) / 2), {}) == ("Θ(n log n)", "1/2")
    assert B.growth(sp.Integer(7) / S.beta, quarter) == ("Θ(1)", "28")


def test_a_deep_formula_computes_one_limit_per_bound_shape(capsys, monkeypatch):
    """40 nested Y: 40 nodes but two bound shapes in regime T (the innermost Y reads the input
    letter, the others a Boolean node); with the disk cache off, ``asymptotic_order`` runs once
    per distinct (expression, simplify) pair, and every row still has an order (regime T: 1/τ grows
    linearly in n, THEORY §1)."""
    calls = []
    real = B.asymptotic_order
    monkeypatch.setattr(B, "asymptotic_order", lambda e: calls.append(e) or real(e))
    set_disk_cache(False)
    try:
        assert main(["bound", "Y " * 40 + "a", "--alphabet", "ab", "--regime", "T", "--json"]) == 0
    finally:
        set_disk_cache(None)
    rows = json.loads(capsys.readouterr().out)["nodes"]
    assert len(rows) == 40
    assert {r["order"] for r in rows} == {"Θ(n)"}
    shapes = {r["closed_form"] for r in rows}
    assert len(calls) <= 2 * len(shapes) <= 4
