"""Numeric confirmation of a model certificate (measured; THEORY §6, §7), and its consistency checks.

:func:`observe_model` runs the float64 model hard and soft at the certified temperature on every
input family of :func:`model_families` against the exact hard model: per output node the worst
|soft − hard| against the composed bound, per head its written error against the head's bound,
and the rounded outputs that differ.  A numeric run confirms or refutes, never proves; in a
certificate the whole ``numeric`` section is *measured* (the schema's ``x-measured``) and
:func:`check_numeric` checks it against itself and the re-derived bounds.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import sympy as sp

from ..bounds.derive import evaluate
from ..constructions.exact import to_float
from ..constructions.exact_balls import exact_engine
from ..constructions.gaps import GapReport, all_tokens, read_rows
from ..constructions.words import count_words
from ..constructions.engine import forward
from ..constructions.errors import ParameterError
from ..constructions.hard_model import HardModel
from ..constructions.parameters import check_keywords, to_count
from .pipeline import Construction
from .replay import VerifyReport


def allowance_abs(x: np.ndarray) -> float:
    """Float64 allowance for an observed |soft − hard| difference: ``2^-40·(1 + max|x|)``
    (heuristic; numerics confirm, never prove: THEORY §7)."""
    return float(2.0**-40 * (1.0 + float(np.max(np.abs(x))) if x.size else 1.0))


#: the default plan of a model's numeric confirmation (``numeric_opts`` overrides any key).
#: ``exhaustive_words`` is a cap: every word of length 1..L for the largest L whose count stays
#: within it (over {a, b}: lengths 1..11, 4094 words; the certificate's ``numeric.families`` holds
#: the count that ran)
MODEL_PLAN_DEFAULTS = {"exhaustive_words": 4096, "random_count": 400, "random_n_max": 256, "seed": 0}
#: the fixed descriptions in a model certificate's numeric section (verify compares them)
MODEL_NUMERIC_TEXTS = {
    "mismatches_count": "positions whose rounded output differs from the hard model's; 'unguarded': on "
                        "outputs whose margin is <= epsilon (rounding not claimed)",
    "note": ("observed = max over words and positions of |soft - hard| on the output coordinates (float64); "
             "a numeric run confirms or refutes, never proves (THEORY §7)"),
}


def model_plan(opts: dict | None = None) -> dict:
    """The plan of a model's numeric confirmation: :data:`MODEL_PLAN_DEFAULTS` updated by ``opts``,
    every value read as the command line reads a count (``exhaustive_words``, ``random_count``,
    ``seed`` integers >= 0, ``random_n_max`` >= 1).  Raises :class:`ParameterError` for options that
    are not a dict, an unknown option (naming it and the accepted ones) or a bad value (naming it)."""
    if opts is not None and not isinstance(opts, dict):
        raise ParameterError(f"numeric options must be a dict (keys: {', '.join(MODEL_PLAN_DEFAULTS)}), got "
                             f"{type(opts).__name__} {repr(opts)[:40]}")
    opts = dict(opts or {})
    check_keywords("numeric options", opts, MODEL_PLAN_DEFAULTS)
    return {k: to_count(v, k, minimum=1 if k == "random_n_max" else 0)
            for k, v in {**MODEL_PLAN_DEFAULTS, **opts}.items()}


def _exhaustive_top(k: int, n_max: int, exhaustive_words: int) -> int:
    """The longest length of a model's exhaustive family: every word up to it, at most
    ``exhaustive_words`` words in all (0: none)."""
    top = 0
    while top < n_max and count_words(k, top + 1, cap=exhaustive_words) <= exhaustive_words:
        top += 1
    return top


def _random_grid(random_n_max: int, n_max: int) -> list[int]:
    """The ≤ 16 log-spaced lengths of a model's random family."""
    top = min(random_n_max, n_max)
    return sorted({max(1, int(round(top ** (t / 15)))) for t in range(16)})


def _adversarial(report: GapReport) -> list[tuple]:
    """The gap-attaining words of the gap report (each once, in order)."""
    adv = []
    for h in report.heads.values():
        for w in (h.word, h.word_untied):
            if w is not None:
                adv.append(tuple(w))
    for o in report.outputs.values():
        if o.word is not None:
            adv.append(tuple(o.word))
    return list(dict.fromkeys(adv))


def model_families(c: Construction, report: GapReport, n_max: int, *, exhaustive_words: int = 4096,
                   random_count: int = 400, random_n_max: int = 256, seed: int = 0) -> dict[str, list]:
    """Input families for the numeric confirmation: every word up to the length where the count
    exceeds ``exhaustive_words``; random words on a log grid of lengths; the gap-attaining words.
    Returns ``{family: words}`` (tuples of alphabet symbols)."""
    alph = c.model.alphabet
    k = len(alph)
    exh = []
    for L in range(1, _exhaustive_top(k, n_max, exhaustive_words) + 1):
        for tok in all_tokens(k, L):
            exh.extend(tuple(alph[t - 1] for t in row) for row in tok)
    rng = np.random.default_rng(seed)
    grid = _random_grid(random_n_max, n_max)
    per = max(1, random_count // len(grid))
    rnd = [tuple(alph[int(i)] for i in rng.integers(0, k, size=L)) for L in grid for _ in range(per)]
    fams = {"exhaustive": exh, "random": rnd, "adversarial": _adversarial(report)}
    return {k_: v for k_, v in fams.items() if v}


def planned_families(c: Construction, report: GapReport, n_max: int, plan: dict) -> dict[str, tuple[int, set[int]]]:
    """What :func:`model_families` gives for ``plan``, without generating a random or exhaustive
    word: per family, ``(number of words, their lengths)``."""
    k = len(c.model.alphabet)
    top = _exhaustive_top(k, n_max, plan["exhaustive_words"])
    grid = _random_grid(plan["random_n_max"], n_max)
    adv = _adversarial(report)
    out = {"exhaustive": (count_words(k, top) if top else 0, set(range(1, top + 1))),
           "random": (max(1, plan["random_count"] // len(grid)) * len(grid), set(grid)),
           "adversarial": (len(adv), {len(w) for w in adv})}
    return {f: v for f, v in out.items() if v[0]}


def observe_model(c: Construction, families: dict[str, list], inv_tau: float, progress=None,
                  head_bounds: dict[str, sp.Expr] | None = None, guarded: set[str] | None = None) -> dict:
    """Run the float model hard and soft at ``inv_tau`` on every family; per output node and length,
    the largest |soft − hard| over the output coordinates at every position, against the bound.

    ``head_bounds`` (head name → the head's written-error bound, an expression in n and τ): also
    report, per head, the largest observed |soft output − hard output|·W_O (each on its own run's
    residual stream, as in THEORY §6) against it (key ``heads``).

    ``guarded``: names of the boolean/categorical outputs whose rounded values the certificate
    claims equal to the hard model's (ε below their margin; default all).  A rounded output that
    differs on any other output is counted in ``mismatched_outputs_unguarded`` and is no failure:
    with ε ≥ margin the claim never said it would round equal."""
    hm: HardModel = c.model.meta["hard_model"]
    eng = exact_engine(hm)
    labels = c.model.labels
    it_frac = Fraction(inv_tau)
    per_node: dict[str, list[dict]] = {v: [] for v in c.bounds}
    per_head: dict[str, dict] = {}
    wo = {h.name: h.W_O for b in c.model.blocks for h in b.heads}
    mismatches = 0
    unguarded = 0
    max_dev = 0.0
    words_per_family = {}
    for fam, words in families.items():
        if progress:
            progress(fam)
        words_per_family[fam] = len(words)
        by_len: dict[int, list] = {}
        for w in words:
            by_len.setdefault(len(w), []).append(w)
        for L, ws in sorted(by_len.items()):
            if progress:
                progress(f"{fam}, length {L} ({len(ws)} word(s)): the soft and hard runs and the bounds evaluated "
                         f"at n = {L}")
            for b0 in range(0, len(ws), 512):
                chunk = ws[b0:b0 + 512]
                tok = c.model.encode(chunk)
                ex = eng.run(tok, keep_written=bool(head_bounds), f64_scale=False)  # the exact hard reference
                hard_x = to_float(ex.x)
                soft = forward(c.model, tok, mode="soft", inv_tau=inv_tau)
                allow = allowance_abs(hard_x)
                for name, hb in (head_bounds or {}).items():
                    dw = np.abs(soft.heads[name].soft[:, 1:] @ wo[name] - to_float(ex.written[name])[:, 1:])
                    ob = float(dw.max()) if dw.size else 0.0
                    bd = float(evaluate(hb, n_value=L, inv_tau=it_frac))
                    cur = per_head.setdefault(name, {"worst_ratio": 0.0, "observed": 0.0, "bound": bd, "n": L,
                                                     "allowance_abs": allow, "violations": 0})
                    r = _order(_ratio(ob, bd))
                    if ob > bd + allow:
                        cur["violations"] += 1
                    if r >= _order(cur["worst_ratio"]):
                        cur.update(worst_ratio=_ratio(ob, bd), observed=ob, bound=bd, n=L, allowance_abs=allow)
                for o in hm.outputs:
                    node = f"out:{o.name}"
                    cols = [labels.index(hm.labels[k]) for k in o.coords]
                    diff = np.abs(soft.x[:, 1:, cols] - hard_x[:, 1:, cols]).max(axis=2)
                    bi, ri = np.unravel_index(int(np.argmax(diff)), diff.shape)
                    obs = float(diff[bi, ri])
                    bd = float(c.bounds[node].value(L, it_frac, c.beta, c.tolerance))
                    if bd == 0 and obs <= allow:
                        obs = 0.0  # below float64 resolution (THEORY §7): not an observation of error
                    max_dev = max(max_dev, obs)
                    per_node[node].append({"family": fam, "n": L, "inputs": len(chunk), "observed": obs, "bound": bd,
                                           "allowance_abs": allow, "word": " ".join(chunk[bi]), "row": int(ri) + 1})
                    rows = [r for r in read_rows(o.at, L)]
                    differ = 0
                    if o.type == "boolean":
                        th = float(o.threshold)
                        hs, ss = hard_x[:, rows, cols[0]] > th, soft.x[:, rows, cols[0]] > th
                        differ = int(np.sum(hs != ss))
                    elif o.type == "categorical":
                        ha = np.argmax(hard_x[:, rows][..., cols], axis=-1)
                        sa = np.argmax(soft.x[:, rows][..., cols], axis=-1)
                        differ = int(np.sum(ha != sa))
                    if guarded is None or o.name in guarded:
                        mismatches += differ
                    else:
                        unguarded += differ
    nodes = {}
    for node, rows in per_node.items():
        if not rows:
            continue
        def ratio(r):
            return _ratio(r["observed"], r["bound"])
        w = max(rows, key=lambda r: _order(ratio(r)))
        viol = sum(r["observed"] > r["bound"] + r["allowance_abs"] for r in rows)
        nodes[node] = {
            "inputs": sum(r["inputs"] for r in rows), "worst_observed": w["observed"], "bound_there": w["bound"],
            "ratio": ratio(w), "at_n": w["n"], "family": w["family"],
            "word": w["word"] if len(w["word"]) <= 64 else w["word"][:61] + "...", "row": w["row"],
            "allowance_rel": (w["allowance_abs"] / w["bound"]) if w["bound"] > 0 else 0.0,
            "violations": viol,
            "max_ratio_by_family": {f: max((ratio(r) for r in rows if r["family"] == f), key=_order)
                                    for f in dict.fromkeys(r["family"] for r in rows)},
            "max_observed": max(r["observed"] for r in rows),
        }
    ok = (all(v["violations"] == 0 for v in nodes.values()) and mismatches == 0
          and all(v["violations"] == 0 for v in per_head.values()))
    return {"inv_tau_float": float(inv_tau), "families": words_per_family, "mismatched_outputs": mismatches,
            "mismatched_outputs_unguarded": unguarded,
            "mismatches_count": MODEL_NUMERIC_TEXTS["mismatches_count"],
            "max_output_deviation": max_dev, "ok": ok, "nodes": nodes, "heads": per_head,
            "note": MODEL_NUMERIC_TEXTS["note"]}




def _ratio(observed: float, bound: float) -> float | None:
    """observed/bound; 0.0 for nothing observed under a zero bound; None (strict JSON has no
    infinity) for an observation above a zero bound — the largest of all ratios (:func:`_order`)."""
    return observed / bound if bound > 0 else (0.0 if observed == 0 else None)


def _order(r: float | None) -> float:
    """A ratio as a sort key: None (an observation above a zero bound) above every number."""
    return math.inf if r is None else r


def check_numeric(num: dict | None, c: Construction, head_bounds: dict[str, sp.Expr], inv_tau: Fraction,
                  rep: VerifyReport, *, report: GapReport, n_max: int) -> None:
    """The model-specific consistency of a measured ``numeric`` section (the shared checks of the
    per-node summary — bound there, ratio, the worst family's ratio, violations, ``ok`` — run
    first): it was run at the certified 1/τ; its families are the ones its plan (``numeric.plan``;
    the default one when missing) gives with the gap report (:func:`model_families`, re-derived
    without running: word counts compared); every output node saw every input; each worst
    observation is at a length of its family; ``max_output_deviation`` is the largest node
    observation; no unguarded mismatch is counted when every output is guarded (ε below its margin);
    the descriptions are the fixed texts; and per head the stored bound is the head's
    bound at the stored length (a length of the run), the ratio is observed/bound, an observation
    above the bound (plus its float64 allowance) is counted as a violation, and ``ok`` is false
    if one is."""
    if not num:
        return
    if not math.isclose(float(num["inv_tau_float"]), float(inv_tau), rel_tol=1e-12):
        rep.add("numeric.inv_tau_float", f"{num['inv_tau_float']!r} is not the certified 1/tau {float(inv_tau)!r}")
    for k, text in MODEL_NUMERIC_TEXTS.items():
        if num.get(k) != text:
            rep.add(f"numeric.{k}", "is not the fixed description")
    plan = num.get("plan", MODEL_PLAN_DEFAULTS)
    if not isinstance(plan, dict) or set(plan) != set(MODEL_PLAN_DEFAULTS) or not all(
            isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= 10**6 for x in plan.values()):
        rep.add("numeric.plan", f"is not a plan: an object with the keys {', '.join(MODEL_PLAN_DEFAULTS)} and "
                                "integers in [0, 10^6]")
        return
    fams = planned_families(c, report, n_max, plan)
    want = {f: x[0] for f, x in fams.items()}
    if num["families"] != want:
        rep.add("numeric.families", f"is {num['families']!r}, the plan gives {want!r}")
    lens = {f: x[1] for f, x in fams.items()}
    total = sum(int(v) for v in num["families"].values())
    for v, s in num["nodes"].items():
        if s["inputs"] != total:
            rep.add(f"numeric.nodes.{v}.inputs", f"{s['inputs']} inputs, but the families hold {total}")
        if s["max_observed"] < s["worst_observed"]:
            rep.add(f"numeric.nodes.{v}.max_observed", "is below the worst observation")
        if s["at_n"] not in lens.get(s["family"], ()):
            rep.add(f"numeric.nodes.{v}.at_n", f"{s['at_n']!r} is not a length of the family {s['family']!r}")
    for v in c.bounds:
        if v not in num["nodes"]:
            rep.add("numeric.nodes", f"no result for output node {v!r}")
    top = max((s["max_observed"] for s in num["nodes"].values()), default=0.0)
    if num["max_output_deviation"] != top:
        rep.add("numeric.max_output_deviation", f"is {num['max_output_deviation']!r}, the nodes' largest observation "
                                                f"is {top!r}")
    all_lens = set().union(*lens.values()) if lens else set()
    guarded = {o.name for o in report.outputs.values() if o.margin is not None and c.params.epsilon < o.margin}
    if num["mismatched_outputs_unguarded"] and guarded >= set(report.outputs):
        rep.add("numeric.mismatched_outputs_unguarded", "counts mismatches on unguarded outputs, but epsilon is below "
                                                        "every output's margin (every output is guarded)")
    if head_bounds and "heads" not in num:
        rep.add("numeric.heads", "missing: the model has heads")
    it = Fraction(num["inv_tau_float"])
    heads = num.get("heads") or {}
    for h, s in heads.items():
        where = f"numeric.heads.{h}"
        if h not in head_bounds:
            rep.add(where, "not a head of the model")
            continue
        if s["n"] not in all_lens:
            rep.add(f"{where}.n", f"{s['n']!r} is not a length of the run")
        bd = float(evaluate(head_bounds[h], n_value=int(s["n"]), inv_tau=it))
        if abs(bd - s["bound"]) > 1e-12 * max(abs(bd), 1e-300):
            rep.add(f"{where}.bound", f"stored {s['bound']!r} but the head's bound at n = {s['n']} is {bd!r}")
        r = _ratio(s["observed"], s["bound"])
        if (r is None) != (s["worst_ratio"] is None) or (r is not None and abs(r - s["worst_ratio"]) > 1e-9 * max(1.0, abs(r))):
            rep.add(f"{where}.worst_ratio", f"stored {s['worst_ratio']!r} but observed/bound = {r!r}")
        if s["observed"] > s["bound"] + s["allowance_abs"] and s["violations"] == 0:
            rep.add(f"{where}.violations", "the observation exceeds the bound but no violation is recorded")
    for h in head_bounds:
        if heads and h not in heads:
            rep.add("numeric.heads", f"no result for head {h!r}")
    if num["ok"] and any(s["violations"] for s in heads.values()):
        rep.add("numeric.ok", "says ok but a head's bound was exceeded")
