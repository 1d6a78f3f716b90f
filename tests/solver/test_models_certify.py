"""certify --model / verify round trip of the hand-written model, tamper detection, premise honesty
(issue 5, item 4 and "done when"; issue 12: model certificates are verified by replay)."""

from __future__ import annotations

import copy
import json
import time
from fractions import Fraction
from pathlib import Path

import pytest
from models_util import follow_doc, uha_doc
from tamper import undetected

from softhard.bounds.composed import HeadPremise
from softhard.constructions.modelfile import doc_sha256, load_model
from softhard.constructions.random_models import random_model_doc
from softhard.solver import model_inputs, models
from softhard.solver.certjson import compute_hashes, load_certificate
from softhard.solver.cli import main
from softhard.solver.cli.handlers.certificates import print_model_certificate
from softhard.solver.kinds import KINDS, verify_certificate
from softhard.solver.models import build_model_construction, certify_model
from softhard.solver.replay import clear_replay_cache, measured_fields

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "models" / "ab_subsequence.json"


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    out = tmp_path_factory.mktemp("c") / "ab.json"
    rc = main(["certify", "--model", str(EXAMPLE), "--n-max", "9", "--epsilon", "1/4", "--find-tau", "-o", str(out)])
    assert rc == 0
    return load_certificate(out)


def test_certificate_contents(cert):
    assert cert["kind"] == "model" and "model" in KINDS
    assert cert["status"] == "proved"
    assert cert["source"]["kind"] == "model"
    assert cert["premises"]["status"] == "established (exhaustive over 1022 words)"
    assert all(h["gap"] == "1/2" for h in cert["premises"]["heads"])
    assert cert["premises"]["output_margins"][0]["epsilon_below_margin"] is True
    assert [n["node"] for n in cert["nodes"]] == ["out:accept"]
    cl = cert["claims"][0]
    assert cl["status"] == "proved" and cl["second_check"]["status"] == "proved"
    assert cl["n_lo"] == 1 and cl["n_hi"] == 9 and cl["tolerance"] == "1/4"
    assert "exp" in cl["expr_text"] and "tau" not in cl["expr_text"]
    assert cert["numeric"]["ok"] and cert["numeric"]["nodes"]["out:accept"]["violations"] == 0
    # the first-layer head's gap-lemma bound is attained numerically (tightness 1)
    assert cert["numeric"]["heads"]["seen_a"]["worst_ratio"] == pytest.approx(1.0, rel=1e-6)
    # the model is embedded (self-contained certificate) and the graph is the model graph
    assert cert["source"]["model"]["name"] == "ab_subsequence"
    kinds = {n["kind"] for n in cert["graph"]["nodes"]}
    assert {"embed", "attn", "residual-add", "ffn", "output"} <= kinds
    # an exhaustive analysis records only what its result depends on; run times are in `times`
    assert cert["analysis"]["options"] == {"method": "exhaustive"}
    assert "seconds" not in cert["premises"] and "seconds" not in cert["analysis"]["gap_report"]
    assert cert["times"]["gap_analysis_s"] > 0


def test_verify_round_trip(cert, tmp_path, capsys):
    p = tmp_path / "c.json"
    p.write_text(json.dumps(cert))
    assert main(["verify", str(p)]) == 0
    assert "premises re-established by exhaustive enumeration (1022 words)" in capsys.readouterr().out


def _rehash(c):
    c["hashes"] = compute_hashes(c)
    return c


def _problems(c):
    rep = verify_certificate(c)
    return [f for f, _ in rep.problems], rep


def test_tamper_detection(cert):
    # 1. an edited premise gap, hashes left alone: the section hash and the replay fire
    c = copy.deepcopy(cert)
    c["premises"]["heads"][0]["gap"] = "3/4"
    fields, _ = _problems(c)
    assert "premises" in fields and "premises.heads[0].gap" in fields
    # 2. the same edit with recomputed hashes: still caught, by field (re-derivation)
    fields, _ = _problems(_rehash(c))
    assert fields == ["premises.heads[0].gap"]
    # 3. a larger gap in the source's premise values too (the values the bound is built from),
    #    hashes recomputed: the exhaustive re-run disagrees with both
    c = copy.deepcopy(cert)
    c["source"]["premises"]["seen_a"]["gap"] = "1"
    c["premises"]["heads"][0]["gap"] = "1"
    fields, rep = _problems(_rehash(c))
    assert {"premises.heads[0].gap", "source.premises.seen_a.gap"} <= set(fields), rep.problems
    # 4. an edited weight of the embedded model without its sha256
    c = copy.deepcopy(cert)
    c["source"]["model"]["layers"][1]["heads"][0]["W_K"]["entries"][1][2] = "1/4"
    fields, rep = _problems(_rehash(c))
    assert fields == ["source.model"] and "model_sha256" in rep.problems[0][1]
    # 5. ... and with its sha256 updated: this weight does not enter the bound through the value
    #    spread, but the premise (BOS now at 1/4: gap 1/4) no longer holds, and the exhaustive
    #    re-run says so
    c["source"]["model_sha256"] = doc_sha256(c["source"]["model"])
    fields, rep = _problems(_rehash(c))
    msg = dict(rep.problems)
    assert "premises.heads[1].gap" in msg and 'the replay gives "1/4"' in msg["premises.heads[1].gap"]
    # 6. a value weight (enters the bound through the value spread D) edited, sha256 updated:
    #    the re-derived graph, bound and claim differ from the stored ones
    c = copy.deepcopy(cert)
    c["source"]["model"]["layers"][1]["heads"][0]["W_V"]["entries"][0][2] = 2
    c["source"]["model_sha256"] = doc_sha256(c["source"]["model"])
    fields, rep = _problems(_rehash(c))
    assert any(f.startswith("graph.") for f in fields), rep.problems
    assert {"nodes[0].bound.srepr", "claims[0].expr_srepr"} <= set(fields), rep.problems
    # 7. a status downgrade of the premises is caught
    c = copy.deepcopy(cert)
    c["premises"]["status"] = "searched (not proved)"
    fields, _ = _problems(_rehash(c))
    assert "premises.status" in fields
    # 8. the fields the old per-kind verify trusted (issue 12): epsilon_below_margin, a deleted
    #    output_margins, a rewritten head statement, the analysis section
    for edit, where in (
            (lambda x: x["premises"]["output_margins"][0].update(epsilon_below_margin=False),
             "premises.output_margins[0].epsilon_below_margin"),
            (lambda x: x["premises"].pop("output_margins"), "premises"),
            (lambda x: x["premises"]["heads"][0].update(statement="every gap >= 1"), "premises.heads[0].statement"),
            (lambda x: x["analysis"]["per_node"]["out:accept"].update(error="0"), "analysis.per_node.out:accept.error"),
            (lambda x: x["analysis"]["gap_report"]["heads"][1].update(ties_max=1),
             "analysis.gap_report.heads[1].ties_max")):
        c = copy.deepcopy(cert)
        edit(c)
        fields, rep = _problems(_rehash(c))
        assert where in fields, (where, rep.problems)


def test_consistent_forgery_of_a_premise_is_caught(cert):
    """A forger who also re-derives everything from a larger gap (a smaller bound, so a warmer
    certified τ): verify re-runs the exhaustive analysis and the bound built from the true gap
    differs, by field."""
    spec = load_model(EXAMPLE)
    c, an = build_model_construction(spec, n_max=9, epsilon=Fraction(1, 4))
    an.report.heads["seen_a"].gap = Fraction(1)
    premises = {k: HeadPremise(g.gap, g.ties_max) for k, g in an.report.heads.items()}
    c, an.bound = models._construction(spec, an.hm, premises, 9, Fraction(1, 4), {})
    forged = json.loads(json.dumps(certify_model(c, an, n_max=9, find_tau=True, numeric=False)))
    assert forged["premises"]["heads"][0]["gap"] == "1" and forged["status"] == "proved"
    fields, rep = _problems(forged)
    assert {"premises.heads[0].gap", "source.premises.seen_a.gap", "nodes[0].bound.srepr",
            "claims[0].expr_srepr"} <= set(fields), rep.problems


def test_exhaustive_premise_beyond_the_verify_limit_is_not_verified(cert, monkeypatch):
    monkeypatch.setattr(model_inputs, "VERIFY_EXHAUSTIVE_LIMIT", 1000)  # the certificate covers 1022 words
    clear_replay_cache()
    rep = verify_certificate(cert)
    clear_replay_cache()
    assert not rep.ok and rep.problems[0][0] == "premises"
    assert "cannot be re-established here, so the certificate is not verified" in rep.problems[0][1]


def test_measured_fields_are_checked_for_consistency(cert):
    """The numeric section is measured (not re-run by verify); its consistency with the re-derived
    bounds is checked, and nothing else is exempt from the replay."""
    assert set(measured_fields("model")) >= {"numeric", "created", "tool", "times"}
    for edit, where in (
            (lambda x: x["numeric"]["heads"]["seen_a"].update(bound=1.0), "numeric.heads.seen_a.bound"),
            (lambda x: x["numeric"]["heads"]["seen_a"].update(worst_ratio=0.5), "numeric.heads.seen_a.worst_ratio"),
            (lambda x: x["numeric"]["nodes"]["out:accept"].update(ratio=0.5), "numeric.nodes.out:accept.ratio"),
            (lambda x: x["numeric"].update(inv_tau_float=3.0), "numeric.inv_tau_float"),
            (lambda x: x["numeric"].update(mismatched_outputs=2), "numeric.ok")):
        c = copy.deepcopy(cert)
        edit(c)
        fields, rep = _problems(_rehash(c))
        assert where in fields, (where, rep.problems)


def test_searched_premise_gives_unknown_status(tmp_path, capsys):
    """When the gap premise is only searched, the claims are proved conditionally and the overall
    status is unknown — certify exits 1, verify accepts the (honest) certificate."""
    doc = random_model_doc(1, layers=1, width=6, heads=1, alphabet_size=3)
    p = tmp_path / "r.json"
    p.write_text(json.dumps(doc))
    out = tmp_path / "r.cert.json"
    rc = main(["certify", "--model", str(p), "--n-max", "12", "--epsilon", "1/10", "--find-tau",
               "--exhaustive-limit", "100", "--search-words", "300", "--search-max-len", "12", "-o", str(out),
               "--no-numeric"])
    assert rc == 1
    capsys.readouterr()
    c = load_certificate(out)
    assert c["premises"]["status"] == "searched (not proved)" and c["premises"]["method"] == "searched"
    assert c["analysis"]["options"] == {"method": "searched", "exhaustive_limit": 100, "search_words": 300,
                                        "search_max_len": 12, "seed": 0}
    assert all(cl["status"] == "proved" for cl in c["claims"])
    assert c["status"] == "unknown"
    rep = verify_certificate(c)
    assert rep.ok, rep.problems
    assert any("searched premises" in x for x in rep.checked)
    # claiming "proved" for it is caught
    fields, _ = _problems(_rehash({**copy.deepcopy(c), "status": "proved"}))
    assert "status" in fields
    # a searched value is re-evaluated exactly at its attaining input: a larger stored gap or a
    # smaller tie count than the input shows is caught, and the premises follow the stored values
    for edit, where in (
            (lambda x: x["analysis"]["gap_report"]["heads"][0].update(gap="100"), "analysis.gap_report.heads[0].gap"),
            (lambda x: x["analysis"]["gap_report"]["heads"][0].update(ties_max=0),
             "analysis.gap_report.heads[0].ties_max"),
            (lambda x: x["analysis"]["gap_report"]["heads"][0].update(attained_by={"word": ["x"], "row": 1}),
             "analysis.gap_report.heads[0].attained_by"),
            (lambda x: x["premises"]["heads"][0].update(gap="100"), "premises.heads[0].gap"),
            # the uniform-tieless counts are searched values, but a stored tied row must exist exactly
            # when rows.tied > 0, and be a tied row when re-evaluated (issue 13 item 5)
            (lambda x: x["analysis"]["gap_report"]["heads"][0]["rows"].update(
                tied=0 if x["analysis"]["gap_report"]["heads"][0]["tied_at"] else 1),
             "analysis.gap_report.heads[0].tied_at"),
            (lambda x: x["analysis"]["gap_report"]["heads"][0].update(
                tied_at={"word": ["a"], "row": 1}, rows={"uniform": 0, "unique_max": 0, "tied": 1}),
             "analysis.gap_report.heads[0].tied_at")):
        c2 = copy.deepcopy(c)
        edit(c2)
        fields, rep = _problems(_rehash(c2))
        assert where in fields, (where, rep.problems)


def test_certify_model_epsilon_default_and_not_simulable(tmp_path, capsys):
    # --epsilon defaults to margin (as for --tracr); a model with only numerical outputs needs one
    p = tmp_path / "u.json"
    p.write_text(json.dumps(uha_doc()))
    rc = main(["certify", "--model", str(p), "--n-max", "4", "--find-tau"])
    err = capsys.readouterr().err
    assert rc == 2 and "--epsilon margin (the default) needs a boolean or categorical output" in err
    rc = main(["certify", "--model", str(p), "--n-max", "5", "--epsilon", "1/10", "--find-tau", "--tie-break", "off"])
    err = capsys.readouterr().err
    assert rc == 1 and "not simulable this way" in err and "gap 0" in err
    # with the automatic tie-break the same model certifies, and the certificate records it
    out = tmp_path / "u.cert.json"
    rc = main(["certify", "--model", str(p), "--n-max", "5", "--epsilon", "1/10", "--find-tau", "-o", str(out)])
    capsys.readouterr()
    c = load_certificate(out)
    assert rc == 0 and c["status"] == "proved"
    tb = c["premises"]["tie_break"]
    assert tb["heads"][0]["head"] == "last_a" and tb["hard_outputs_unchanged"]["same"]
    assert tb["hard_outputs_unchanged"]["exhaustive"] and c["analysis"]["gap_report_before_tie_break"] is not None
    rep = verify_certificate(c)  # the replay re-plans the tie-break and re-runs both analyses
    assert rep.ok, rep.problems
    fields, _ = _problems(_rehash({**copy.deepcopy(c), "source": {**c["source"], "tie_break": {"last_a": "1/4"}}}))
    assert fields == ["source.tie_break.last_a"]


def test_model_certificate_python_api_matches_cli(cert):
    spec = load_model(EXAMPLE)
    c, an = build_model_construction(spec, n_max=9, epsilon=Fraction(1, 4))
    c2 = certify_model(c, an, n_max=9, tau=1 / Fraction(cert["construction"]["inv_tau"]), numeric=False)
    assert c2["claims"][0]["expr_srepr"] == cert["claims"][0]["expr_srepr"]
    assert c2["status"] == "proved" and c2["kind"] == "model"
    assert verify_certificate(json.loads(json.dumps(c2))).ok


def test_unnamed_headless_model_round_trip(tmp_path, capsys):
    """No name, no heads, a sinusoidal feature: the bound is 0, the certificate verifies (the
    embedded copy keeps the default name, so verify re-derives the same graph)."""
    doc = {"format": "softhard-model", "version": 1, "alphabet": ["a", "b"], "d_model": 3,
           "residual": ["bos", "one", "a"], "token_embedding": [[1, 0, 0], [0, 1, 1], [0, 1, 0]],
           "positional": {"features": [{"family": "sinusoidal", "fn": "sin", "omega": 0.3, "coordinate": "bos"}]},
           "layers": [{"mlp": {"W1": [[0], [0], [1]], "b1": [0.5], "W2": [[0, 0, 1]]}}],
           "outputs": [{"name": "y", "type": "numerical", "coordinate": "a"}]}
    p = tmp_path / "nohead.json"
    p.write_text(json.dumps(doc))
    out = tmp_path / "c.json"
    assert main(["certify", "--model", str(p), "--n-max", "6", "--epsilon", "1/100", "--find-tau", "-o", str(out)]) == 0
    c = load_certificate(out)
    assert c["claims"][0]["expr_text"] == "0" and c["source"]["model"]["name"] == "nohead"
    assert main(["verify", str(out)]) == 0
    capsys.readouterr()


def test_epsilon_margin():
    from softhard.solver.models import epsilon_from_margin
    spec = load_model(EXAMPLE)
    c, an = build_model_construction(spec, n_max=6, epsilon="margin")
    assert c.params.epsilon == Fraction(999, 2000) == epsilon_from_margin(an.report)
    assert an.report.outputs["accept"].margin == Fraction(1, 2)


def test_verify_rejects_a_range_beyond_the_premises(tmp_path):
    """A model claim holds only for the lengths its gap premises cover (found by review: verify used
    to accept a range edited beyond source.n_max, hashes recomputed)."""
    out = tmp_path / "ab.json"
    assert main(["certify", "--model", str(EXAMPLE), "--n-max", "6",
                 "--epsilon", "1/4", "--find-tau", "--no-numeric", "-o", str(out)]) == 0
    cert = load_certificate(out)
    assert verify_certificate(cert).ok
    forged = copy.deepcopy(cert)
    forged["range"]["n_max"] = 1000
    for cl in forged["claims"]:
        cl["n_hi"] = 1000
    rep = verify_certificate(_rehash(forged))
    assert not rep.ok
    assert any(f == "range.n_max" and "premises" in m for f, m in rep.problems), rep.problems
    forged = _rehash({**copy.deepcopy(cert), "range": {**cert["range"], "all_n": True}})
    assert [f for f, _ in verify_certificate(forged).problems] == ["range.all_n"]


def test_epsilon_above_the_margin_claims_no_rounding(tmp_path, capsys):
    """With epsilon >= the output's margin (1/2) the certificate proves only 'error <= epsilon':
    rounded outputs that differ are reported as unguarded and refute nothing; below the margin
    every rounded output must agree (found by a new-user trial: 'A BOUND WAS EXCEEDED' and exit 1)."""
    out = tmp_path / "e5.json"
    rc = main(["certify", "--model", str(EXAMPLE), "--n-max", "8", "--epsilon", "5", "--find-tau", "-o", str(out)])
    text = capsys.readouterr().out
    c = load_certificate(out)
    assert c["premises"]["output_margins"][0]["epsilon_below_margin"] is False
    num = c["numeric"]
    assert rc == 0 and c["status"] == "proved" and num["ok"]
    assert num["mismatched_outputs"] == 0 and num["mismatched_outputs_unguarded"] > 0
    assert "rounding not claimed" in text and "FAILED" not in text
    assert main(["verify", str(out)]) == 0


# --------------------------------------------------------------------------------------------
# every field of a real certificate edited, one at a time (issue 12)

#: the certificate's inputs (the embedded model, N, ε, the range, the searched τ, the analysis
#: method): an edit there must be rejected, and shows up in the fields derived from it rather than
#: at itself.  Every other field (source.tie_break and source.premises too) is re-derived.
INPUTS = ("source.model", "source.model_sha256", "source.n_max", "source.epsilon", "range", "analysis.options",
          "search.per_bound[*].inv_tau_certified")


@pytest.fixture(scope="module")
def ab12():
    spec = load_model(EXAMPLE)
    c, an = build_model_construction(spec, n_max=12, epsilon=Fraction(1, 4))
    return json.loads(json.dumps(certify_model(c, an, n_max=12, find_tau=True)))


def test_every_edit_of_a_model_certificate_is_caught(ab12):
    """Each leaf changed and each key/item deleted, hashes recomputed: verify rejects every edit
    outside the measured fields and names its path (about 1200 edits, ~30 s: edits of derived
    fields reuse the one cached replay)."""
    assert verify_certificate(ab12).ok
    t0 = time.perf_counter()
    assert undetected(ab12, "model", verify_certificate, inputs=INPUTS) == []
    print(f"tamper: {time.perf_counter() - t0:.1f} s")


def test_a_memoised_construction_gives_the_live_report(ab12):
    """The model replay's memo of its construction (:data:`softhard.solver.models._BUILT`, ISSUE 16)
    changes no report: an edit of the numeric section (a replay input the construction does not
    depend on) verified with the memo emptied (built live) and then warm gives the same problems,
    and each replay's construction has its own ``source`` (the stored file annotation), not the
    memo's."""
    bad = copy.deepcopy(ab12)
    bad["numeric"]["families"]["exhaustive"] += 1
    bad["hashes"] = compute_hashes(bad)
    clear_replay_cache()
    models._BUILT.clear()
    cold = verify_certificate(bad)
    assert len(models._BUILT) == 1
    clear_replay_cache()
    warm = verify_certificate(bad)
    assert not cold.ok and (cold.problems, cold.undecided) == (warm.problems, warm.undecided)
    (c, _), = models._BUILT.values()
    other = copy.deepcopy(ab12)
    other["source"]["file"] = "elsewhere.json"
    fresh, (c2, _) = models.replay(other, 20.0)
    assert c2.source["file"] == fresh["source"]["file"] == "elsewhere.json" and c.source["file"] != "elsewhere.json"
    assert c2.graph is c.graph  # (the memo's construction, with a source of its own)


def test_uniform_tieless_in_gap_and_certificate(tmp_path, capsys, monkeypatch):
    """Issue 13 item 5: ``gap`` reports per head whether every row is uniform or has a unique
    maximum (human and --json); the certificate's premises carry it, the composed bound uses the
    tie-free atom for the tieless head with ties, verify replays it, and an edit of it is caught."""
    monkeypatch.setenv("COLUMNS", "400")  # the human table's cells unwrapped (an xdist worker's console is 80 wide)
    p = tmp_path / "follow.json"
    p.write_text(json.dumps(follow_doc(False)))
    assert main(["gap", "--model", str(p), "--n-max", "6", "--json"]) == 0
    heads = {h["head"]: h for h in json.loads(capsys.readouterr().out)["report"]["heads"]}
    # row counts over the 126 words of length <= 6: prev has one uniform row (row 1) per word
    assert heads["prev"]["tieless"] and heads["prev"]["rows"] == {"uniform": 126, "unique_max": 516, "tied": 0}
    assert heads["follow"]["tieless"] and heads["follow"]["tied_at"] is None and heads["follow"]["ties_max"] == 7
    assert main(["gap", "--model", str(p), "--n-max", "6"]) == 0
    assert "yes (384 uniform, 258 unique-max rows)" in capsys.readouterr().out
    t = tmp_path / "tied.json"
    t.write_text(json.dumps(follow_doc(True)))
    assert main(["gap", "--model", str(t), "--n-max", "6"]) == 0
    assert "first a a (2)" in capsys.readouterr().out
    out = tmp_path / "c.json"
    assert main(["certify", "--model", str(p), "--n-max", "6", "--epsilon", "1/10", "--tau", "1/12",
                 "-o", str(out), "--no-numeric"]) == 0
    assert "tieless" in capsys.readouterr().out
    c = load_certificate(out)
    assert c["source"]["premises"]["follow"] == {"gap": "1", "ties_max": 7, "tieless": True}
    ph = {h["head"]: h for h in c["premises"]["heads"]}
    assert "uniform-tieless" in ph["follow"]["statement"] and "uniform-tieless" not in ph["prev"]["statement"]
    assert "uniform-tieless" in c["analysis"]["per_node"]["head:follow"]["local"]
    assert verify_certificate(c).ok
    c2 = copy.deepcopy(c)
    c2["source"]["premises"]["follow"]["tieless"] = False
    fields, _ = _problems(_rehash(c2))
    assert "source.premises.follow.tieless" in fields


def test_a_head_observed_above_a_zero_bound_is_printed(cert, capsys, monkeypatch):
    """Found certifying an imported torch encoder at 1/τ = 10^5: a head's bound underflowed to 0 and
    float64 rounding of its weights left 2.8e-17 — ``worst_ratio`` null (observed/0), and the summary
    crashed formatting it (exit 3 after the certificate was written)."""
    monkeypatch.setenv("COLUMNS", "400")  # rich wraps at 80 columns when stdout is not a terminal
    c = copy.deepcopy(cert)
    head = next(iter(c["numeric"]["heads"]))
    c["numeric"]["heads"][head].update(worst_ratio=None, observed=2.7755575615628914e-17, bound=0.0, n=3,
                                       allowance_abs=3.1082233086775376e-12, violations=0)
    print_model_certificate(c, None)
    out = capsys.readouterr().out
    assert (f"head {head}: bound 0 at n = 3, worst observed 2.78e-17 (float64 rounding: within the allowance "
            "3.11e-12)") in out
    c["numeric"]["heads"][head].update(observed=1e-3, violations=1)
    print_model_certificate(c, None)
    assert f"head {head}: bound 0 at n = 3, worst observed 0.001 ABOVE the bound plus the rounding allowance" \
        in capsys.readouterr().out


def test_a_composed_bound_beyond_the_work_limit_is_refused_at_once(tmp_path, capsys, monkeypatch):
    """Every command bounded: a two-layer torch encoder with layer norms composes a bound of 6004
    operations whose substitution did not end (docs/torch.md); beyond MAX_BOUND_OPERATIONS certify
    refuses before the search and the numeric run, in one line (exit 2).  ab_subsequence's output
    bound has 45 operations: the limit is lowered below it here."""
    monkeypatch.setattr(models, "MAX_BOUND_OPERATIONS", 44)
    rc = main(["certify", "--model", str(EXAMPLE), "--n-max", "9", "--epsilon", "1/4", "--find-tau",
               "-o", str(tmp_path / "c.json")])
    err = capsys.readouterr().err
    assert rc == 2 and not (tmp_path / "c.json").exists()
    assert err.strip().splitlines()[-1] == (
        "softhard: error: the composed error bound has 45 operations, beyond the 44 that softhard substitutes 1/tau "
        "into and proves in bounded time (each layer with layer norms multiplies its size; docs/torch.md, Limitations)")
    assert "searching" not in err and "numeric" not in err
    monkeypatch.setattr(models, "MAX_BOUND_OPERATIONS", 45)
    assert main(["certify", "--model", str(EXAMPLE), "--n-max", "9", "--epsilon", "1/4", "--tau", "1/100",
                 "--no-numeric", "-o", str(tmp_path / "c.json")]) == 0
    # a certificate beyond the limit (made by a softhard with a larger one) could not be re-checked,
    # which is not invalid: exit 1, not 2 (review9)
    capsys.readouterr()
    monkeypatch.setattr(models, "MAX_BOUND_OPERATIONS", 44)
    assert main(["verify", str(tmp_path / "c.json"), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert not out["valid"] and out["undecided"]
    assert [p["field"] for p in out["problems"]] == ["source"]
    assert out["problems"][0]["message"].startswith("could not be re-checked: the composed error bound has 45 operations")
