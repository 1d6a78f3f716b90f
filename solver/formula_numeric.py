"""The numeric confirmation of a formula certificate (measured; THEORY §7, §8) and verify's checks
of it (docs/certificates.md, "Measured fields").

:func:`numeric_section` runs the soft and hard transformers on the input families of its *plan*
(:func:`resolve_plan`: exhaustive words up to a length, random words on a log grid of lengths
with a fixed seed, adversarial words at a few lengths, each head alone on its attaining key
patterns) and summarises per node.  The plan is written into the section (``numeric.plan``) and
everything it fixes before any run — which families exist, how many words the exhaustive, random
and key-pattern families hold, and every family's length range — is re-derived by
:func:`check_numeric` in closed form (no word is generated and nothing is run, so verify stays
cheap).  The adversarial family's words are *chosen* by running the model (the periodic word with
the largest leak per head), so its size is a measurement, bounded by the plan.  Every other field
is a measurement and is checked for consistency with the others and with the re-derived bounds.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable

from ..bounds.confirm import attention_ancestors, confirm, key_patterns
from ..constructions.counting import adversarial_layernorm_words, layernorms
from ..constructions.engine import reuse_memory
from ..constructions.errors import ParameterError
from ..constructions.parameters import DEFAULT_MAX_POSITIONS, check_keywords, to_count
from ..constructions.simulate import adversarial_words, all_words, random_words
from .pipeline import Construction
from .replay import VerifyReport

#: the default plan of the numeric confirmation (``certify``; ``numeric_opts`` overrides any key).
#: ``key_pattern_ns`` None: 2, n_max/100 and n_max, capped at 10^5 (:func:`resolve_plan`)
PLAN_DEFAULTS = {"exhaustive_len": 10, "random_count": 1000, "random_n_max": 500,
                 "adversarial_ns": [10, 100, 1000, 10000], "seed": 0, "key_pattern_ns": None}
#: a formula's largest |soft − hard| clean output when every node's leak is within η: the clean-up
#: ``round_η`` maps [0, η] → 0 and [1−η, 1] → 1 exactly (THEORY §3), so only float64 rounding of
#: its ReLU terms (a few ulps of 1) remains; verify rejects a recorded deviation above this
CLEANUP_SLACK = 1e-12
#: the exhaustive family stops before the first length with more words than this
EXHAUSTIVE_WORDS = 50_000
#: the fixed descriptions in a certificate's numeric section (verify compares them)
NUMERIC_TEXTS = {
    "worst_means": "per node, the check with the largest observed/bound ratio (largest_leak: the largest leak)",
    "mismatches_count": "positions (word, position) whose clean output differs from the hard model; "
                        "'unguarded': at a length where some node's bound exceeds eta (not claimed exact)",
    "note": "a numeric run confirms or refutes, never proves (THEORY §7)",
}


def resolve_plan(n_max: int, opts: dict | None = None) -> dict:
    """The numeric confirmation's plan: :data:`PLAN_DEFAULTS` updated by ``opts``, every value
    checked (:func:`check_plan_value`), lists for the lengths, and ``key_pattern_ns`` resolved from
    ``n_max`` when None (the binding length capped at 10^5 and two smaller ones).  Raises
    :class:`ParameterError` for an unknown option (naming it and the accepted ones) or a bad
    value (naming the option).  Pure: a function of its arguments only."""
    if opts is not None and not isinstance(opts, dict):
        raise ParameterError(f"numeric options must be a dict (keys: {', '.join(PLAN_DEFAULTS)}), got "
                             f"{type(opts).__name__} {repr(opts)[:40]}")
    opts = dict(opts or {})
    check_keywords("numeric options", opts, PLAN_DEFAULTS)
    plan = {k: check_plan_value(k, v) for k, v in {**PLAN_DEFAULTS, **opts}.items()}
    if plan["key_pattern_ns"] is None:
        top = min(n_max, 10**5)
        plan["key_pattern_ns"] = sorted({k for k in (2, max(2, top // 100), top) if k <= n_max})
    return plan


def check_plan_value(key: str, value):
    """One option of the plan, read as the command line reads it (:func:`to_count`): the counts
    ``exhaustive_len``, ``random_count`` and ``seed`` integers >= 0, ``random_n_max`` >= 1, the
    lengths ``adversarial_ns`` (and ``key_pattern_ns``, or None: resolved from n_max) a list or tuple
    of integers >= 1.  Raises :class:`ParameterError` naming ``key``."""
    if key in ("adversarial_ns", "key_pattern_ns"):
        if value is None and key == "key_pattern_ns":
            return None
        if not isinstance(value, (list, tuple, range)):
            raise ParameterError(f"{key} must be a list or tuple of lengths (integers >= 1), got "
                                 f"{type(value).__name__} {repr(value)[:40]}")
        return [to_count(k, f"{key}[{i}]") for i, k in enumerate(value)]
    return to_count(value, key, minimum=1 if key == "random_n_max" else 0)


def exhaustive_top(alphabet_size: int, exhaustive_len: int, n_max: int) -> int:
    """The longest length of the exhaustive family (0: none): every word of each length
    1..top, stopping before the first length with more than :data:`EXHAUSTIVE_WORDS` words."""
    cap = min(exhaustive_len, n_max)
    if alphabet_size <= 1:
        return max(cap, 0)
    top = 0
    while top < cap and alphabet_size ** (top + 1) <= EXHAUSTIVE_WORDS:
        top += 1
    return top


def random_grid(random_n_max: int, n_max: int) -> list[int]:
    """The lengths of the random family: ≤ 32 distinct values, log-spaced up to
    ``min(random_n_max, n_max)`` (one batch per length)."""
    top = min(random_n_max, n_max)
    return sorted({max(1, int(round(top ** (k / 31)))) for k in range(32)})


def numeric_families(c: Construction, n_max: int, inv_tau: float | Callable[[int], float], *, exhaustive_len: int = 10,
                     random_count: int = 1000, random_n_max: int = 500, adversarial_ns=(10, 100, 1000, 10000),
                     seed: int = 0) -> dict[str, list]:
    """The input families of the numeric confirmation (issue 2 item 7), capped by ``n_max``:
    ``{family: words}`` (words: tuples of alphabet symbols).  The exhaustive and random families
    are fixed by the plan (:func:`exhaustive_top`, :func:`random_grid`); the adversarial one is
    searched by running the model at ``inv_tau`` (a float or a function of n)."""
    alph = c.model.alphabet
    exh = []
    for k in range(1, exhaustive_top(len(alph), exhaustive_len, n_max) + 1):
        exh.extend(all_words(alph, k))
    rnd = []
    if random_count:
        grid = random_grid(random_n_max, n_max)
        per = max(1, random_count // len(grid))
        for k, L in enumerate(grid):
            rnd.extend(random_words(alph, per, L, seed=seed + k, n_min=L))
    adv: list = []
    for k in sorted({min(k, n_max) for k in adversarial_ns}):
        adv.extend(dict.fromkeys(adversarial_words(c.model, k, inv_tau(k) if callable(inv_tau) else inv_tau).values()))
        adv.extend(dict.fromkeys(adversarial_layernorm_words(c.model, k).values()))  # LN comparators
    fams = {"exhaustive": exh, "random": rnd, "adversarial": list(dict.fromkeys(adv))}
    return {k: v for k, v in fams.items() if v}


def numeric_section(c: Construction, n_max: int, inv_tau: Fraction, opts: dict, progress=None,
                    max_positions: int | None = DEFAULT_MAX_POSITIONS) -> dict:
    """Run the numeric confirmation of ``c`` at ``inv_tau`` (under a schedule, ``S``: each run at
    ``S·g(n)``) on the plan ``resolve_plan(n_max, opts)`` and return the certificate's
    ``numeric`` section (measured; the plan is stored in it).  Before any run, the work is
    estimated (:func:`work_estimate` of :func:`planned_lengths`, dense-path work included) and
    refused above ``max_positions`` (None: no limit) with :class:`ParameterError` naming
    ``--max-positions``; also for an unknown option or a bad value (:func:`resolve_plan`)."""
    it = float(inv_tau)
    # under a schedule (THEORY §9) every run uses 1/τ(n) = S·g(n) at its own length n
    run_it = it if c.params.schedule is None else (lambda k: c.params.inv_tau_at(k, inv_tau))
    plan = resolve_plan(n_max, opts)
    if max_positions is not None:
        pos, dense = work_estimate(c, planned_lengths(c, n_max, plan),
                                   run_it if callable(run_it) else (lambda k: it))
        check_work(pos, dense, max_positions, "lower --n-max, give --no-numeric")
    with reuse_memory():  # freed arrays reused, no huge-page compaction (engine.reuse_memory; same values)
        fams = numeric_families(c, n_max, run_it, **{k: v for k, v in plan.items() if k != "key_pattern_ns"})
        conf = confirm(c.model, c.bounds, fams, run_it, beta=c.beta, eta=c.eta, progress=progress,
                       key_pattern_ns=plan["key_pattern_ns"])
    per_node = conf.summary(word_chars=64)
    lengths = {f: [min(x.n for x in conf.checks if x.family == f), max(x.n for x in conf.checks if x.family == f)]
               for f in dict.fromkeys(x.family for x in conf.checks)}
    return {"inv_tau_float": it, "plan": plan, "families": conf.words, "lengths": lengths,
            "worst_means": NUMERIC_TEXTS["worst_means"],
            "mismatched_outputs": sum(len(v) for v in conf.mismatches.values()),
            "mismatched_outputs_unguarded": sum(len(v) for v in conf.unguarded_mismatches.values()),
            "mismatches_count": NUMERIC_TEXTS["mismatches_count"],
            "premise_failures": conf.premise_failures,
            "max_output_deviation": conf.max_output_deviation, "ok": conf.ok, "nodes": per_node,
            "note": NUMERIC_TEXTS["note"]}


#: dense-path attention score entries that cost about one structured word position of the whole
#: model (the unit of ``--max-positions``).  ``python benchmarks/dense_cost.py`` measured 84 (n = 2000)
#: and 163 (``--n 4000 --words 2 --reps 3``) on tomita4; 64 counts dense work up to ~2.5x high
DENSE_ENTRIES_PER_POSITION = 64
#: most lengths at which :func:`warm_lengths` evaluates the bounds
WARM_PROBES = 200


def warm_lengths(c: Construction, lengths, inv_tau: Callable[[int], float]) -> set[int]:
    """The lengths among ``lengths`` (ints) at which some node's bound exceeds η at ``1/τ(n)``:
    there the clean-ups need not be exact, so the keys of later heads need not be Boolean and
    those heads may fall back from the O(n) structured path to the dense O(n²) one (THEORY §3, §7).
    With more than :data:`WARM_PROBES` distinct lengths, the bounds are evaluated at that many of
    them (quantiles) and each length takes the verdict of the next probe at or above it (a bound at
    a fixed τ grows with n)."""
    ls = sorted(set(lengths))
    if not ls or not c.bounds:
        return set()
    probe = ls if len(ls) <= WARM_PROBES else sorted(
        {ls[round((len(ls) - 1) * k / (WARM_PROBES - 1))] for k in range(WARM_PROBES)})
    eta = float(c.tolerance)
    warm = {n: any(float(b.value(n, Fraction(inv_tau(n)), c.beta, c.tolerance)) > eta for b in c.bounds.values())
            for n in probe}
    out, j = set(), 0
    for n in ls:
        while probe[j] < n:
            j += 1
        if warm[probe[j]]:
            out.add(n)
    return out


def work_estimate(c: Construction, words_by_length: dict[int, int],
                  inv_tau: Callable[[int], float]) -> tuple[int, float]:
    """``(positions, dense)``: the word positions (BOS included) of a run over ``words_by_length``
    (``{n: number of words}``), and the dense-path work in the same unit — per word of a warm
    length n (:func:`warm_lengths`), ``(n+1)²`` score entries for each head after the first layer
    with heads (those read earlier heads' clean-ups), over :data:`DENSE_ENTRIES_PER_POSITION`."""
    positions = sum(k * (n + 1) for n, k in words_by_length.items())
    layers = [len(b.heads) for b in c.model.blocks if b.heads]
    later = sum(layers[1:])
    if not later:
        return positions, 0.0
    warm = warm_lengths(c, words_by_length, inv_tau)
    dense = sum(k * (n + 1) ** 2 for n, k in words_by_length.items() if n in warm) * later
    return positions, dense / DENSE_ENTRIES_PER_POSITION


def planned_lengths(c: Construction, n_max: int, plan: dict) -> dict[int, int]:
    """``{n: words}`` the plan runs the whole model on (closed form): the exhaustive and random
    families, and at each adversarial length the periodic candidates searched (period ≤ 3) plus up
    to two chosen words per head and one per LN comparator (the key-pattern runs are single heads
    on the structured path)."""
    k = len(c.model.alphabet)
    out: dict[int, int] = {}
    for n in range(1, exhaustive_top(k, int(plan["exhaustive_len"]), n_max) + 1):
        out[n] = out.get(n, 0) + k ** n
    if plan["random_count"]:
        grid = random_grid(int(plan["random_n_max"]), n_max)
        for n in grid:
            out[n] = out.get(n, 0) + max(1, int(plan["random_count"]) // len(grid))
    cands = sum(k ** p for p in range(1, 4)) + 2 * sum(len(b.heads) for b in c.model.blocks) + len(layernorms(c.model))
    for n in {min(int(x), n_max) for x in plan["adversarial_ns"]}:
        out[n] = out.get(n, 0) + cands
    return out


def check_work(positions: int, dense: float, max_positions: int, advice: str, parts: str = "",
               colder: str = "choose a colder --tau", limit: str = "raise --max-positions") -> None:
    """Raise :class:`ParameterError` naming ``--max-positions`` (one line, with the estimate) when
    ``positions + dense`` exceeds ``max_positions``; ``advice``: what else lowers the work;
    ``colder``: the advice added when dense-path work is part of it (a colder temperature removes
    it); ``limit``: how to raise the limit; ``parts``: the positions' breakdown, as text."""
    total = positions + dense
    if total > max_positions:
        shown = f"about {total:.3g}" if total < 1e300 else "more than 1e300"  # an integer beyond float64 (--n-max 1e400)
        warm = (f"dense attention path {dense:.3g}: at lengths where the temperature is too warm for the bounds, "
                "some node's bound > eta and later heads' keys are not Boolean") if dense else ""
        detail = ", ".join(x for x in (parts, warm) if x)
        ways = [x for x in (advice, colder if dense else "", limit) if x]
        hint = ", ".join(ways[:-1]) + ", or " + ways[-1] if len(ways) > 1 else ways[0]
        raise ParameterError(f"this numeric confirmation would run {shown} word positions"
                             + (f" ({detail})" if detail else "")
                             + f", more than --max-positions {max_positions:.3g}; {hint}")


def _keyed(c: Construction) -> list[str]:
    """The bounded nodes with a key (the heads run alone on their key patterns)."""
    g = c.model.meta.get("graph")
    return [v for v in c.bounds if g is not None and v in g and g.nodes[v].get("key") is not None]


def planned(c: Construction, n_max: int, plan: dict) -> tuple[dict[str, int | None], dict[str, list[int]]]:
    """What ``plan`` fixes before any run: ``(words, lengths)`` — per family the number of words
    (None for ``adversarial``: chosen by running the model) and the ``[shortest, longest]``
    length of its checks.  Closed form: no word is generated.  Raises ``KeyError``/``TypeError``
    for a malformed plan."""
    words: dict[str, int | None] = {}
    lengths: dict[str, list[int]] = {}
    key_ns = [int(k) for k in plan["key_pattern_ns"]]
    keyed = _keyed(c)
    if key_ns:
        words["adversarial-key"] = 2 * len(key_ns) * len(c.bounds)
        if keyed:
            lengths["adversarial-key"] = [min(key_ns), max(key_ns)]
    k = len(c.model.alphabet)
    top = exhaustive_top(k, int(plan["exhaustive_len"]), n_max)
    if top:
        words["exhaustive"] = top if k == 1 else (k ** (top + 1) - k) // (k - 1)
        lengths["exhaustive"] = [1, top]
    if plan["random_count"]:
        grid = random_grid(int(plan["random_n_max"]), n_max)
        words["random"] = max(1, int(plan["random_count"]) // len(grid)) * len(grid)
        lengths["random"] = [grid[0], grid[-1]]
    adv_ns = sorted({min(int(x), n_max) for x in plan["adversarial_ns"]})
    if adv_ns and adversarial_cap(c, plan, n_max):
        words["adversarial"] = None
        lengths["adversarial"] = [adv_ns[0], adv_ns[-1]]
    if not c.bounds:
        lengths = {}
    return words, lengths


def adversarial_cap(c: Construction, plan: dict, n_max: int) -> int:
    """The most words the adversarial family can hold: per planned length, one word per head and
    per average-hard head one more (its output word), and one per LN comparator."""
    heads = sum(len(b.heads) for b in c.model.blocks)
    per = 2 * heads + len(layernorms(c.model))
    return per * len({min(int(x), n_max) for x in plan["adversarial_ns"]})


# --------------------------------------------------------------------------------------------
# verify: the measured section's consistency (docs/certificates.md, "Measured fields")


def check_nodes(num: dict, c: Construction, rep: VerifyReport) -> None:
    """Checks of the per-node summary shared by the formula and model kinds: each node is a node
    of the construction; its bound re-evaluated at its worst check's length (and 1/τ there, under a
    schedule); ratio = worst_observed/bound_there; ``max_ratio_by_family`` names families of the
    run and its largest value is the ratio (the worst check is the largest over the same checks);
    an observation above the bound (beyond its allowance) is a violation unless its premise failed
    (the premise names an attention ancestor observed above η); ``ok`` is "no violation and no
    guarded mismatch"."""
    inv_tau = Fraction(num["inv_tau_float"])
    fams = num.get("families") or {}
    for v, s in (num.get("nodes") or {}).items():
        if v not in c.bounds:
            rep.add(f"numeric.nodes.{v}", "unknown node")
            continue
        it_n = inv_tau if c.params.schedule is None else Fraction(c.params.inv_tau_at(s["at_n"], inv_tau))
        bd = float(c.bounds[v].value(s["at_n"], it_n, c.beta, c.tolerance))
        if abs(bd - s["bound_there"]) > 1e-12 * max(abs(bd), 1e-300):
            rep.add(f"numeric.nodes.{v}.bound_there", f"stored {s['bound_there']!r} but the bound at n = {s['at_n']} "
                                                      f"is {bd!r}")
        if s["bound_there"] > 0:
            exp_ratio = s["worst_observed"] / s["bound_there"]
        else:
            exp_ratio = 0.0 if s["worst_observed"] == 0 else None
        if (exp_ratio is None) != (s["ratio"] is None) or (
                exp_ratio is not None and abs(exp_ratio - s["ratio"]) > 1e-9 * max(1.0, abs(exp_ratio))):
            rep.add(f"numeric.nodes.{v}.ratio", f"stored {s['ratio']!r} but worst_observed/bound_there = {exp_ratio!r}")
        if s["family"] not in fams:
            rep.add(f"numeric.nodes.{v}.family", f"{s['family']!r} is not a family of the run ({', '.join(sorted(fams))})")
        mr = s["max_ratio_by_family"]
        if not set(mr) <= set(fams):
            rep.add(f"numeric.nodes.{v}.max_ratio_by_family", f"names families the run does not have "
                                                              f"({', '.join(sorted(set(mr) - set(fams)))})")
        known = [x for x in mr.values() if x is not None]
        if s["ratio"] is not None and (max(known, default=None) != s["ratio"] or mr.get(s["family"]) != s["ratio"]):
            rep.add(f"numeric.nodes.{v}.max_ratio_by_family", f"its largest value ({max(known, default=None)!r}) or "
                                                              f"the value of the worst check's family "
                                                              f"({mr.get(s['family'])!r}) is not the ratio "
                                                              f"{s['ratio']!r}")
        allow = s["allowance_rel"]  # None: infinite (no float64 rounding guarantee, refutes nothing)
        viol = allow is not None and s["worst_observed"] > s["bound_there"] * (1 + allow)
        anc = s.get("premise")
        if anc is not None:  # the stored worst check says an ancestor was not clean there
            a_num = (num.get("nodes") or {}).get(anc) or {}
            if anc not in attention_ancestors(c.model, c.bounds).get(v, []):
                rep.add(f"numeric.nodes.{v}.premise", f"names {anc!r}, which is not an attention node below {v!r}")
            elif not a_num.get("largest_leak", 0.0) > float(c.tolerance):
                rep.add(f"numeric.nodes.{v}.premise", f"names {anc!r}, whose largest observed error does not "
                                                      f"exceed eta")
        elif viol and s["violations"] == 0:
            rep.add(f"numeric.nodes.{v}.violations", "worst observed exceeds the bound but no violation is recorded")
    nodes = (num.get("nodes") or {}).values()
    anyviol = any(s["violations"] for s in nodes)
    if num["ok"] and (anyviol or num["mismatched_outputs"]):
        rep.add("numeric.ok", "says ok but violations or output mismatches are recorded")
    elif not num["ok"] and not (anyviol or num["mismatched_outputs"]) and not any(
            h.get("violations") for h in (num.get("heads") or {}).values()):
        rep.add("numeric.ok", "says failed but no violation or output mismatch is recorded")


def _symbols(word: str, alphabet: list[str]) -> list[str] | None:
    """The symbols of a stored attaining word (characters, or space-separated when a symbol is
    longer than one character); None when it was cut to 64 characters."""
    if word.endswith("...") and len(word) == 64:
        return None
    return list(word) if all(len(a) == 1 for a in alphabet) else word.split(" ")


def check_plan(num: dict, c: Construction, n_max: int, inv_tau: Fraction, rep: VerifyReport) -> None:
    """A formula certificate's numeric section against what its plan fixes (:func:`planned`) and
    against itself: the run's 1/τ is the certified one; the families and their word counts (the
    adversarial one at least one word and at most :func:`adversarial_cap`) and lengths are the
    plan's; every node of the construction has a result; per node, the worst check's family and
    length are in the plan, its row a position of that length, its word (unless cut) that long and
    over the alphabet, ``inputs`` every word of every family (each head alone on its key patterns:
    one input per pattern and length), ``largest_leak`` ≥ ``worst_observed`` at a planned length;
    ``premise_failures`` the nodes' sum; ``max_output_deviation`` ≥ 1/2 exactly when an output
    mismatch is recorded (the hard output is Boolean and a mismatch is a soft output on the other
    side of 1/2), and at most :data:`CLEANUP_SLACK` when every node's largest leak (with its float64
    allowance) is within η, where the clean-up ``round_η`` is exact (THEORY §3).  A plan missing from the section (certificates before it was stored) is the
    default one."""
    plan = num.get("plan")
    if plan is None:
        plan = resolve_plan(n_max)
    elif not isinstance(plan, dict) or set(plan) != set(PLAN_DEFAULTS) or not all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 0
            for x in [plan[k] for k in ("exhaustive_len", "random_count", "random_n_max", "seed")]
            + list(plan["adversarial_ns"]) + list(plan["key_pattern_ns"])):
        rep.add("numeric.plan", f"is not a plan: an object with the keys {', '.join(PLAN_DEFAULTS)} and non-negative "
                                "integers (lists of them for the lengths)")
        return
    if not math.isclose(float(num["inv_tau_float"]), float(inv_tau), rel_tol=1e-12):
        rep.add("numeric.inv_tau_float", f"{num['inv_tau_float']!r} is not the certified 1/tau {float(inv_tau)!r}")
    words, lengths = planned(c, n_max, plan)
    fams = num["families"]
    if set(fams) != set(words):
        rep.add("numeric.families", f"has the families {sorted(fams)}, the plan gives {sorted(words)}")
    for f, want in words.items():
        got = fams.get(f)
        if f not in fams:
            continue
        if want is None:
            cap = adversarial_cap(c, plan, n_max)
            if not (isinstance(got, int) and 1 <= got <= cap):
                rep.add(f"numeric.families.{f}", f"{got!r} words, but the plan allows 1 to {cap}")
        elif got != want:
            rep.add(f"numeric.families.{f}", f"{got!r} words, but the plan gives {want}")
    if num.get("lengths") != lengths:
        rep.add("numeric.lengths", f"is {num.get('lengths')!r}, the plan gives {lengths!r}")
    nodes = num["nodes"]
    if set(nodes) != set(c.bounds) and lengths:
        rep.add("numeric.nodes", f"has results for {sorted(nodes)}, the construction's nodes are {sorted(c.bounds)}")
    keyed = set(_keyed(c))
    runs = sum(x for f, x in fams.items() if f != "adversarial-key" and isinstance(x, int))
    alph = list(c.model.alphabet)
    for v, s in nodes.items():
        where = f"numeric.nodes.{v}"
        if v not in c.bounds:
            continue
        want_in = runs + (len(key_patterns(c.bounds[v].bound)) * len(plan["key_pattern_ns"]) if v in keyed else 0)
        if s["inputs"] != want_in:
            rep.add(f"{where}.inputs", f"{s['inputs']!r}, but the families hold {want_in} inputs for it")
        lo_hi = lengths.get(s["family"])
        n = s["at_n"]
        if lo_hi is None or not lo_hi[0] <= n <= lo_hi[1]:
            rep.add(f"{where}.at_n", f"{n!r} is not a length of the family {s['family']!r} ({lo_hi})")
        elif not 1 <= s["row"] <= n:
            rep.add(f"{where}.row", f"{s['row']!r} is not a position of a word of length {n}")
        elif s["family"] != "adversarial-key":
            sym = _symbols(s["word"], alph)
            if sym is not None and (len(sym) != n or not set(sym) <= set(alph)):
                rep.add(f"{where}.word", f"is not a word of length {n} over the alphabet")
        if s["largest_leak"] < s["worst_observed"]:
            rep.add(f"{where}.largest_leak", "is below the worst check's observation")
        if not any(a <= s["largest_leak_at_n"] <= b for a, b in lengths.values()):
            rep.add(f"{where}.largest_leak_at_n", f"{s['largest_leak_at_n']!r} is not a length of the plan")
    if num["premise_failures"] != sum(s["premise_failures"] for s in nodes.values()):
        rep.add("numeric.premise_failures", "is not the sum of the nodes' premise_failures")
    dev, mism = num["max_output_deviation"], num["mismatched_outputs"] + num["mismatched_outputs_unguarded"]
    if not 0 <= dev or (mism > 0 and dev < 0.5) or (mism == 0 and dev > 0.5):
        rep.add("numeric.max_output_deviation", f"{dev!r} does not agree with the {mism} output mismatches recorded "
                                                "(a mismatch is a deviation of at least 1/2, and one above 1/2 is a "
                                                "mismatch)")
    elif dev > CLEANUP_SLACK and c.eta is not None and nodes and all(
            s["largest_leak"] * (1 + s["allowance_rel"]) <= float(c.eta) for s in nodes.values()):
        rep.add("numeric.max_output_deviation", f"{dev!r}, but every node's largest leak is within eta = {c.eta}, where "
                                                "the Boolean clean-up is exact (THEORY §3): at most "
                                                f"{CLEANUP_SLACK} (float64 rounding)")
