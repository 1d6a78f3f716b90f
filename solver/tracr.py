"""Certify compiled Tracr transformers: the lengths and temperatures at which they stay exact
(THEORY §2, §3, §6, §7, §8; docs/tracr.md).

Pipeline (the same path as model files — model representation, exact gap analysis, composed
bounds, Z3 claims with an arb second check — specialised where compiled models need it):

1. :func:`softhard.constructions.tracr.load_tracr` maps the export onto a softhard model whose
   inverse temperature ``λ = 1/τ`` is Tracr's effective coldness ``c/√key_size``;
2. **analysis** (:mod:`.tracr_analysis`): every word up to ``max_seq_len`` enumerated in exact
   arithmetic — per head its structured premise and logit table, per MLP its hard contexts, per
   output its hard values and margin — and the composed bounds ``E_o(n, τ)`` and resolution
   conditions (:func:`softhard.bounds.tracr.compose`), exhaustive and extrapolated;
3. **search** (:func:`.tracr_answers.search_values`, certify only): the minimum 1/τ, the largest
   length N* and the largest max_seq_len N_c, found numerically — *stated values*;
4. **measured** (:mod:`.tracr_numeric`): the stored examples and every word up to
   ``max_seq_len`` run hard and soft (the ``numeric`` section);
5. **assemble** (:func:`assemble`): every other field of the certificate, deterministically from
   the analysis, the parameters and the stated values — each answer's claims proved
   (:func:`.tracr_answers.answers`: the stated values re-proved, never trusted);
6. :func:`softhard.solver.certificate.envelope`: ``created``, ``tool``, ``times`` and the hashes.

The certificate is ``{"schema": "softhard-certificate", "schema_version": 2, "kind": "tracr"}``
(``solver/schema/certificate-2.schema.json``, ``$defs/tracr_certificate``).  :func:`replay`
(verify, :data:`TRACR`) rebuilds the model from the embedded document, re-runs the analysis and
:func:`assemble` with the stored parameters and stated values, so every non-measured field is
re-derived and compared by :func:`softhard.solver.replay.verify`; :func:`check_measured` then
re-runs the stored examples and checks the all-words rows against each other and the bound.
"""

from __future__ import annotations

import json
import time
from fractions import Fraction

import mpmath
import sympy as sp

from ..bounds.derive import evaluate, latex
from ..bounds.tracr import fs, generic_leak_expr
from ..constructions.errors import CertificateError, ParameterError
from ..constructions.hard_model import HardModel
from ..constructions.modelfile import doc_sha256, model_from_doc
from ..constructions.parameters import to_count, to_fraction, to_seconds
from ..constructions.tracr import TracrModel, UnsupportedModel, bos_obstacle, parse_labels, sqrt_ratio_enclosure
from .certificate import envelope
from .certjson import canonical
from .check import ProofCache
from .claims import graph_data, parse_frac
from .oracle import ORACLE_LOG, note_answer
from .replay import SCHEMA, SCHEMA_VERSION, Kind, VerifyReport
from .tracr_analysis import Analysis, analyse, check_source, fd, model_info
from .tracr_answers import SEARCH_METHOD, answers, search_values
from .tracr_inputs import inputs
from .tracr_inputs import stated as stated_values
from .tracr_numeric import check_numeric, confirm_all_words, confirm_examples, examples_ok

__all__ = ["TRACR", "analyse", "assemble", "certify_tracr", "check_measured", "confirm_all_words", "confirm_examples",
           "model_info", "replay"]

COMPOSED = ("every claim of role 'compiled' proved AND the premises established => at every position of every word "
            "of length <= max_seq_len, the softmax model at its compiled temperature is within epsilon of the "
            "average-hard-attention model on every output coordinate (THEORY §2, §3, §6); with epsilon below the "
            "output's margin, the decoded outputs are equal")

#: the parts of ``source.tracr`` no derived field depends on: provenance (annotations) and the
#: stored examples (read by the measured numeric confirmation only)
_NOT_REPLAYED = ("source", "files", "sops", "modules", "examples")


# --------------------------------------------------------------------------------------------
# the derived sections


def _model_json(info: dict, hm: HardModel, lam: tuple[Fraction, Fraction], doc: dict,
                bos: str | None = "the BOS row is never read by a later head's keys or values: the format's BOS "
                                  "convention and Tracr's give identical outputs at every non-BOS position") -> dict:
    return {"name": info["name"], "label": info["label"], "vocab": list(hm.alphabet),
            "max_seq_len": info["max_seq_len"], "layers": doc["n_layers"], "num_heads": info["num_heads"],
            "key_size": info["key_size"], "coldness_nominal": info["coldness"],
            "coldness_source": info["coldness_source"],
            "inv_tau_compiled": {"lower": fs(lam[0]), "upper": fs(lam[1]), "decimal": fd(lam[0]),
                                 "formula": f"coldness/sqrt(key_size) = {info['coldness']}/sqrt({info['key_size']})"},
            "mlp_exactness": info["mlp_exactness"], "blocks": _blocks(hm), "notes": info["notes"],
            "bos_convention": bos}


def _blocks(hm: HardModel) -> list[dict]:
    labs = [lab for lab in hm.labels if not lab.startswith("__")]
    return [{"name": b.name, "kind": b.kind, "size": len(b.coords),
             "values": [v for v in b.values if v is not None][:12]} for b in parse_labels(labs)]


def _premises_json(an: Analysis) -> dict:
    st = an.stats
    heads = []
    for h, hs in st.heads.items():
        heads.append({"head": h, "layer": hs.layer, "bos_competitor": hs.bos_competitor.to_json(),
                      "bos_in_argmax": hs.bos_in_argmax.to_json(), "ties_max": hs.ties_max,
                      "statement": (f"on every input of length n in [1, {st.n_max}], every non-BOS row of head {h} "
                                    "has: if BOS is a competitor, BOS gap >= gap_bos, other competitors' gap >= "
                                    "gap_rest, argmax size >= a_min; if BOS is in the argmax, competitors' gap >= "
                                    "gap_rest and argmax size >= a_min (bos_in_argmax)")})
    outs = []
    for name, o in st.outputs.items():
        outs.append({"output": name, "type": o.type, "margin": fs(o.margin), "margin_decimal": fd(o.margin),
                     "distinct_values": len(o.values), "epsilon": fs(an.epsilon[name]),
                     "epsilon_below_margin": None if o.margin is None else bool(an.epsilon[name] < o.margin),
                     "attained_by": (None if o.witness is None else
                                     ({"word": list(o.witness[0]), "row": o.witness[1]} if o.type == "categorical" else
                                      {"values": [fs(o.witness[0]), fs(o.witness[1])]}))})
    return {"status": f"established (exhaustive over {st.words} words)", "method": "exhaustive", "n_max": st.n_max,
            "words": st.words, "heads": heads, "outputs": outs}


def _heads_json(an: Analysis) -> list[dict]:
    out = []
    for h, t in an.tables.items():
        hb = an.bound.heads[h]
        theta = hb["theta"]
        ext_theta = an.bound_ext.heads[h]["theta"] if an.bound_ext is not None else None
        gen = generic_leak_expr((an.stats.heads[h].bos_competitor, an.stats.heads[h].bos_in_argmax))
        N = an.n_table
        lam = an.lam[0]
        out.append({"head": h, "table": t.to_json(),
                    "bos_query_attends_bos_only": all(v < t.bos_row[-1] for v in t.bos_row[:-1]),
                    "leak_bound": {"text": str(theta), "latex": latex(theta), "srepr": sp.srepr(theta)},
                    "leak_bound_extrapolated": None if ext_theta is None else str(ext_theta),
                    "generic_gap_lemma": str(gen),
                    "at_compiled_inv_tau": {"n": N, "structured": mpmath.nstr(evaluate(theta, n_value=N, inv_tau=lam), 6),
                                            "generic": mpmath.nstr(evaluate(gen, n_value=N, inv_tau=lam), 6)},
                    "spread": hb["spread"], "error_written": str(hb["error"])})
    return out


def _outputs_json(an: Analysis) -> list[dict]:
    o = an.hm.outputs[0]
    return [{"output": name, "type": o.type, "epsilon": fs(an.epsilon[name]), "margin": fs(an.margins[name]),
             "bound": {"text": str(e), "latex": latex(e), "srepr": sp.srepr(e)},
             "bound_extrapolated": None if an.bound_ext is None else str(an.bound_ext.outputs[name]),
             "margin_extrapolated": (None if an.ext is None else fs(an.ext.margins.get(name)))}
            for name, e in an.bound.outputs.items()]


def _mlps_json(an: Analysis) -> list[dict]:
    out = []
    for name, mi in an.mlp_info.items():
        cond = an.bound.conditions.get(name)
        out.append({"mlp": name, **mi, "condition": None if cond is None else
                    {"text": f"{cond[0]} <= {fs(cond[1])}", "error_in": str(cond[0]), "r_min": fs(cond[1])},
                    "decoder": an.decoders.get(name)})
    return out


# --------------------------------------------------------------------------------------------
# assemble (certify and replay)


def assemble(an: Analysis, doc: dict, params: dict, stated: dict, *, proofs: ProofCache, timeout_s: float,
             numeric: dict | None = None, say=None) -> dict:
    """The Tracr certificate of the analysed model without the measured envelope (``created``,
    ``tool``, ``times``) and ``hashes``: ``doc`` the embedded model document, ``params``
    ``{"epsilon": "margin" | "p/q", "n_target": N}``, ``stated`` the search's stated values
    (:func:`.tracr_answers.search_values`), ``numeric`` the measured section or None.  Every
    claim is checked through ``proofs``.  Deterministic in its arguments (measured fields
    aside): :func:`replay` relies on it.  Raises :class:`CertificateError` for a stated value of
    the wrong shape."""
    ans, runs = answers(an, params["n_target"], stated, proofs, timeout_s, say)
    main = [r for r in runs if r.role == "compiled"]
    status = ("proved" if all(r.json["status"] == "proved" for r in main) else
              "refuted" if any(r.json["status"] == "refuted" for r in main) else "unknown")
    cert = {
        "schema": SCHEMA, "schema_version": SCHEMA_VERSION, "kind": "tracr",
        "source": {"model": doc, "model_sha256": doc_sha256(doc), "tracr": an.info, "parameters": params},
        "model": _model_json(an.info, an.hm, an.lam, doc),
        "premises": _premises_json(an),
        "heads": _heads_json(an), "mlps": _mlps_json(an), "outputs": _outputs_json(an),
        "graph": graph_data(an.bound.graph),
        "claims": [r.json for r in runs],
        "search": {"method": SEARCH_METHOD, **stated},
        "answers": ans,
        "status": status,
        "composed": COMPOSED,
        "numeric": numeric,
    }
    return json.loads(json.dumps(cert))  # JSON types throughout (tuples -> lists), as a stored certificate


def _epsilon_param(epsilon) -> str:
    if isinstance(epsilon, str) and epsilon.strip() == "margin":
        return "margin"
    e = to_fraction(epsilon, "epsilon (--epsilon)")  # "x", NaN, a list: one line naming it
    if e <= 0:
        raise ParameterError(f"epsilon (--epsilon) must be > 0, got {epsilon}")
    return fs(e)


def certify_tracr(tm: TracrModel, *, epsilon="margin", n_target: int | None = None, timeout_s: float = 20.0,
                  numeric: bool = True, extra_inv_taus: list[float] | None = None, progress=None) -> dict:
    """The Tracr certificate (module docstring): analysis, search, measured numeric confirmation,
    :func:`assemble`, envelope.  ``epsilon``: "margin" (per output just below its rounding
    margin) or one exact positive rational; ``n_target``: length for the minimum-temperature
    answer (default max_seq_len); ``extra_inv_taus``: further temperatures of the all-words run.
    Raises :class:`ParameterError` for bad parameters and :class:`UnsupportedModel` for models
    the analysis does not cover."""
    t0 = time.perf_counter()
    say = progress or (lambda s: None)
    if n_target is not None:
        n_target = to_count(n_target, "n_target (--n)")
    timeout_s = to_seconds(timeout_s, "timeout_s (--timeout)")
    eps = _epsilon_param(epsilon)
    doc = tm.to_doc()
    hm = tm.hard_model()
    info = model_info(tm)
    an = _analyse_or_obstacle(hm, info, eps, say)
    if isinstance(an, tuple):  # a part the analysis does not cover: status unknown, the part named
        params = {"epsilon": eps, "n_target": n_target or int(info["max_seq_len"])}
        cert = assemble_uncertifiable(hm, info, doc, params, an)
        t_end = time.perf_counter()
        return envelope(cert, timeout_s=timeout_s, times={"analysis_s": t_end - t0, "total_s": t_end - t0})
    params = {"epsilon": eps, "n_target": n_target or an.n_table}
    t_an = time.perf_counter()
    say("searching the minimum temperature and the largest lengths")
    stated = search_values(an, params["n_target"])
    t_search = time.perf_counter()
    num = None
    if numeric:
        say("numeric confirmation")
        num = {"examples": confirm_examples(an), "all_words": confirm_all_words(an, extra_inv_taus)}
        num["ok"] = bool(examples_ok(num["examples"]) and num["all_words"]["ok"])
    t_num = time.perf_counter()
    cert = assemble(an, doc, params, stated, proofs=ProofCache(), timeout_s=timeout_s, numeric=num, say=say)
    t_end = time.perf_counter()
    return envelope(cert, timeout_s=timeout_s, times={"analysis_s": t_an - t0, "search_s": t_search - t_an, "numeric_s": t_num - t_search,
                           "solve_s": t_end - t_num, "total_s": t_end - t0})


def _analyse_or_obstacle(hm: HardModel, info: dict, eps: str, say=None) -> Analysis | tuple[str, str]:
    """The analysis, or ``(part, reason)`` when the model has a part it does not cover: the BOS row
    read by a later head (:func:`softhard.constructions.tracr.bos_obstacle`) or an analysis step
    raising :class:`UnsupportedModel` (e.g. a query or key carrying soft error).  Deterministic:
    certify and replay call it alike."""
    ob = bos_obstacle(hm)
    if ob is not None:
        return ob
    try:
        return analyse(hm, info, epsilon=eps if eps == "margin" else Fraction(eps), progress=say)
    except UnsupportedModel as e:
        return (e.part or "model", str(e))


def assemble_uncertifiable(hm: HardModel, info: dict, doc: dict, params: dict, obstacle: tuple[str, str]) -> dict:
    """The certificate of a model with a part the analysis does not cover (without the measured
    envelope): status ``unknown``, no claims, every answer ``unknown`` with the reason, and
    ``uncertifiable`` naming the part.  Deterministic in its arguments (:func:`replay`)."""
    part, reason = obstacle
    lam = sqrt_ratio_enclosure(Fraction(info["coldness"]), int(info["key_size"]))
    why = f"not certifiable: {part}: {reason}"
    unknown = {"status": "unknown", "reason": why}
    cert = {
        "schema": SCHEMA, "schema_version": SCHEMA_VERSION, "kind": "tracr",
        "source": {"model": doc, "model_sha256": doc_sha256(doc), "tracr": info, "parameters": params},
        "model": _model_json(info, hm, lam, doc, bos=None),
        "premises": {"status": "not established (the model has a part the analysis does not cover)", "method": "none",
                     "n_max": int(info["max_seq_len"]), "words": 0, "heads": [], "outputs": []},
        "heads": [], "mlps": [], "outputs": [], "graph": {},
        "claims": [],
        "search": {"method": SEARCH_METHOD, "min_inv_tau": None, "longer_inputs": None, "recompiled": None},
        "answers": {"compiled": {**unknown, "inv_tau": fs(lam[0]), "inv_tau_decimal": fd(lam[0]),
                                 "n_range": [1, int(info["max_seq_len"])], "claims": []},
                    "min_inv_tau": unknown, "longer_inputs": unknown, "recompiled": unknown},
        "uncertifiable": {"part": part, "reason": reason},
        "status": "unknown",
        "composed": COMPOSED,
        "numeric": None,
    }
    return json.loads(json.dumps(cert))


# --------------------------------------------------------------------------------------------
# replay (verify)


_ANALYSES: dict[bytes, Analysis] = {}
_CORES: dict[bytes, tuple[dict, Analysis, list]] = {}
_CACHE_SIZE = 8


def _remember(cache: dict, key: bytes, value):
    if len(cache) >= _CACHE_SIZE:
        cache.pop(next(iter(cache)))
    cache[key] = value
    return value


def _recall(cache: dict, key: bytes):
    """``cache[key]``, moved to the end of the eviction order (least recently used goes first: the
    unedited certificate's analysis stays while verify replays its edited copies)."""
    cache[key] = value = cache.pop(key)
    return value


def _replayed_info(info: dict) -> dict:
    return {k: v for k, v in info.items() if k not in _NOT_REPLAYED}


def _analysis(doc: dict, info: dict, params: dict) -> Analysis:
    """The analysis of a stored model document and export metadata (memoised: the replays of
    certificates that differ only in stated values or derived fields share it)."""
    key = canonical([doc, _replayed_info(info), params["epsilon"]])
    if key in _ANALYSES:
        return _recall(_ANALYSES, key)
    hm = model_from_doc(doc, path="<certificate source.model>").canonical()
    check_source(hm, doc, info)
    eps = params["epsilon"]
    if eps != "margin":
        e = parse_frac(eps, "source.parameters.epsilon")
        if e <= 0 or fs(e) != eps:
            raise CertificateError("source.parameters.epsilon: 'margin' or a positive rational 'p/q' in lowest terms",
                                   path="source.parameters.epsilon")
    n_target = params["n_target"]
    if isinstance(n_target, bool) or not isinstance(n_target, int) or n_target < 1:
        raise CertificateError("source.parameters.n_target: a positive integer", path="source.parameters.n_target")
    an = _analyse_or_obstacle(hm, info, eps)
    if isinstance(an, tuple):
        an = (hm, an)
    return _remember(_ANALYSES, key, an)


def replay(cert: dict, timeout_s: float) -> tuple[dict, Analysis]:
    """Re-assemble a Tracr certificate from its embedded model document, export metadata,
    parameters and stated values (module docstring); returns it (``source`` and ``numeric`` as
    stored: inputs and measured) with the analysis.  Raises :class:`CertificateError` for inputs
    that do not rebuild (the embedded document not matching ``source.model_sha256``, metadata
    that disagrees with it, stated values of the wrong shape)."""
    src = cert["source"]
    doc, info, params = src["model"], src["tracr"], src["parameters"]
    if doc_sha256(doc) != src["model_sha256"]:
        raise CertificateError("source.model_sha256: the embedded model does not match it", path="source.model_sha256")
    stated = stated_values(cert)
    key = canonical([doc, _replayed_info(info), params, stated, timeout_s])
    if key not in _CORES:
        an = _analysis(doc, info, params)
        rows: list = []  # the oracle calls the core rests on (softhard.solver.oracle), kept with it
        token = ORACLE_LOG.set(rows)
        try:
            if isinstance(an, tuple):  # the same uncovered part: the same certificate, no claims
                core = assemble_uncertifiable(an[0], info, doc, params, an[1])
            else:
                core = assemble(an, doc, params, stated, proofs=ProofCache(), timeout_s=timeout_s)
        finally:
            ORACLE_LOG.reset(token)
        _remember(_CORES, key, (core, an, rows))
    core, an, rows = _recall(_CORES, key)
    # a replay served from the memo states the oracle calls its core was computed from: a replay
    # artefact recorded from it holds its whole transcript (softhard.solver.replay_memo)
    for row in rows:
        note_answer(row)
    return {**core, "source": src, "numeric": cert.get("numeric")}, an  # inputs and measured: as stored


def check_measured(cert: dict, an: Analysis, rep: VerifyReport) -> None:
    """Consistency of the measured ``numeric`` section: the stored examples re-run and compared,
    the all-words rows checked against each other and the re-derived bound
    (:func:`.tracr_numeric.check_numeric`)."""
    if isinstance(an, tuple):
        rep.checked.append(f"the uncovered part re-found: {an[1][0]}")
        return
    rep.checked.append(f"premises re-established by exhaustive enumeration ({an.stats.words} words)")
    check_numeric(cert.get("numeric"), cert["source"]["tracr"]["examples"], an, rep)


#: the Tracr kind in the registry (:mod:`softhard.solver.kinds`)
TRACR = Kind(name="tracr", inputs=inputs, replay=replay, check_measured=check_measured)
