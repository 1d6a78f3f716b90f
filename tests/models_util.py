"""Helpers shared by the model-file tests: an independent brute-force hard forward pass.

Written from the format's definition (``softhard.constructions.modelfile`` docstring), on the
*parsed spec* with plain Python lists of Fractions — no numpy object arrays, no canonical
folding of biases, no shared code with ``softhard.constructions.exact`` — so that agreement
between the two is evidence, not a tautology.
"""

from __future__ import annotations

from fractions import Fraction

from softhard.constructions.hard_model import ModelSpec
from softhard.constructions.positional import family_value


def _vecmat(v, M):
    rows, cols = M.shape
    return [sum((v[a] * M[a, c] for a in range(rows)), Fraction(0)) for c in range(cols)]


def _attend(mask, i, n):
    if i == 0:
        return [0]
    js = {"strict_past": range(0, i), "past": range(0, i + 1), "strict_future": range(i + 1, n + 1),
          "future": range(i, n + 1), "none": range(0, n + 1)}[mask]
    return sorted(set(js) | {0})


def brute_force(spec: ModelSpec, word) -> tuple[list[list[Fraction]], dict[str, list]]:
    """Hard forward of ``word``; returns the final residual rows and, per head, a list of
    (row, gap or None, tie count) for every query row ≥ 1 (gap to the non-maximal positions)."""
    n = len(word)
    d = spec.d
    ids = [0] + [spec.alphabet.index(s) + 1 for s in word]
    x = []
    for j, t in enumerate(ids):
        row = [spec.token_embedding[t, a] for a in range(d)]
        if spec.table is not None:
            row = [row[a] + spec.table[j, a] for a in range(d)]
        if j >= 1:
            for f in spec.features:
                v = family_value(f, j, n)
                row = [row[a] + v * f.vector[a] for a in range(d)]
        x.append(row)
    info = {}
    for L in spec.layers:
        upd = [[Fraction(0)] * d for _ in range(n + 1)]
        for h in L.heads:
            def lin(v, W, b):
                out = _vecmat(v, W)
                return out if b is None else [o + c for o, c in zip(out, b)]
            Q = [lin(v, h.W_Q, h.b_Q) for v in x]
            K = [lin(v, h.W_K, h.b_K) for v in x]
            V = [lin(v, h.W_V, h.b_V) for v in x]
            rows = []
            for i in range(n + 1):
                js = _attend(h.mask, i, n)
                s = {j: h.scale * sum((q * k for q, k in zip(Q[i], K[j])), Fraction(0)) for j in js}
                top = max(s.values())
                A = [j for j in js if s[j] == top]
                rest = [v for v in s.values() if v != top]
                if i >= 1:
                    rows.append((i, (top - max(rest)) if rest else None, len(A)))
                if h.rule == "AHA":
                    o = [sum((V[j][c] for j in A), Fraction(0)) / len(A) for c in range(len(V[0]))]
                else:
                    o = V[min(A) if h.rule == "UHA-leftmost" else max(A)]
                w = _vecmat(o, h.W_O)
                if h.b_O is not None:
                    w = [a + b for a, b in zip(w, h.b_O)]
                upd[i] = [a + b for a, b in zip(upd[i], w)]
            info[h.name] = rows
        x = [[a + b for a, b in zip(r, u)] for r, u in zip(x, upd)]
        for m in L.mlps:
            new = []
            for v in x:
                pre = [p + b for p, b in zip(_vecmat(v, m.W1), m.b1)]
                act = [max(p, Fraction(0)) for p in pre]
                out = [o + b for o, b in zip(_vecmat(act, m.W2), m.b2)]
                new.append([a + b for a, b in zip(v, out)])
            x = new
    return x, info


def uha_doc(rule="UHA-rightmost"):
    """'The parity of the position of the last (or first) a strictly before i': UHA with ties among
    the a's (all score 1), value (-1)^j; BOS scores 1/2, b's 0."""
    return {
        "format": "softhard-model", "version": 1, "name": "last_a_parity", "alphabet": ["a", "b"], "d_model": 5,
        "residual": ["bos", "one", "a", "par", "y"],
        "token_embedding": {"shape": [3, 5], "entries": [["BOS", "bos", 1], ["a", "one", 1], ["a", "a", 1],
                                                         ["b", "one", 1]]},
        "positional": {"features": [{"family": "(-1)^j", "coordinate": "par"}]},
        "layers": [{"heads": [{"name": "last_a", "mask": "strict_past" if rule == "UHA-rightmost" else "strict_future",
                               "rule": rule,
                               "W_Q": {"shape": [5, 1], "entries": [["one", 0, 1]]},
                               "W_K": {"shape": [5, 1], "entries": [["a", 0, 1], ["bos", 0, "1/2"]]},
                               "W_V": {"shape": [5, 1], "entries": [["par", 0, 1]]},
                               "W_O": {"shape": [1, 5], "entries": [[0, "y", 1]]}}]}],
        "outputs": [{"name": "y", "type": "numerical", "coordinate": "y"}]}


def follow_doc(tied: bool) -> dict:
    """Two layers over {a, b} (tests/bounds/test_tieless.py): ``prev`` (strict past, score j) writes
    pa = [previous symbol is a]; ``follow`` (past) scores ``pa(i)·j`` (uniform-tieless: a row is uniform
    or has a unique maximum) or, with ``tied``, ``pa(i)·[w_j = a]`` (two a's tie against BOS)."""
    key1 = "a" if tied else "pos"
    return {
        "format": "softhard-model", "version": 1, "name": "follow_tied" if tied else "follow_tieless",
        "alphabet": ["a", "b"], "d_model": 6, "residual": ["bos", "one", "a", "pos", "pa", "s1"],
        "token_embedding": {"shape": [3, 6], "entries": [["BOS", "bos", 1], ["a", "one", 1], ["a", "a", 1],
                                                         ["b", "one", 1]]},
        "positional": {"features": [{"family": "j", "coordinate": "pos", "coefficient": 1}]},
        "layers": [
            {"heads": [{"name": "prev", "mask": "strict_past", "rule": "AHA",
                        "W_Q": {"shape": [6, 1], "entries": [["one", 0, 1]]},
                        "W_K": {"shape": [6, 1], "entries": [["pos", 0, 1]]},
                        "W_V": {"shape": [6, 1], "entries": [["a", 0, 1]]},
                        "W_O": {"shape": [1, 6], "entries": [[0, "pa", 1]]}}], "mlp": []},
            {"heads": [{"name": "follow", "mask": "past", "rule": "AHA",
                        "W_Q": {"shape": [6, 1], "entries": [["pa", 0, 1]]},
                        "W_K": {"shape": [6, 1], "entries": [[key1, 0, 1]]},
                        "W_V": {"shape": [6, 1], "entries": [["a", 0, 1]]},
                        "W_O": {"shape": [1, 6], "entries": [[0, "s1", 1]]}}], "mlp": []}],
        "outputs": [{"name": "s1", "type": "numerical", "coordinate": "s1", "at": "all"}],
    }
