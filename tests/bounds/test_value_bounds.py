"""Output bounds of unique selections whose value is not their key (THEORY §4c), checked against an
exact softmax written here from THEORY §4 (not the package's engine): every Boolean key/value pattern
with v ⇒ b and the stated value spacing, every query, in 40-digit arithmetic."""

from __future__ import annotations

import itertools
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from softhard.bounds.derive import evaluate
from softhard.bounds.selection import output_T_value_const, output_T_values, output_U_value_const, output_U_values
from softhard.constructions.engine import forward
from softhard.constructions.parse import load_spec
from softhard.constructions.spacing import value_spacing
from softhard.constructions.parse import parse_formula
from softhard.solver.pipeline import build



@pytest.fixture(autouse=True)
def _digits():
    """40 digits inside these tests only (a module-level setting would change other modules' precision)."""
    with mpmath.workdps(40):
        yield



def output_errors(b, v, regime, inv_tau):
    """|soft − hard| of a past selection at every query i = 1..n of key b and value v (lists over
    positions 1..n): regime T scores b_j + βj/n (β = 1/4) and BOS 1/2, regime U scores j + i·b_j and BOS i;
    value 0 at BOS; hard = the value of the last j < i with b_j = 1 (BOS if none)."""
    n = len(b)
    out = []
    for i in range(1, n + 1):
        if regime == "T":
            s = [mpmath.mpf(1) / 2] + [b[j - 1] + mpmath.mpf(j) / (4 * n) for j in range(1, i)]
        else:
            s = [mpmath.mpf(i)] + [mpmath.mpf(j + i * b[j - 1]) for j in range(1, i)]
        vals = [0] + [v[j - 1] for j in range(1, i)]
        top = max(s)
        w = [mpmath.exp((x - top) * inv_tau) for x in s]
        soft = mpmath.fsum(wi * vi for wi, vi in zip(w, vals)) / mpmath.fsum(w)
        ones = [j for j in range(1, i) if b[j - 1]]
        hard = v[ones[-1] - 1] if ones else 0
        out.append(abs(soft - hard))
    return out


def patterns(n, dv):
    """Every (b, v) of length n with v ⇒ b whose key = 1 positions closer than dv carry equal values."""
    for cells in itertools.product(((0, 0), (1, 0), (1, 1)), repeat=n):
        b, v = [c[0] for c in cells], [c[1] for c in cells]
        ones = [j for j in range(n) if b[j]]
        if all(v[x] == v[y] for x, y in itertools.combinations(ones, 2) if y - x < dv):
            yield b, v


@pytest.mark.parametrize("regime,inv_tau", [("T", 40), ("U", 1)])
def test_value_const_bound_is_exact(regime, inv_tau):
    """Key ≡ 1, value ≡ 1 (Y true): the worst output error over every query is the bound, at i = 2."""
    expr = output_T_value_const() if regime == "T" else output_U_value_const()
    for n in range(2, 12):
        errs = output_errors([1] * n, [1] * n, regime, mpmath.mpf(inv_tau))
        bound = evaluate(expr, n_value=n, inv_tau=inv_tau)
        assert max(errs) == errs[1]  # query i = 2
        assert abs(max(errs) - bound) < mpmath.mpf(10) ** -30, (n, max(errs), bound)


@pytest.mark.parametrize("regime,inv_tau", [("T", 30), ("U", 1)])
def test_value_spacing_bound_holds_and_is_attained(regime, inv_tau):
    """Value spacing 2 (key spacing 1, key_first 2 in regime U): the bound covers every pattern and
    query up to n = 7, and the split pattern (b = 1 just before the query with v = 1, b = 0 before
    it, b = 1 with v = 0 from distance 2 on) attains it up to the BOS and b = 0 terms."""
    expr = output_T_values(1, 2) if regime == "T" else output_U_values(2)
    for n in range(3, 8):
        bound = evaluate(expr, n_value=n, inv_tau=inv_tau)
        worst = mpmath.mpf(0)
        for b, v in patterns(n, 2):
            if regime == "U" and b[0]:
                continue  # key_first = 2: the key cannot be 1 at position 1
            worst = max(worst, max(output_errors(b, v, regime, mpmath.mpf(inv_tau))))
        assert worst <= bound * (1 + mpmath.mpf(10) ** -30), (n, worst, bound)
        if n < 5:
            continue
        split_b = [0 if regime == "U" else 1] + [1] * (n - 4) + [0, 1, 0]
        split_v = [0] * (n - 2) + [1, 0]
        att = output_errors(split_b, split_v, regime, mpmath.mpf(inv_tau))[-1]
        # T: the bound's geometric part runs one slot past n − 2 (r^{n−1}, 4 % of it at n = 5, 1/τ = 30;
        # e^{−Θ(n)} at the certified 1/τ = Θ(n)); U: BOS and b = 0 sit at distances the bound also counts
        assert att <= worst and att / bound > (0.95 if regime == "T" else 0.7), (n, att, bound)


def test_value_spacing_by_enumeration():
    """dbl = "((" or "))" ends here: adjacent doubles are both "((" or both "))" (value "))" agrees at
    distance 1, differs at distance 2: "(())"); Y a over {a, b}: adjacent values differ ("ab")."""
    dbl = parse_formula('("(" & Y "(") | (")" & Y ")")')
    cc = parse_formula('")" & Y ")"')
    assert value_spacing(dbl, cc, ["(", ")"]) == 2
    assert value_spacing(parse_formula("true"), parse_formula("a"), ["a", "b"]) == 1


def test_dyck_depth2_nodes_use_output_bounds_attained_on_a_word():
    """examples/dyck1_depth2.ltl: `Y true` and the two S nodes get the output bounds (value const;
    value spacing 2), and on the word (^m )) ( the S node `!dbl S cc` attains its bound at the last
    query in the engine's own float64 run (regime U: BOS at distance n − 2, b = 1 with value 0 at
    2 … n − 3: the bound's sum up to its last terms)."""
    spec = load_spec("examples/dyck1_depth2.ltl")
    for regime in ("T", "U"):
        c = build(spec, regime)
        sel = {v: a for v, a in c.graph.nodes(data=True) if a["op"] == "select"}
        assert sel["Y true"]["value_const"] and c.bounds["Y true"].bound.value_const
        s_nodes = [v for v, a in sel.items() if a["operator"] == "S"]
        assert len(s_nodes) == 2
        for v in s_nodes:
            assert sel[v]["value_spacing"] == 2 and c.bounds[v].bound.quantity == "output"
        node = next(v for v in s_nodes if v.endswith('S (")" & (Y ")"))'))
        m = 14
        word = tuple("(" * m + "))(")
        n = len(word)
        it = 120.0 if regime == "T" else 1.5  # the upstream Y nodes (dbl, cc) exact: their bounds ≤ η there
        tr = forward(c.model, c.model.encode([word]), mode="soft", inv_tau=it).heads[node]
        err = float(np.abs(tr.soft[0, -1] - tr.hard[0, -1]).max())
        bound = float(c.bounds[node].value(n, Fraction(it)))
        # the same row by the exact softmax above: key = dbl, value = cc of the word
        b = [0] + [1] * (m - 1) + [0, 1, 0]
        v = [0] * (m + 1) + [1, 0]
        exact = float(output_errors(b, v, regime, mpmath.mpf(it))[-1])
        assert abs(err - exact) <= 1e-12 and err <= bound * (1 + 1e-12)
        assert err / bound > (0.999 if regime == "U" else 0.9), (regime, err, bound)
