"""Model files through the certificate pipeline: gap premises, composed bounds, certify and verify
(THEORY §6, §8).

``build_model_construction`` turns a :class:`~softhard.constructions.modelfile.ModelSpec` into a
:class:`~softhard.solver.pipeline.Construction` of kind ``"model"``:

1. gap analysis (:mod:`softhard.constructions.gaps`) over words of length ``1..n_max``; a UHA
   head with ties gets the tie-break term of THEORY §4 (``tie_break="auto"``), and the analysis
   is re-run on the tie-broken model, whose hard outputs are checked equal to the original's;
2. a head with gap 0 makes the model *not simulable this way*: :class:`NotSimulable` is raised
   with the witness input;
3. the composed bound (:mod:`softhard.bounds.composed`) with the premises "gap ≥ γ_h, ties ≤ a_h"
   gives one claim per output: ``error(n, τ) ≤ ε`` for ``n ∈ [n_min, n_max]``.

**Certificates.**  The source embeds the model document (arrays inlined as nested lists of
floats, ``repr``-exact), its SHA-256, ``n_max``, ε, the tie-break β's and the premise values, so
``verify`` re-derives the bounds without the original file (self-contained, and an edited model
is caught by the hashes *and* by re-derivation; the file's path and hash are recorded for
provenance only).  The premises get their own section: ``"established (exhaustive over W
words)"`` when every word was enumerated — verify re-runs the enumeration when it has at most
:data:`VERIFY_EXHAUSTIVE_LIMIT` words — or ``"searched (not proved)"``, in which case the output
claims are proved only *conditionally* and the certificate's overall status is ``unknown``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable

import numpy as np
import sympy as sp

from ..bounds.composed import ComposedBound, HeadPremise, composed_bound
from ..bounds.core import Bound, eta
from ..bounds.derive import NodeBound
from ..constructions.engine import forward
from ..constructions.errors import CertificateError, ParameterError, SofthardError
from ..constructions.gaps import (DEFAULT_EXHAUSTIVE_LIMIT, DEFAULT_SEARCH_MAX_LEN, DEFAULT_SEARCH_WORDS, GapReport,
                                  TieBreak, all_tokens, analyse_gaps, count_words, plan_tie_breaks, read_rows,
                                  same_hard_outputs, tie_break)
from ..constructions.hard_model import HardModel, ModelSpec
from ..constructions.modelfile import doc_sha256, model_from_doc
from .certificate import frac_str, parse_frac
from .pipeline import Construction

VERIFY_EXHAUSTIVE_LIMIT = 1_000_000
SOURCE = "THEORY §2 (gap lemma), §6 (composition along the model graph, per coordinate)"


class NotSimulable(SofthardError):
    """Some head has gap 0 on an input of length ≤ n_max: softmax cannot simulate it this way
    (THEORY §6).  ``report`` is the gap analysis with the witnesses."""

    def __init__(self, message: str, report: GapReport):
        super().__init__(message)
        self.report = report


def frac(x: Fraction | None) -> str | None:
    """Exact text of a rational (None stays None)."""
    return None if x is None else frac_str(x)


@dataclass
class ModelAnalysis:
    """What ``build_model_construction`` found: the gap report of the certified model, the
    report before a tie-break (if one was added), the tie-breaks, the original and final canonical
    models, and the composed bound."""

    report: GapReport
    report_before: GapReport | None
    tie_breaks: list[TieBreak]
    hm_original: HardModel
    hm: HardModel
    bound: ComposedBound
    same_outputs: dict | None = None
    analysis_options: dict = field(default_factory=dict)

    def premises_json(self, epsilon: Fraction) -> dict:
        rep = self.report
        est = rep.exhaustive
        status = f"established (exhaustive over {rep.words} words)" if est else "searched (not proved)"
        heads = []
        for h in rep.heads.values():
            j = h.to_json()
            j["statement"] = (f"on every input of length n in [1, {rep.n_max}], every query row of head {h.name} has "
                              f"score gap >= {frac(h.gap) if h.gap is not None else 'inf (no competitor)'} and at "
                              f"most {h.ties_max} tied maxima")
            j["status"] = status
            heads.append(j)
        margins = []
        for o in rep.outputs.values():
            j = o.to_json()
            j["epsilon_below_margin"] = (None if o.margin is None else bool(epsilon < o.margin))
            j["status"] = status if o.margin is not None else "n/a (numerical output)"
            margins.append(j)
        return {
            "status": status,
            "method": rep.method,
            "n_max": rep.n_max,
            "words": rep.words,
            "alphabet_size": rep.alphabet_size,
            "total_words": count_words(rep.alphabet_size, rep.n_max),
            "heads": heads,
            "output_margins": margins,
            "tie_break": None if not self.tie_breaks else {
                "heads": [t.to_json() for t in self.tie_breaks],
                "gaps_before": {h.name: frac(h.gap) for h in (self.report_before.heads.values()
                                                                  if self.report_before else [])},
                "hard_outputs_unchanged": self.same_outputs},
            "notes": list(rep.notes),
            "recheck": (f"verify re-runs the exhaustive analysis when it has at most {VERIFY_EXHAUSTIVE_LIMIT} words"
                        if est else "verify re-evaluates the stored attaining inputs exactly"),
            "seconds": round(rep.seconds, 4),
        }


def _source(spec: ModelSpec, n_max: int, epsilon: Fraction, betas: dict[str, Fraction],
            premises: dict[str, HeadPremise]) -> dict:
    return {"kind": "model", "model": spec.doc, "model_sha256": doc_sha256(spec.doc), "file": spec.path,
            "file_sha256": spec.sha256, "n_max": n_max, "epsilon": frac(epsilon),
            "tie_break": {k: frac(v) for k, v in sorted(betas.items())},
            "premises": {k: {"gap": frac(p.gap), "ties_max": int(p.ties)} for k, p in premises.items()}}


def _construction(spec: ModelSpec, hm: HardModel, premises: dict[str, HeadPremise], n_max: int, epsilon: Fraction,
                  betas: dict[str, Fraction]) -> tuple[Construction, ComposedBound]:
    cb = composed_bound(hm, premises, n_max)
    L = hm.n_layers
    bounds = {}
    for o in hm.outputs:
        node = f"out:{o.name}"
        b = Bound(kind="composed", regime="model", leak=cb.outputs[o.name], tolerance=eta, n_min=1, source=SOURCE,
                  attained_by="an upper bound (not attained in general); see the numeric tightness")
        bounds[node] = NodeBound(node=node, operator="output", layer=L, formula=o.name, bound=b)
    nh = sum(len(h) for h in hm.heads)
    title = f"model {spec.name}: {L} layer(s), {nh} head(s), d = {hm.d}"
    c = Construction(kind="model", source=_source(spec, n_max, epsilon, betas, premises), title=title,
                     regime="model", params={"eta": epsilon}, graph=cb.graph, model=hm.transformer(), bounds=bounds)
    return c, cb


def check_epsilon(epsilon) -> Fraction:
    """ε as an exact positive Fraction (raises :class:`ParameterError`)."""
    from ..constructions.parameters import to_fraction
    e = to_fraction(epsilon, "--epsilon")
    if e <= 0:
        raise ParameterError(f"--epsilon must be > 0, got {epsilon}")
    return e


def epsilon_from_margin(rep: GapReport) -> Fraction:
    """``--epsilon margin``: just below the smallest rounding margin of the boolean/categorical
    outputs (``0.999·margin`` rounded down to 6 significant digits), so that error ≤ ε leaves every
    rounded output unchanged.  Raises :class:`ParameterError` if there is no such output or the
    margin is 0 (a hard output exactly at its threshold)."""
    from ..bounds.intervals import down
    ms = [o.margin for o in rep.outputs.values() if o.margin is not None]
    if not ms:
        raise ParameterError("--epsilon margin needs a boolean or categorical output")
    m = min(ms)
    if m <= 0:
        raise ParameterError("--epsilon margin: some hard output sits exactly at its threshold (margin 0)")
    e = down(m * Fraction(999, 1000), 6)
    return Fraction(int(e.p), int(e.q))


def build_model_construction(spec: ModelSpec, *, n_max: int, epsilon, tie_break_mode: str = "auto",
                             exhaustive_limit: int = DEFAULT_EXHAUSTIVE_LIMIT, search_words: int = DEFAULT_SEARCH_WORDS,
                             search_max_len: int = DEFAULT_SEARCH_MAX_LEN, seed: int = 0, method: str = "auto",
                             progress: Callable[[str], None] | None = None) -> tuple[Construction, ModelAnalysis]:
    """Gap analysis, tie-break and composed bound for a model file (module docstring).

    ``epsilon``: the target output error (exact), or ``"margin"`` (:func:`epsilon_from_margin`).
    Raises :class:`ParameterError` for bad parameters, :class:`ModelFormatError` if ``n_max``
    exceeds a positional table, :class:`NotSimulable` when a gap is 0.
    """
    use_margin = isinstance(epsilon, str) and epsilon.strip() == "margin"
    if not use_margin:
        epsilon = check_epsilon(epsilon)
    if n_max < 1:
        raise ParameterError(f"--n-max must be >= 1, got {n_max}")
    if tie_break_mode not in ("auto", "off"):
        raise ParameterError(f"tie-break mode must be auto or off, got {tie_break_mode!r}")
    hm0 = spec.canonical()
    opts = dict(exhaustive_limit=exhaustive_limit, search_words=search_words, search_max_len=search_max_len,
                seed=seed, method=method)
    rep0 = analyse_gaps(hm0, n_max, progress=progress, **opts)
    hm, rep, before, infos, same = hm0, rep0, None, [], None
    betas = plan_tie_breaks(rep0) if tie_break_mode == "auto" else {}
    if betas:
        if progress:
            progress(f"tie-break for {', '.join(betas)}")
        hm, infos = tie_break(hm0, betas, n_max, {h: rep0.heads[h].gap_untied for h in betas})
        rep = analyse_gaps(hm, n_max, progress=progress, **opts)
        before = rep0
        witness = [w for h in rep0.heads.values() for w in (h.word, h.word_untied) if w is not None]
        ok, bad, cnt = same_hard_outputs(hm0, hm, n_max, limit=exhaustive_limit, words=witness)
        same = {"same": ok, "words_compared": cnt, "exhaustive": count_words(len(hm.alphabet), n_max) <= exhaustive_limit,
                "first_difference": None if bad is None else list(bad)}
        if not ok:
            raise NotSimulable(f"the tie-broken model's hard outputs differ from the original's on {''.join(bad)!r}; "
                               "the tie-break weight is too large for this model", rep)
    zero = rep.zero_gap()
    if zero:
        h = zero[0]
        raise NotSimulable(
            f"not simulable this way: head {h.name} ({h.rule}) has gap 0 on input {' '.join(h.word)!r} "
            f"(query row {h.row}){' — a UHA tie; rerun with --tie-break auto' if h.rule != 'AHA' else ''}", rep)
    if use_margin:
        epsilon = epsilon_from_margin(rep)
    premises = {name: HeadPremise(g.gap, g.ties_max) for name, g in rep.heads.items()}
    c, cb = _construction(spec, hm, premises, n_max, epsilon, betas)
    return c, ModelAnalysis(report=rep, report_before=before, tie_breaks=infos, hm_original=hm0, hm=hm, bound=cb,
                            same_outputs=same, analysis_options=opts)


def rebuild_model(source: dict, regime: str, params: dict[str, Fraction]) -> Construction:
    """``SOURCES["model"]``: re-derive a model construction from a certificate's source (no gap
    analysis: the premise values are read from the source; verify re-checks them separately)."""
    try:
        doc = source["model"]
        if doc_sha256(doc) != source["model_sha256"]:
            raise CertificateError("source.model: the embedded model does not match source.model_sha256")
        spec = model_from_doc(doc, path="<certificate source.model>")
        n_max = int(source["n_max"])
        epsilon = parse_frac(source["epsilon"], "source.epsilon")
        betas = {k: parse_frac(v, f"source.tie_break.{k}") for k, v in source["tie_break"].items()}
        premises = {k: HeadPremise(None if v["gap"] is None else parse_frac(v["gap"], f"source.premises.{k}.gap"),
                                   int(v["ties_max"])) for k, v in source["premises"].items()}
    except KeyError as e:
        raise CertificateError(f"source.{e.args[0]}: missing") from None
    if params.get("eta") != epsilon:
        raise CertificateError(f"construction.params.eta ({params.get('eta')}) differs from source.epsilon ({epsilon})")
    hm = spec.canonical()
    if betas:
        hm, _ = tie_break(hm, betas, n_max)
    names = {h.name for h in hm.all_heads()}
    if set(premises) != names:
        raise CertificateError(f"source.premises: heads {sorted(premises)} differ from the model's {sorted(names)}")
    c, _ = _construction(spec, hm, premises, n_max, epsilon, betas)
    return c


# --------------------------------------------------------------------------------------------
# numeric confirmation


def allowance_abs(x: np.ndarray) -> float:
    """Float64 allowance for an observed |soft − hard| difference: ``2^-40·(1 + max|x|)``
    (heuristic; numerics confirm, never prove: THEORY §7)."""
    return float(2.0**-40 * (1.0 + float(np.max(np.abs(x))) if x.size else 1.0))


def model_families(c: Construction, an: ModelAnalysis, n_max: int, *, exhaustive_words: int = 4096,
                   random_count: int = 400, random_n_max: int = 256, seed: int = 0) -> dict[str, list]:
    """Input families for the numeric confirmation: every word up to the length where the count
    exceeds ``exhaustive_words``; random words on a log grid of lengths; the gap-attaining words."""
    alph = c.model.alphabet
    k = len(alph)
    exh = []
    for L in range(1, n_max + 1):
        if count_words(k, L) > exhaustive_words:
            break
        for tok in all_tokens(k, L):
            exh.extend(tuple(alph[t - 1] for t in row) for row in tok)
    rng = np.random.default_rng(seed)
    top = min(random_n_max, n_max)
    grid = sorted({max(1, int(round(top ** (t / 15)))) for t in range(16)})
    per = max(1, random_count // len(grid))
    rnd = [tuple(alph[int(i)] for i in rng.integers(0, k, size=L)) for L in grid for _ in range(per)]
    adv = []
    for h in an.report.heads.values():
        for w in (h.word, h.word_untied):
            if w is not None:
                adv.append(tuple(w))
    for o in an.report.outputs.values():
        if o.word is not None:
            adv.append(tuple(o.word))
    fams = {"exhaustive": exh, "random": rnd, "adversarial": list(dict.fromkeys(adv))}
    return {k_: v for k_, v in fams.items() if v}


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
    from ..bounds.derive import evaluate
    from ..constructions.exact import ExactEngine, to_float
    hm: HardModel = c.model.meta["hard_model"]
    eng = ExactEngine(hm)
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
            for b0 in range(0, len(ws), 512):
                chunk = ws[b0:b0 + 512]
                tok = c.model.encode(chunk)
                ex = eng.run(tok, keep_written=bool(head_bounds))  # the exact hard model is the reference
                hard_x = to_float(ex.x)
                soft = forward(c.model, tok, mode="soft", inv_tau=inv_tau)
                allow = allowance_abs(hard_x)
                for name, hb in (head_bounds or {}).items():
                    dw = np.abs(soft.heads[name].soft[:, 1:] @ wo[name] - to_float(ex.written[name])[:, 1:])
                    ob = float(dw.max()) if dw.size else 0.0
                    bd = float(evaluate(hb, n_value=L, inv_tau=it_frac))
                    cur = per_head.setdefault(name, {"worst_ratio": 0.0, "observed": 0.0, "bound": bd, "n": L,
                                                     "violations": 0})
                    r = ob / bd if bd > 0 else (0.0 if ob == 0 else float("inf"))
                    if ob > bd + allow:
                        cur["violations"] += 1
                    if r >= cur["worst_ratio"]:
                        cur.update(worst_ratio=r, observed=ob, bound=bd, n=L)
                for o in hm.outputs:
                    node = f"out:{o.name}"
                    cols = [labels.index(hm.labels[k]) for k in o.coords]
                    diff = np.abs(soft.x[:, 1:, cols] - hard_x[:, 1:, cols]).max(axis=2)
                    bi, ri = np.unravel_index(int(np.argmax(diff)), diff.shape)
                    obs = float(diff[bi, ri])
                    max_dev = max(max_dev, obs)
                    bd = float(c.bounds[node].value(L, it_frac, c.beta, c.eta))
                    if bd == 0 and obs <= allow:
                        obs = 0.0  # below float64 resolution (THEORY §7): not an observation of error
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
            return r["observed"] / r["bound"] if r["bound"] > 0 else (0.0 if r["observed"] == 0 else float("inf"))
        w = max(rows, key=ratio)
        viol = sum(r["observed"] > r["bound"] + r["allowance_abs"] for r in rows)
        nodes[node] = {
            "inputs": sum(r["inputs"] for r in rows), "worst_observed": w["observed"], "bound_there": w["bound"],
            "ratio": ratio(w), "at_n": w["n"], "family": w["family"],
            "word": w["word"] if len(w["word"]) <= 64 else w["word"][:61] + "...", "row": w["row"],
            "allowance_rel": (w["allowance_abs"] / w["bound"]) if w["bound"] > 0 else 0.0,
            "violations": viol,
            "max_ratio_by_family": {f: max(ratio(r) for r in rows if r["family"] == f)
                                    for f in dict.fromkeys(r["family"] for r in rows)},
            "max_observed": max(r["observed"] for r in rows),
        }
    ok = (all(v["violations"] == 0 for v in nodes.values()) and mismatches == 0
          and all(v["violations"] == 0 for v in per_head.values()))
    return {"inv_tau_float": float(inv_tau), "families": words_per_family, "mismatched_outputs": mismatches,
            "mismatched_outputs_unguarded": unguarded,
            "mismatches_count": "positions whose rounded output differs from the hard model's; 'unguarded': on "
                                "outputs whose margin is <= epsilon (rounding not claimed)",
            "max_output_deviation": max_dev, "ok": ok, "nodes": nodes, "heads": per_head,
            "note": ("observed = max over words and positions of |soft - hard| on the output coordinates (float64); "
                     "a numeric run confirms or refutes, never proves (THEORY §7)")}


# --------------------------------------------------------------------------------------------
# certify and verify


def combine_status(claims: str, premise_status: str) -> str:
    """Overall status: proved only if the claims are proved *and* the premises established."""
    if claims == "refuted" or premise_status.startswith("violated"):
        return "refuted"
    if claims == "proved" and premise_status.startswith("established"):
        return "proved"
    return "unknown"


COMPOSED = ("every output claim proved AND every gap premise established  =>  at every position of every word "
            "with length in the range, the soft transformer's output coordinates are within epsilon of the hard "
            "transformer's (THEORY §2, §6); with epsilon below an output's margin, its rounded values are equal. "
            "If the premises were only searched, the claims hold conditionally and the status is unknown.")


def certify_model(c: Construction, an: ModelAnalysis, *, n_max: int, n_lo: int = 1, tau: Fraction | None = None,
                  find_tau: bool = False, timeout_s: float = 20.0, numeric: bool = True,
                  numeric_opts: dict | None = None, progress: Callable[[str], None] | None = None) -> dict:
    """Certificate for a model construction: the formula path's :func:`certify` (claims, Z3, arb,
    τ search) plus the ``premises`` and ``analysis`` sections, the model's numeric confirmation and
    the combined status (module docstring).  Raises like :func:`certify`."""
    from .certificate import certify, compute_hashes
    if n_max > an.report.n_max:
        raise ParameterError(f"--n-max {n_max} exceeds the gap analysis length {an.report.n_max}")
    try:
        cert = certify(c, n_max=n_max, n_lo=n_lo, tau=tau, find_tau=find_tau, all_n=False, timeout_s=timeout_s,
                       numeric=False, progress=progress)
    except ValueError as e:  # required_inv_tau beyond 1e30: a gap too small to matter in practice
        raise NotSimulable(f"--find-tau: {e} (smallest gap {min((h.gap for h in an.report.heads.values() if h.gap), default=None)})",
                           an.report) from None
    inv_tau = parse_frac(cert["construction"]["inv_tau"], "construction.inv_tau")
    eps = c.params["eta"]
    cert["premises"] = an.premises_json(eps)
    cert["analysis"] = {
        "gap_report": an.report.to_json(),
        "gap_report_before_tie_break": an.report_before.to_json() if an.report_before else None,
        "per_node": {v: {k: a[k] for k in ("kind", "local", "written", "error") if k in a}
                     for v, a in c.graph.nodes(data=True)},
        "epsilon": str(eps),
        "options": {k: v for k, v in an.analysis_options.items()},
    }
    if numeric:
        if progress:
            progress("numeric confirmation")
        fams = model_families(c, an, n_max, **(numeric_opts or {}))
        guarded = {o.name for o in an.report.outputs.values() if o.margin is not None and eps < o.margin}
        num = observe_model(c, fams, float(inv_tau), head_bounds={h: v["error"] for h, v in an.bound.heads.items()},
                            guarded=guarded)
        cert["numeric"] = num
        for row in cert["nodes"]:
            row["numeric"] = {k: v for k, v in num["nodes"].get(row["node"], {}).items() if k != "max_observed"} or None
    cert["composed"] = COMPOSED
    cert["status"] = combine_status(cert["status"], cert["premises"]["status"])
    cert["hashes"] = compute_hashes(cert)
    return cert


def verify_premises(rep, cert: dict, c: Construction, expect: str) -> str:
    """Re-check a model certificate's premises (verify hook); returns the expected overall status.

    Exhaustive premises are re-derived by re-running the enumeration (when it has at most
    :data:`VERIFY_EXHAUSTIVE_LIMIT` words); searched ones by re-evaluating each stored attaining
    input exactly.  Problems are added to ``rep`` with the field they concern.
    """
    from ..constructions.exact import ExactEngine
    pr = cert.get("premises")
    if not isinstance(pr, dict):
        rep.add("premises", "a model certificate must have a premises section")
        return "unknown"
    src = cert["source"]
    n_max = int(src["n_max"])
    try:
        spec = model_from_doc(src["model"], path="<certificate source.model>")
    except SofthardError as e:
        rep.add("source.model", str(e))
        return "unknown"
    hm0 = spec.canonical()
    betas = {k: parse_frac(v, "source.tie_break") for k, v in src["tie_break"].items()}
    hm = tie_break(hm0, betas, n_max)[0] if betas else hm0
    stored = {h["head"]: (i, h) for i, h in enumerate(pr.get("heads", []))}
    for name, v in src["premises"].items():
        if name not in stored:
            rep.add("premises.heads", f"no premise entry for head {name!r}")
            continue
        i, h = stored[name]
        if h.get("gap") != v["gap"] or h.get("ties_max") != v["ties_max"]:
            rep.add(f"premises.heads[{i}]", f"gap/ties ({h.get('gap')}, {h.get('ties_max')}) differ from the values "
                                            f"the bound was built from ({v['gap']}, {v['ties_max']})")
    # the claims hold only for lengths the premises (and activation boxes) cover
    rng = cert.get("range", {})
    if rng.get("all_n") or int(rng.get("n_max", 0)) > n_max:
        rep.add("range.n_max", f"the certified range (n_max = {rng.get('n_max')}, all_n = {rng.get('all_n')}) exceeds "
                               f"the length {n_max} the gap premises were established for (source.n_max)")
    for j, cl in enumerate(cert.get("claims", [])):
        if cl.get("n_hi") is None or int(cl["n_hi"]) > n_max:
            rep.add(f"claims[{j}].n_hi", f"claim range beyond source.n_max = {n_max}, where the premises hold")
    method = pr.get("method")
    status = pr.get("status", "")
    k = len(hm.alphabet)
    total = count_words(k, n_max)
    if method == "exhaustive":
        if pr.get("n_max") != n_max:
            rep.add("premises.n_max", f"{pr.get('n_max')} differs from source.n_max {n_max}")
        if not status.startswith("established"):
            rep.add("premises.status", f"method exhaustive but status {status!r}")
        if total <= VERIFY_EXHAUSTIVE_LIMIT:
            fresh = analyse_gaps(hm, n_max, method="exhaustive")
            if fresh.words != pr.get("words"):
                rep.add("premises.words", f"{pr.get('words')} stored, {fresh.words} words of length <= {n_max}")
            for name, g in fresh.heads.items():
                if name not in stored:
                    continue
                i, h = stored[name]
                if h.get("gap") != frac(g.gap) or h.get("ties_max") != g.ties_max:
                    rep.add(f"premises.heads[{i}].gap", f"re-running the exhaustive analysis gives gap {frac(g.gap)}, "
                                                        f"ties {g.ties_max}; the certificate says {h.get('gap')}, "
                                                        f"{h.get('ties_max')}")
            om = {o["output"]: (j, o) for j, o in enumerate(pr.get("output_margins", []))}
            for name, o in fresh.outputs.items():
                if name in om and om[name][1].get("margin") != frac(o.margin):
                    rep.add(f"premises.output_margins[{om[name][0]}].margin",
                            f"re-run gives {frac(o.margin)}, certificate says {om[name][1].get('margin')}")
            if betas:
                ok, bad, _ = same_hard_outputs(hm0, hm, n_max, limit=VERIFY_EXHAUSTIVE_LIMIT)
                if not ok:
                    rep.add("premises.tie_break", f"the tie-broken model's hard outputs differ on {bad}")
            rep.checked.append(f"premises re-established by exhaustive enumeration ({fresh.words} words)")
        else:
            # an exhaustive premise verify cannot re-establish is not taken on trust: the hashes are
            # unkeyed and only catch accidental edits
            rep.add("premises", f"the exhaustive premise covers {total} words, more than verify re-runs "
                                f"({VERIFY_EXHAUSTIVE_LIMIT}); it cannot be re-established here, so the certificate "
                                "is not verified")
    elif method == "searched":
        if not status.startswith("searched"):
            rep.add("premises.status", f"a searched premise must be marked 'searched (not proved)', got {status!r}")
        eng = ExactEngine(hm)
        for name, (i, h) in stored.items():
            att = h.get("attained_by")
            if not att or h.get("gap") is None:
                continue
            w = att["word"]
            try:
                tok = np.array([hm.encode(w)], dtype=np.int64)
                rows = eng.run(tok).heads[name]
                g = rows.gap(0, int(att["row"]))
            except (SofthardError, KeyError, IndexError, ValueError) as e:
                rep.add(f"premises.heads[{i}].attained_by", f"cannot re-evaluate: {e}")
                continue
            if frac(g) != h["gap"]:
                rep.add(f"premises.heads[{i}].gap", f"at the stored input the exact gap is {frac(g)}, "
                                                    f"not {h['gap']}")
        rep.checked.append("searched premises: attaining inputs re-evaluated exactly (premise not proved)")
    else:
        rep.add("premises.method", f"unknown method {method!r}")
        return "unknown"
    return combine_status(expect, status)
