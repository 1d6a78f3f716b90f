"""How verify words the differences a replay found (:func:`softhard.solver.replay.verify`): a
node's copy of a measured result named as such, and whether every difference lies where a claim
stopped by a solver budget may replay decided.  Pure functions of problem paths and the stored
certificate; split from :mod:`softhard.solver.replay` (ISSUE 16: that module stays under ~600 lines).
"""

from __future__ import annotations

import re

#: words in a re-run claim's ``reason`` that mean the replay hit a budget, not a different answer
BUDGET_WORDS = ("timeout", "time limit", "budget")

_NODE_COPY = re.compile(r"^nodes\[(\d+)\]\.numeric(\.|$)")


def name_copies(probs: list[tuple[str, str]], body: dict) -> list[tuple[str, str]]:
    """A node's ``numeric`` is the replay's copy of ``numeric.nodes.<node>`` (a measured field), so a
    difference there means the two stored copies disagree: say so, naming the measured section,
    instead of "the replay gives" (which would put the edited value on the replay's side)."""
    out = []
    for p, m in probs:
        hit = _NODE_COPY.match(p)
        if hit:
            nodes = body.get("nodes")
            i = int(hit.group(1))
            ok = isinstance(nodes, list) and i < len(nodes) and isinstance(nodes[i], dict)
            name = nodes[i].get("node") if ok else None
            m = m.replace("the replay gives", f"but numeric.nodes.{name} (the measured result it copies) has")
        out.append((p, m))
    return out


_CLAIM_PATH = re.compile(r"^claims\[(\d+)\]")
_NODE_STATUS = re.compile(r"^nodes\[(\d+)\]\.status$")


def only_stopped_claims(body: dict, probs: list[tuple[str, str]]) -> bool:
    """Whether every difference lies where a stored claim stopped by a solver budget may replay
    decided: inside such a claim (``claims[k]``, stored ``unknown`` with a budget reason), the status
    of a node of such a claim, or the top-level status when it is stored ``unknown``.  Anything else
    (an edited proved claim, a bound, a top-level "proved") stays "invalid"."""
    claims = body.get("claims") if isinstance(body.get("claims"), list) else []
    stopped = {k for k, cl in enumerate(claims) if isinstance(cl, dict) and cl.get("status") == "unknown"
               and isinstance(cl.get("reason"), str) and any(w in cl["reason"] for w in BUDGET_WORDS)}
    ids = {claims[k].get("id") for k in stopped}
    nodes = body.get("nodes") if isinstance(body.get("nodes"), list) else []
    for p, _ in probs:
        c, nd = _CLAIM_PATH.match(p), _NODE_STATUS.match(p)
        if c and int(c.group(1)) in stopped:
            continue
        if nd and int(nd.group(1)) < len(nodes) and isinstance(nodes[int(nd.group(1))], dict) \
                and nodes[int(nd.group(1))].get("claim") in ids:
            continue
        if p == "status" and body.get("status") == "unknown":
            continue
        return False
    return True
