"""Model files through the certificate pipeline: gap premises, composed bounds, the model
certificate kind (THEORY §6, §8; docs/models.md).

``build_model_construction`` turns a :class:`~softhard.constructions.modelfile.ModelSpec` into a
:class:`~softhard.solver.pipeline.Construction` of kind ``"model"``:

1. gap analysis (:mod:`softhard.constructions.gaps`) over words of length ``1..n_max``; a UHA
   head with ties gets the tie-break term of THEORY §4 (``tie_break="auto"``), and the analysis
   is re-run on the tie-broken model, whose hard outputs are checked equal to the original's;
2. a head with gap 0 makes the model *not simulable this way*: :class:`~softhard.constructions.errors.NotSimulable`
   is raised with the witness input;
3. the composed bound (:mod:`softhard.bounds.composed`) with the premises "gap ≥ γ_h, ties ≤ a_h"
   gives one claim per output: ``error(n, τ) ≤ ε`` for ``n ∈ [n_min, n_max]``.

**Certificates** (kind ``"model"``) are built in one place, :func:`assemble`: the formula kind's
:func:`~softhard.solver.certificate.assemble` (claims, Z3, arb, the τ search section) plus the
``premises`` and ``analysis`` sections and the combined status.  :func:`certify_model` runs the
τ search and the numeric confirmation and calls it; :func:`replay` (verify, :data:`MODEL`) calls
it again from the certificate's inputs — the embedded model document (arrays inlined, floats
``repr``-exact, with its SHA-256), ``source.n_max``, ε, the range, the certified 1/τ, the
analysis method and, for searched premises, the searched values — so every other field is
re-derived and compared by :mod:`softhard.solver.replay`:

* **exhaustive premises** (``"established (exhaustive over W words)"``): the replay re-runs the
  enumeration (and the tie-break and its hard-output check) when it has at most
  :data:`VERIFY_EXHAUSTIVE_LIMIT` words; a larger one cannot be re-established, so such a
  certificate is not verified;
* **searched premises** (``"searched (not proved)"``): the search is not repeated; its values
  (per head the gap with its attaining input, the gap to non-maximal positions with its input,
  the largest tie set; per output the margin with its input; the words and lengths tried) are
  inputs, and the replay re-evaluates each attaining input exactly: a stored gap or margin
  replaced by the exact value there, a tie count raised to the ties seen there.  The output
  claims then hold only conditionally and the overall status is ``unknown``.

Measured (not re-derived; the schema's ``x-measured.model``): the ``numeric`` section, search
logs (``rounds``, ``empirical``), solver seconds, ``created``/``tool``/``times``; their
consistency with the re-derived bounds is :func:`check_measured`.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable

import sympy as sp

from ..bounds.composed import ComposedBound, HeadPremise, composed_bound
from ..bounds.intervals import down
from ..bounds.core import Bound, epsilon as epsilon_sym
from ..bounds.params import Params
from ..bounds.derive import NodeBound
from ..constructions.errors import CertificateError, NotSimulable, ParameterError, RepresentationError, WorkLimitError
from ..constructions.gaps import (DEFAULT_EXHAUSTIVE_LIMIT, DEFAULT_SEARCH_MAX_LEN, DEFAULT_SEARCH_WORDS, GapReport,
                                  analyse_gaps)
from ..constructions.tie_breaks import TieBreak, plan_tie_breaks, same_hard_outputs, tie_break
from ..constructions.hard_model import HardModel, ModelSpec
from ..constructions.modelfile import doc_sha256, model_from_doc
from ..constructions.words import count_words, word_count_text
from ..constructions.parameters import to_count, to_fraction, to_seconds
from . import certificate
from .certjson import canonical
from .check import ProofCache
from .claims import frac_str, parse_frac
from .model_inputs import (REPORT_FIELDS, VERIFY_EXHAUSTIVE_LIMIT, inputs, search_rows, searched_reports,
                           verify_exhaustive_limit)
from .model_numeric import check_numeric, model_families, model_plan, observe_model
from .model_recheck import recheck_report
from .pipeline import Construction
from .precision import model_float64_premise
from .replay import Kind, VerifyReport

def check_exhaustive_limit(limit: int, consequence: str,
                           cap_is: str = "the most words 'softhard verify' re-enumerates (with the same --workers)"
                           ) -> None:
    """Refuse an ``--exhaustive-limit`` above :func:`verify_exhaustive_limit` (words; ``gap`` and
    ``certify --model``), before any work: ``cap_is`` names the maximum and ``consequence`` says why,
    in the message.  A huge limit is shown by its order of magnitude, never as all its digits.
    Raises :class:`ParameterError`."""
    cap = verify_exhaustive_limit()
    if limit > cap:
        shown = str(limit) if limit < 10**24 else f"about 1e+{int(math.log10(limit))}"
        raise ParameterError(f"--exhaustive-limit {shown} exceeds {cap}, {cap_is}: {consequence}")
SOURCE = "THEORY §2 (gap lemma), §6 (composition along the model graph, per coordinate)"


def frac(x: Fraction | None) -> str | None:
    """Exact text of a rational (None stays None)."""
    return None if x is None else frac_str(x)


@dataclass
class ModelAnalysis:
    """What ``build_model_construction`` found: the gap report of the certified model, the
    report before a tie-break (if one was added), the tie-breaks, the original and final canonical
    models, the composed bound, the hard-output comparison of a tie-break, the analysis options
    that matter for the result (``method``; for a search its parameters) and the wall time."""

    report: GapReport
    report_before: GapReport | None
    tie_breaks: list[TieBreak]
    hm_original: HardModel
    hm: HardModel
    bound: ComposedBound
    same_outputs: dict | None = None
    analysis_options: dict = field(default_factory=dict)
    seconds: float = 0.0


def _source(spec: ModelSpec, n_max: int, epsilon: Fraction, betas: dict[str, Fraction],
            premises: dict[str, HeadPremise], ln_premises: dict[str, Fraction | None]) -> dict:
    src = {"kind": "model", "model": spec.doc, "model_sha256": doc_sha256(spec.doc), "file": spec.path,
           "file_sha256": spec.sha256, "n_max": n_max, "epsilon": frac(epsilon),
           "tie_break": {k: frac(v) for k, v in sorted(betas.items())},
           "premises": {k: {"gap": frac(p.gap), "ties_max": int(p.ties), "tieless": bool(p.tieless)}
                        for k, p in premises.items()}}
    if ln_premises:
        src["layernorm_premises"] = {k: {"variance_min": frac(v)} for k, v in ln_premises.items()}
    return src


def _construction(spec: ModelSpec, hm: HardModel, premises: dict[str, HeadPremise], n_max: int, epsilon: Fraction,
                  betas: dict[str, Fraction], ln_premises: dict[str, Fraction | None] | None = None
                  ) -> tuple[Construction, ComposedBound]:
    ln_premises = ln_premises or {}
    cb = composed_bound(hm, premises, n_max, ln_premises)
    L = hm.n_layers
    bounds = {}
    for o in hm.outputs:
        node = f"out:{o.name}"
        b = Bound(kind="composed", regime="model", leak=cb.outputs[o.name], tolerance=epsilon_sym, n_min=1, source=SOURCE,
                  attained_by="an upper bound (not attained in general); see the numeric tightness")
        bounds[node] = NodeBound(node=node, operator="output", layer=L, formula=o.name, bound=b)
    nh = sum(len(h) for h in hm.heads)
    title = f"model {spec.name}: {L} layer(s), {nh} head(s), d = {hm.d}"
    c = Construction(kind="model", source=_source(spec, n_max, epsilon, betas, premises, ln_premises), title=title,
                     regime="model", params=Params(regime=None, beta=None, eta=None, epsilon=epsilon), graph=cb.graph, model=hm.transformer(), bounds=bounds)
    return c, cb


def check_epsilon(epsilon) -> Fraction:
    """ε as an exact positive Fraction (raises :class:`ParameterError`)."""
    e = to_fraction(epsilon, "--epsilon")
    if e <= 0:
        raise ParameterError(f"--epsilon must be > 0, got {epsilon}")
    return e


def epsilon_from_margin(rep: GapReport) -> Fraction:
    """``--epsilon margin``: just below the smallest rounding margin of the boolean/categorical
    outputs (``0.999·margin`` rounded down to 6 significant digits), so that error ≤ ε leaves every
    rounded output unchanged.  Raises :class:`ParameterError` if there is no such output or the
    margin is 0 (a hard output exactly at its threshold)."""
    ms = [o.margin for o in rep.outputs.values() if o.margin is not None]
    if not ms:
        raise ParameterError("--epsilon margin (the default) needs a boolean or categorical output; give --epsilon E, "
                             "the target output error (exact, e.g. 1/4)")
    m = min(ms)
    if m <= 0:
        raise ParameterError("--epsilon margin: some hard output sits exactly at its threshold (margin 0)")
    e = down(m * Fraction(999, 1000), 6)
    return Fraction(int(e.p), int(e.q))


def resolved_method(method: str, k: int, n_max: int, exhaustive_limit: int) -> str:
    """The analysis a ``method`` option runs on ``k`` symbols up to ``n_max``: ``auto`` is
    exhaustive when there are at most ``exhaustive_limit`` words."""
    if method == "auto":
        return "exhaustive" if count_words(k, n_max, cap=exhaustive_limit) <= exhaustive_limit else "searched"
    if method not in ("exhaustive", "searched"):
        raise ParameterError(f"method must be auto, exhaustive or searched, got {method!r}")
    return method


def build_model_construction(spec: ModelSpec, *, n_max: int, epsilon, tie_break_mode: str = "auto",
                             exhaustive_limit: int = DEFAULT_EXHAUSTIVE_LIMIT, search_words: int = DEFAULT_SEARCH_WORDS,
                             search_max_len: int = DEFAULT_SEARCH_MAX_LEN, seed: int = 0, method: str = "auto",
                             progress: Callable[[str], None] | None = None,
                             searched: dict | None = None) -> tuple[Construction, ModelAnalysis]:
    """Gap analysis, tie-break and composed bound for a model file (module docstring).

    ``epsilon``: the target output error (exact), or ``"margin"`` (:func:`epsilon_from_margin`).
    ``searched`` (a replay of searched premises): ``{"before": report JSON or None, "final":
    report JSON}`` — the stored searched reports, re-evaluated exactly at their attaining inputs
    (:func:`recheck_report`) instead of searching again.
    Raises :class:`ParameterError` for bad parameters, :class:`ModelFormatError` if ``n_max``
    exceeds a positional table, :class:`NotSimulable` when a gap is 0.
    """
    t0 = time.perf_counter()
    use_margin = isinstance(epsilon, str) and epsilon.strip() == "margin"
    if not use_margin:
        epsilon = check_epsilon(epsilon)
    n_max = to_count(n_max, "n_max (--n-max)")
    count_words(len(spec.alphabet), n_max)  # the certificate's total_words: refuse beyond its limit first
    if tie_break_mode not in ("auto", "off"):
        raise ParameterError(f"tie-break mode must be auto or off, got {tie_break_mode!r}")
    exhaustive_limit = to_count(exhaustive_limit, "exhaustive_limit (--exhaustive-limit)", minimum=0)
    hm0 = spec.canonical()
    method = resolved_method(method, len(hm0.alphabet), n_max, exhaustive_limit)
    opts = dict(exhaustive_limit=exhaustive_limit, search_words=search_words, search_max_len=search_max_len,
                seed=seed, method=method)

    def analyse(hm: HardModel, stage: str) -> GapReport:
        if searched is None:
            return analyse_gaps(hm, n_max, progress=progress, **opts)
        key = "before" if stage == "before" and searched.get("before") is not None else "final"
        return recheck_report(hm, searched[key], n_max, f"analysis.{REPORT_FIELDS[key]}")

    rep0 = analyse(hm0, "before")
    hm, rep, before, infos, same = hm0, rep0, None, [], None
    betas = plan_tie_breaks(rep0) if tie_break_mode == "auto" else {}
    if betas:
        if progress:
            progress(f"tie-break for {', '.join(betas)}")
        hm, infos = tie_break(hm0, betas, n_max, {h: rep0.heads[h].gap_untied for h in betas})
        rep = analyse(hm, "final")
        before = rep0
        witness = [w for h in rep0.heads.values() for w in (h.word, h.word_untied) if w is not None]
        limit = count_words(len(hm.alphabet), n_max) if method == "exhaustive" else exhaustive_limit
        ok, bad, cnt = same_hard_outputs(hm0, hm, n_max, limit=limit, words=witness)
        same = {"same": ok, "words_compared": cnt, "exhaustive": count_words(len(hm.alphabet), n_max, cap=limit) <= limit,
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
    premises = {name: HeadPremise(g.gap, g.ties_max, g.tieless) for name, g in rep.heads.items()}
    ln_premises = {name: v.var for name, v in rep.layernorms.items()}
    if progress:
        progress(f"composing the error bounds along the model graph ({hm0.n_layers} layer(s)"
                 + (f", {len(ln_premises)} layer norm(s): each adds a quadratic term, the bound grows with depth)"
                    if ln_premises else ")"))
    c, cb = _construction(spec, hm, premises, n_max, epsilon, betas, ln_premises)
    # only what the result depends on: an exhaustive analysis is fixed by the model and n_max
    used = {"method": "exhaustive"} if method == "exhaustive" else opts
    return c, ModelAnalysis(report=rep, report_before=before, tie_breaks=infos, hm_original=hm0, hm=hm, bound=cb,
                            same_outputs=same, analysis_options=used, seconds=time.perf_counter() - t0)


# --------------------------------------------------------------------------------------------
# searched premises: the stored values, re-evaluated exactly at their attaining inputs

# --------------------------------------------------------------------------------------------
# the certificate's model sections (derived) and assemble


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


def report_json(rep: GapReport | None) -> dict | None:
    """A gap report as a certificate stores it: :meth:`GapReport.to_json` without its (measured)
    seconds, each head with the input attaining its gap to non-maximal positions."""
    if rep is None:
        return None
    j = rep.to_json()
    j.pop("seconds", None)
    for hj, h in zip(j["heads"], rep.heads.values()):
        hj["attained_by_untied"] = None if h.word_untied is None else {"word": list(h.word_untied),
                                                                       "row": h.row_untied}
    return j


def premises_json(an: ModelAnalysis, epsilon: Fraction) -> dict:
    """The ``premises`` section: per head the statement the bound rests on, per output its margin
    and whether ε is below it, how they were established, the tie-breaks."""
    rep = an.report
    est = rep.exhaustive
    status = f"established (exhaustive over {rep.words} words)" if est else "searched (not proved)"
    heads = []
    for h in rep.heads.values():
        j = h.to_json()
        j["statement"] = (f"on every input of length n in [1, {rep.n_max}], every query row of head {h.name} has "
                          f"score gap >= {frac(h.gap) if h.gap is not None else 'inf (no competitor)'} and at "
                          f"most {h.ties_max} tied maxima"
                          + (", and every query row is uniform (all scores equal) or has a unique maximum "
                             "(uniform-tieless)" if h.tieless and h.ties_max >= 2 else ""))
        j["status"] = status
        heads.append(j)
    lns = []
    for v in rep.layernorms.values():
        j = v.to_json()
        j["statement"] = (f"on every input of length n in [1, {rep.n_max}], at every position (BOS included) the "
                          f"input of layer norm {v.name} has variance >= {frac(v.var)} (its local Lipschitz premise)")
        j["status"] = status
        lns.append(j)
    margins = []
    for o in rep.outputs.values():
        j = o.to_json()
        j["epsilon_below_margin"] = None if o.margin is None else bool(epsilon < o.margin)
        j["status"] = status if o.margin is not None else "n/a (numerical output)"
        margins.append(j)
    return {
        "status": status, "method": rep.method, "n_max": rep.n_max, "words": rep.words,
        "alphabet_size": rep.alphabet_size, "total_words": count_words(rep.alphabet_size, rep.n_max),
        "heads": heads, "output_margins": margins, **({"layernorms": lns} if lns else {}),
        "tie_break": None if not an.tie_breaks else {
            "heads": [t.to_json() for t in an.tie_breaks],
            "gaps_before": {h.name: frac(h.gap) for h in (an.report_before.heads.values() if an.report_before else [])},
            "hard_outputs_unchanged": an.same_outputs},
        "notes": list(rep.notes),
        "recheck": (f"verify re-runs the exhaustive analysis when it has at most {VERIFY_EXHAUSTIVE_LIMIT} words"
                    if est else "verify re-evaluates the stored attaining inputs exactly (the search is not re-run)"),
    }


def analysis_json(c: Construction, an: ModelAnalysis) -> dict:
    """The ``analysis`` section: the gap report(s), the per-node bound recursion along the model
    graph, ε, the analysis options the result depends on."""
    return {
        "gap_report": report_json(an.report),
        "gap_report_before_tie_break": report_json(an.report_before),
        "per_node": {v: {k: a[k] for k in ("kind", "local", "written", "error") if k in a}
                     for v, a in c.graph.nodes(data=True)},
        "epsilon": str(c.params.epsilon),
        "options": dict(an.analysis_options),
    }


def assemble(c: Construction, an: ModelAnalysis, *, inv_tau: Fraction, n_lo: int, n_max: int, timeout_s: float,
             proofs: ProofCache, found: list[dict] | None = None, numeric: dict | None = None,
             say: Callable[[str], None] = lambda s: None) -> dict:
    """The model certificate without the measured envelope and hashes: the formula kind's
    :func:`~softhard.solver.certificate.assemble` on ``[n_lo, n_max]`` plus ``premises``,
    ``analysis``, the model's composed statement and the combined status.  Deterministic in its
    arguments (measured fields aside): :func:`replay` relies on it."""
    check_bound_size(c)
    cert = certificate.assemble(c, inv_tau=inv_tau, n_lo=n_lo, n_max=n_max, all_n=False, timeout_s=timeout_s,
                                proofs=proofs, found=found, numeric=numeric, say=say)
    cert["premises"] = premises_json(an, c.params.epsilon)
    cert["analysis"] = analysis_json(c, an)
    cert["composed"] = COMPOSED
    cert["status"] = combine_status(cert["status"], cert["premises"]["status"])
    cert["precision"] = {"float64_premise": model_float64_premise(an.hm, an.report, inv_tau)}
    return cert


#: the largest composed bound (SymPy ``count_ops``) certify substitutes 1/τ into and proves: measured on
#: imported torch encoders (d_model 8, 2 heads, n ≤ 3, 1/τ = 10^5), one layer with layer norms: 112
#: operations, substituted and proved within seconds; two layers: 6004, SymPy's substitution (its
#: assumption queries) unfinished after 170 s — beyond this a certify or verify would not end
MAX_BOUND_OPERATIONS = 2000


def bound_sizes(c: Construction) -> list[int]:
    """SymPy's ``count_ops`` of each composed output bound of a model construction."""
    return [int(sp.count_ops(nb.bound.leak)) for nb in c.bounds.values()]


def bound_size_text(c: Construction) -> str:
    """``1 output bound of 1829 operations``: the size of a model construction's composed bounds
    (SymPy's ``count_ops``), for the progress line of the steps whose time grows with it."""
    ops = bound_sizes(c)
    return f"{len(ops)} output bound(s), the largest of {max(ops, default=0)} operations"


def check_bound_size(c: Construction) -> None:
    """Refuse a model construction whose largest composed bound exceeds :data:`MAX_BOUND_OPERATIONS`
    (every command bounded: the claims' substitution would not end).  Raises :class:`WorkLimitError`
    (a :class:`ParameterError`).
    Source: docs/torch.md, Limitations."""
    largest = max(bound_sizes(c), default=0)
    if largest > MAX_BOUND_OPERATIONS:
        raise WorkLimitError(f"the composed error bound has {largest} operations, beyond the {MAX_BOUND_OPERATIONS} "
                             "that softhard substitutes 1/tau into and proves in bounded time (each layer with layer "
                             "norms multiplies its size; docs/torch.md, Limitations)")


def certify_model(c: Construction, an: ModelAnalysis, *, n_max: int, n_lo: int = 1, tau: Fraction | str | None = None,
                  find_tau: bool = False, timeout_s: float = 20.0, numeric: bool = True,
                  numeric_opts: dict | None = None, progress: Callable[[str], None] | None = None) -> dict:
    """Certificate (schema 2, kind ``"model"``) for a model construction: the τ search (or the
    given τ), the numeric confirmation, then :func:`assemble` and the envelope (module docstring).

    ``tau``: exact and positive (a Fraction, an int or a string such as ``"1/100"``), or ``find_tau``.
    Raises :class:`ParameterError` for bad input (``n_max`` beyond the gap analysis, a ``tau`` that
    is not a positive number, a composed bound beyond :data:`MAX_BOUND_OPERATIONS`),
    :class:`SearchFailed` when ``find_tau`` finds no certifiable temperature, :class:`NotSimulable`
    when the needed 1/τ is beyond 1e300 (a gap too small to matter)."""
    t_start = time.perf_counter()
    n_max, n_lo = to_count(n_max, "n_max (--n-max)"), to_count(n_lo, "n_lo")
    timeout_s = to_seconds(timeout_s, "timeout_s (--timeout)")
    if n_max > an.report.n_max:
        raise ParameterError(f"n_max (--n-max) {n_max} exceeds the gap analysis length {an.report.n_max}")
    if tau is not None:
        tau = to_fraction(tau, "tau (--tau)")  # "1/100" or a Fraction: exact, as certify reads it
    certificate.check_range(n_lo, n_max, tau, find_tau)
    check_bound_size(c)  # before the search and the numeric run: refused at once
    say = progress or (lambda s: None)
    proofs = ProofCache()
    found = None
    if find_tau:
        say("searching for the largest certifiable tau")
        try:
            found = certificate.search_values(c, n_lo, n_max, False, timeout_s, ("tau",), proofs)
        except RepresentationError as e:  # required 1/tau beyond 1e300: a gap too small to matter in practice
            smallest = min((h.gap for h in an.report.heads.values() if h.gap), default=None)
            raise NotSimulable(f"--find-tau: {e} (smallest gap {smallest})", an.report) from None
        inv_tau, _ = certificate.searched_params(c, found, n_lo, n_max, False, ("tau",))
    else:
        inv_tau = 1 / tau
    t_search = time.perf_counter()
    num = None
    if numeric:
        say("numeric confirmation")
        plan = model_plan(numeric_opts)
        fams = model_families(c, an.report, n_max, **plan)
        guarded = {o.name for o in an.report.outputs.values() if o.margin is not None and c.params.epsilon < o.margin}
        num = observe_model(c, fams, float(inv_tau), head_bounds={h: v["error"] for h, v in an.bound.heads.items()},
                            guarded=guarded, progress=lambda f: say(f"numeric confirmation: {f}"))
        num["plan"] = plan
    t_num = time.perf_counter()
    say(f"substituting 1/tau into the composed bounds ({bound_size_text(c)}) and proving the claims")
    cert = assemble(c, an, inv_tau=inv_tau, n_lo=n_lo, n_max=n_max, timeout_s=timeout_s, proofs=proofs, found=found,
                    numeric=num, say=say)
    t_end = time.perf_counter()
    return certificate.envelope(cert, timeout_s=timeout_s, times={"gap_analysis_s": an.seconds, "search_s": t_search - t_start,
                                       "numeric_s": t_num - t_search, "solve_s": t_end - t_num,
                                       "total_s": an.seconds + t_end - t_start})


# --------------------------------------------------------------------------------------------
# replay (verify)


def _found(cert: dict) -> list[dict] | None:
    """The τ search's rows (:func:`~softhard.solver.model_inputs.search_rows`: the certified values
    and their measured logs), None for a given τ; raises :class:`CertificateError` for rows that
    are not a list of objects."""
    srch = cert.get("search")
    if srch is not None and (not isinstance(srch.get("per_bound"), list)
                             or not all(isinstance(r, dict) for r in srch["per_bound"])):
        raise CertificateError("search.per_bound: missing or not a list of rows", path="search.per_bound")
    return search_rows(cert)


def _positive_int(x, where: str) -> int:
    if not isinstance(x, int) or isinstance(x, bool) or x < 1:
        raise CertificateError(f"{where}: must be an integer >= 1, got {x!r}", path=where)
    return x


#: the canonical JSON of a replay's ``build_model_construction`` arguments -> its result (the analysis's
#: wall time ``seconds`` zeroed: no replay reads it): the construction and gap analysis are a
#: deterministic function of the embedded model, n_max, ε and the analysis options, so the verifies
#: of edited copies of one model certificate whose edits leave those alone (an edit of the numeric
#: section, of a claim, of the search) rebuild it once per process (ISSUE 16: the rebuilds were ~90 %
#: of tests/solver/test_formula_numeric.py's model every-edit test).  Neither result is mutated by a
#: replay or a measured check (each replay gets its own construction with its own ``source``).
_BUILT: dict[bytes, tuple[Construction, ModelAnalysis]] = {}
_BUILT_MAX = 8


def _built(doc: dict, spec: ModelSpec, n_max: int, epsilon: Fraction, method: str, searched: dict | None,
           opts: dict) -> tuple[Construction, ModelAnalysis]:
    """``build_model_construction(spec, n_max=n_max, epsilon=epsilon, method=method, searched=searched,
    **opts)`` for ``spec = model_from_doc(doc, ...)``, memoised in :data:`_BUILT` by the canonical JSON
    of the arguments (not memoised when they have none; raises what it raises, never memoised)."""
    try:
        key = canonical([doc, n_max, frac_str(epsilon), method, searched, opts])
    except (TypeError, ValueError):
        key = None
    got = _BUILT.get(key) if key is not None else None
    if got is None:
        c, an = build_model_construction(spec, n_max=n_max, epsilon=epsilon, method=method, searched=searched, **opts)
        got = (c, dataclasses.replace(an, seconds=0.0))
        if key is not None:
            if len(_BUILT) >= _BUILT_MAX:
                _BUILT.pop(next(iter(_BUILT)))
            _BUILT[key] = got
    return got


def replay(cert: dict, timeout_s: float) -> tuple[dict, tuple[Construction, ModelAnalysis]]:
    """Re-assemble a model certificate from its inputs (module docstring); returns it with the
    rebuilt construction and analysis.  Raises :class:`CertificateError` (with the JSON path) for
    inputs that do not rebuild, a range beyond the premises, or an exhaustive premise larger than
    :data:`VERIFY_EXHAUSTIVE_LIMIT` (not taken on trust: the hashes are unkeyed)."""
    src, rng = cert["source"], cert["range"]
    doc = src["model"]
    if not isinstance(doc, dict) or doc_sha256(doc) != src["model_sha256"]:
        raise CertificateError("source.model: the embedded model does not match source.model_sha256",
                               path="source.model")
    spec = model_from_doc(doc, path="<certificate source.model>")
    n_max = _positive_int(src["n_max"], "source.n_max")
    epsilon = check_epsilon(parse_frac(src["epsilon"], "source.epsilon"))
    if rng["all_n"] or rng["n_max"] > n_max:
        where = "range.all_n" if rng["all_n"] else "range.n_max"
        raise CertificateError(f"{where}: the certified range (n_max = {rng['n_max']}, all_n = {rng['all_n']}) exceeds "
                               f"the length {n_max} the gap premises were established for (source.n_max)", path=where)
    opts = dict(cert["analysis"]["options"])
    method = opts.pop("method")
    limit = verify_exhaustive_limit()
    total = count_words(len(spec.alphabet), n_max, cap=max(limit, opts.get("exhaustive_limit", 0)))
    words = word_count_text(len(spec.alphabet), n_max)
    if method == "exhaustive" and total > limit:
        raise CertificateError(f"premises: the exhaustive premise covers {words} words, more than verify re-runs "
                               f"({limit}; {VERIFY_EXHAUSTIVE_LIMIT} per Dask worker, 'verify --workers K'); it "
                               "cannot be re-established here, so the certificate is not verified", path="premises")
    if method == "searched" and limit < total <= opts.get("exhaustive_limit", 0):
        raise CertificateError(f"analysis.options.exhaustive_limit: a tie-break's hard outputs were compared on all "
                               f"{words} words, more than verify re-runs ({limit})",
                               path="analysis.options.exhaustive_limit")
    # tie-break "auto": a certificate made with "off" has no UHA tie (a tie is gap 0: not
    # simulable), so "auto" plans no tie-break for it either
    c, an = _built(doc, spec, n_max, epsilon, method, searched_reports(cert), opts)
    c = dataclasses.replace(c, source={**c.source, "file": src.get("file"), "file_sha256": src.get("file_sha256")})
    found = _found(cert)
    if found is not None:
        inv_tau, _ = certificate.found_params(c, found, rng["n_min"], rng["n_max"], False, ("tau",))
    else:
        inv_tau = parse_frac(cert["construction"]["inv_tau"], "construction.inv_tau")
        if inv_tau <= 0:
            raise CertificateError("construction.inv_tau: must be > 0", path="construction.inv_tau")
    certificate.check_range(rng["n_min"], rng["n_max"], Fraction(1), False)
    fresh = assemble(c, an, inv_tau=inv_tau, n_lo=rng["n_min"], n_max=rng["n_max"], timeout_s=timeout_s,
                     proofs=ProofCache(), found=found, numeric=cert.get("numeric"))
    return fresh, (c, an)


def check_measured(cert: dict, ctx: tuple[Construction, ModelAnalysis], rep: VerifyReport) -> None:
    """Consistency of the measured fields (the formula kind's checks of the numeric summary and the
    search's empirical rows, then the model's: per-head results, inputs, 1/τ of the run), and a
    line in ``rep.checked`` saying how the premises were re-established."""
    c, an = ctx
    certificate.check_measured(cert, c, rep)
    check_numeric(cert.get("numeric"), c, {h: v["error"] for h, v in an.bound.heads.items()},
                  parse_frac(cert["construction"]["inv_tau"], "construction.inv_tau"), rep, report=an.report,
                  n_max=cert["range"]["n_max"])
    if an.report.exhaustive:
        rep.checked.append(f"premises re-established by exhaustive enumeration ({an.report.words} words)")
    else:
        rep.checked.append("searched premises: attaining inputs re-evaluated exactly (premise not proved)")


#: the model-file kind in the registry (:mod:`softhard.solver.kinds`)
MODEL = Kind(name="model", inputs=inputs, replay=replay, check_measured=check_measured)
