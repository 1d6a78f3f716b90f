"""Turn a computation graph into an explicit NumPy transformer (THEORY §3, §4).

Residual stream coordinates (labels): ``bos`` (1 at BOS only), ``one`` (1 at every real position,
0 at BOS — it serves as the bias, so every node's coordinate is exactly 0 at BOS), ``pos``
and ``rpos`` (the positional embedding), one coordinate per graph node, and for each selection
a scratch coordinate ``raw:<node>`` holding the attention output before clean-up.

Positional embedding:

* regime ``"T"`` (bounded PE, temperature scaled with n): ``pos = j/n``, ``rpos = (n+1−j)/n``;
* regime ``"U"`` (unbounded PE, one fixed temperature): ``pos = j``, ``rpos = n+1−j``;
* regime ``"P"`` (THEORY §5 parity): regime U plus ``pos2 = j²`` and ``sgn = (−1)^j``;
  all are 0 at BOS.  Selections in regime P are built and bounded exactly as in regime U.

Counting nodes (uniform averages, comparators, parity heads; THEORY §5) are built by
:mod:`softhard.constructions.counting`; every node with a clean-up (selections, comparators,
parity heads) has a scratch coordinate ``raw:<node>``.

Selection heads (one per ``select`` node; query i, key j, b = key bit, BOS = position 0):

* regime T, past:   ``s_ij = b_j + β·pos_j + ½·bos_j``       (query vector ≡ 1)
* regime T, future: ``s_ij = b_j + β·rpos_j + ½·bos_j``
* regime U, past:   ``s_ij = pos_i·(b_j + bos_j) + pos_j``   (= j + i·b(j); BOS scores i)
* regime U, future: ``s_ij = rpos_i·(b_j + bos_j) + rpos_j`` (the mirror image)
* average-hard (node attribute ``attention = "average"``, regime T, THEORY §4b): ``s_ij = b_j +
  ½·bos_j``, rule AHA: the head returns the weight on the positions with b = 1 (value = key).

The value is the node's ``v`` coordinate (0 at BOS: the default).  Each head writes ``raw:<node>``;
the next MLP applies ``round_η(x) = (ReLU(x−η) − ReLU(x−1+η))/(1−2η)`` into the node's coordinate.
Boolean gates are exact one-hidden-layer ReLU MLPs on {0,1} (THEORY §3).
"""

from __future__ import annotations

from fractions import Fraction

import networkx as nx
import numpy as np

from . import counting
from .compile import cleaned_nodes, select_nodes
from .errors import ParameterError
from .parameters import DEFAULT_BETA, DEFAULT_ETA, check_beta, check_eps_ln, check_eta, check_regime
from .transformer import MLP, Block, Head, Transformer

#: the numeric transformer's clean-up needs ``1/2 − η ≥ 2^-53``, the spacing of doubles just above 1/2:
#: closer to 1/2 its two thresholds ``η`` and ``1 − η`` may round to one double (ramp of width 0)
ETA_FLOAT_MARGIN = Fraction(1, 2 ** 53)


def check_float_eta(eta: Fraction) -> Fraction:
    """Return ``eta`` if the float64 clean-up ramp can represent ``round_η`` (``1/2 − η ≥ 2^-53``);
    raise :class:`ParameterError` otherwise.  The bounds themselves are exact in any η ∈ (0, 1/2)."""
    if Fraction(1, 2) - eta < ETA_FLOAT_MARGIN:
        raise ParameterError(f"eta {eta}: 1/2 - eta = {float(Fraction(1, 2) - eta):.3g} is below 2^-53, the spacing "
                             f"of float64 numbers at 1/2, so the numeric transformer's clean-up round_eta cannot be "
                             f"represented; use eta <= 1/2 - 2^-53")
    return eta


def cleanup_ramp(b: float, eta: Fraction) -> tuple[float, float, float]:
    """The clean-up ``round_η(y) = (ReLU(y + lo) − ReLU(y + hi))·c`` for ``y = a·raw`` (THEORY §3) in float64.

    ``lo``, ``hi``: the doubles nearest ``b − η`` and ``b − (1 − η)`` (computed exactly, rounded
    once); ``c``: the double nearest ``1/(lo − hi)``, the slope of *these* thresholds, so the
    ramp rises from 0 to 1 between them.  Needs :func:`check_float_eta` to have passed.
    """
    fb = Fraction(b)
    lo, hi = float(fb - eta), float(fb - (1 - eta))
    return lo, hi, float(1 / (Fraction(lo) - Fraction(hi)))


def build_transformer(g: nx.DiGraph, regime: str = "T", *, beta=DEFAULT_BETA, eta=DEFAULT_ETA,
                      eps_ln=0) -> Transformer:
    """Explicit transformer for the computation graph ``g`` (see module docstring).

    ``regime``: "T" (PE j/n, temperature τ(n)), "U" (PE j, fixed τ) or "P" (U plus j², (−1)^j);
    ``beta`` (regime T tie-break weight, 0 < β ≤ 1/4), ``eta`` (clean-up margin, 0 < η < 1/2) and
    ``eps_ln`` (layer-norm ε ≥ 0 of ``ln`` comparators) as exact numbers.

    Returns a :class:`Transformer` whose ``d = 4 (+2 in regime P) + |nodes| + |cleaned nodes|``;
    ``outputs`` is the root node's coordinate; ``meta`` records regime, β, η, ε_LN and the graph.
    Raises :class:`ParameterError` on bad parameters or a counting node the regime cannot build.
    Implements THEORY §3–§5.
    """
    check_regime(regime)
    beta = check_beta(beta)
    eta = check_float_eta(check_eta(eta))
    eps_ln = check_eps_ln(eps_ln)
    counting.check_graph(g, regime)
    nodes = list(nx.topological_sort(g))
    sels = select_nodes(g)
    cleaned = cleaned_nodes(g)
    pe_extra = ["pos2", "sgn"] if regime == "P" else []
    labels = ["bos", "one", "pos", "rpos"] + pe_extra + nodes + [f"raw:{v}" for v in cleaned]
    ix = {lab: k for k, lab in enumerate(labels)}
    d = len(labels)
    alphabet = tuple(g.graph["alphabet"])

    # token embedding: row 0 BOS
    E = np.zeros((len(alphabet) + 1, d))
    E[0, ix["bos"]] = 1.0
    for t, s in enumerate(alphabet):
        row = E[t + 1]
        row[ix["one"]] = 1.0
        for v in nodes:
            a = g.nodes[v]
            if a["op"] == "atom" and a["symbol"] == s:
                row[ix[v]] = 1.0
            elif a["op"] == "const" and a["value"] == 1:
                row[ix[v]] = 1.0

    ipos, irpos = ix["pos"], ix["rpos"]
    if regime == "T":
        def positional(n: int, _d=d) -> np.ndarray:
            P = np.zeros((n + 1, _d))
            j = np.arange(1, n + 1, dtype=np.float64)
            P[1:, ipos] = j / n
            P[1:, irpos] = (n + 1 - j) / n
            return P
        pe_name = "pos=j/n, rpos=(n+1-j)/n"
    elif regime == "U":
        def positional(n: int, _d=d) -> np.ndarray:
            P = np.zeros((n + 1, _d))
            j = np.arange(1, n + 1, dtype=np.float64)
            P[1:, ipos] = j
            P[1:, irpos] = n + 1 - j
            return P
        pe_name = "pos=j, rpos=n+1-j"
    else:
        ipos2, isgn = ix["pos2"], ix["sgn"]

        def positional(n: int, _d=d) -> np.ndarray:
            P = np.zeros((n + 1, _d))
            j = np.arange(1, n + 1, dtype=np.float64)
            P[1:, ipos] = j
            P[1:, irpos] = n + 1 - j
            P[1:, ipos2] = j * j
            P[1:, isgn] = np.where(np.arange(1, n + 1) % 2 == 0, 1.0, -1.0)
            return P
        pe_name = "pos=j, rpos=n+1-j, pos2=j^2, sgn=(-1)^j"

    L = g.graph["layers"]
    blocks = [Block() for _ in range(L + 1)]
    b_f = float(beta)
    for v in sels:
        a = g.nodes[v]
        key, val = a["key"], a["value"]
        p = ipos if a["direction"] == "past" else irpos
        WV = np.zeros((d, 1)); WV[ix[val], 0] = 1.0
        WO = np.zeros((1, d)); WO[0, ix[f"raw:{v}"]] = 1.0
        if regime == "T":
            WQ = np.zeros((d, 1)); WQ[ix["one"], 0] = 1.0
            WK = np.zeros((d, 1)); WK[ix[key], 0] = 1.0; WK[ix["bos"], 0] += 0.5
            if a.get("attention") != "average":  # AHA (THEORY §4b): no position term, every b = 1 ties
                WK[p, 0] += b_f
        else:
            WQ = np.zeros((d, 2)); WQ[p, 0] = 1.0; WQ[ix["one"], 1] = 1.0
            WK = np.zeros((d, 2)); WK[ix[key], 0] = 1.0; WK[ix["bos"], 0] += 1.0; WK[p, 1] = 1.0
        blocks[a["layer"]].heads.append(Head(name=v, W_Q=WQ, W_K=WK, W_V=WV, W_O=WO, mask=a["mask"],
                                             rule=a["rule"], node=v))
    for layer, head in counting.counting_heads(g, ix, regime, beta):
        blocks[layer].heads.append(head)

    # MLPs: per block, per step: layer norms, then one MLP with the clean-ups and gates of the step
    one = ix["one"]
    cleanups = [counting.cleanup_spec(g, v) for v in cleaned]
    for layer in range(L + 1):
        steps = sorted({g.nodes[v]["step"] for v in nodes if g.nodes[v]["layer"] == layer and g.nodes[v]["kind"] == "ffn"}
                       | {cu.step for cu in cleanups if g.nodes[cu.node]["layer"] == layer})
        for st in steps:
            lns = [v for v in nodes if g.nodes[v]["kind"] == "layernorm" and g.nodes[v]["layer"] == layer
                   and g.nodes[v]["step"] == st]
            if lns:
                blocks[layer].mlps.append(counting.layernorm_sublayer(g, lns, ix, eps_ln, f"block{layer}.ln{st}"))
            units: list[tuple[dict[int, float], int, float]] = []  # (input weights, output coord, out weight)
            names = []
            for cu in cleanups:  # round_η(a·raw + b·one)
                v = cu.node
                if g.nodes[v]["layer"] != layer or cu.step != st:
                    continue
                r, o = ix[f"raw:{v}"], ix[v]
                lo, hi, c = cleanup_ramp(cu.b, eta)
                units.append(({r: cu.a, one: lo}, o, c))
                units.append(({r: cu.a, one: hi}, o, -c))
                names.append(v)
            for v in nodes:
                a = g.nodes[v]
                if a["kind"] != "ffn" or a["layer"] != layer or a["step"] != st:
                    continue
                ins = {d_["role"]: ix[u] for u, _, d_ in g.in_edges(v, data=True)}
                o = ix[v]
                if a["op"] == "not":
                    units.append(({one: 1.0, ins["arg"]: -1.0}, o, 1.0))
                elif a["op"] == "and":
                    units.append(({ins["left"]: 1.0, ins["right"]: 1.0, one: -1.0}, o, 1.0))
                elif a["op"] == "or":
                    units.append(({ins["left"]: 1.0}, o, 1.0))
                    units.append(({ins["right"]: 1.0}, o, 1.0))
                    units.append(({ins["left"]: 1.0, ins["right"]: 1.0, one: -1.0}, o, -1.0))
                elif a["op"] == "implies":
                    units.append(({one: 1.0}, o, 1.0))
                    units.append(({ins["left"]: 1.0, ins["right"]: -1.0}, o, -1.0))
                else:  # pragma: no cover - compile only emits the ops above
                    raise ParameterError(f"node {v}: unknown gate {a['op']!r}")
                names.append(v)
            h = len(units)
            W1 = np.zeros((d, h)); W2 = np.zeros((h, d))
            for k, (win, o, wout) in enumerate(units):
                for i_, w in win.items():
                    W1[i_, k] += w
                W2[k, o] = wout
            blocks[layer].mlps.append(MLP(name=f"block{layer}.mlp{st}", W1=W1, b1=np.zeros(h), W2=W2,
                                          b2=np.zeros(d), nodes=tuple(names)))

    model = Transformer(alphabet=alphabet, token_embedding=E, positional=positional, blocks=blocks,
                        labels=labels, outputs=[g.graph["root"]], positional_name=pe_name,
                        bounded=(regime == "T"),
                        meta={"regime": regime, "beta": beta, "eta": eta, "eps_ln": eps_ln, "graph": g})
    model.validate()
    return model
