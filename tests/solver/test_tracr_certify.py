"""Certifying compiled Tracr models (issue 8): the answers against independent closed forms, the
certify/verify round trip with tamper detection (verify by replay, issue 12: every field but the
measured ones re-derived), the CLI.

The closed forms below are derived in the test from the raw arrays and the gap lemma (THEORY §2),
not taken from the module: frac_prevs' worst row is the first position of ``x y…y`` (one key
selected, BOS at gap 1/2, n−1 keys at gap 1), so its error is exactly ``S/(1+S)``,
``S = e^{−λ/2} + (n−1)e^{−λ}``; hist's worst attention row has BOS and the own key tied and n−1
keys at gap 1, bounded by ``t/(2+t)``, ``t = (n−1)e^{−λ}``.
"""

from __future__ import annotations

import copy
import json
import math
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest

import jsonschema
from tamper import _edited, _nodes, undetected

from softhard.constructions.engine import forward
from softhard.constructions.modelfile import doc_sha256
from softhard.constructions.tracr_load import load_tracr
from softhard.solver.certjson import compute_hashes, load_certificate, write_certificate
from softhard.solver.cli import main
from softhard.solver.kinds import verify_certificate
from softhard.solver.replay import schema, validator
from softhard.solver.tracr import certify_tracr

DIR = Path(__file__).resolve().parents[2] / "examples" / "tracr"


@pytest.fixture(scope="module")
def certs():
    return {m: certify_tracr(load_tracr(DIR / m)) for m in ("frac_prevs", "hist")}


def _claims(cert, role):
    return [c for c in cert["claims"] if c["role"] == role]


def _frac_prevs_err(n, lam):
    S = mpmath.exp(-lam / 2) + (n - 1) * mpmath.exp(-lam)
    return S / (1 + S)


def _eps_at(N: int) -> Fraction:
    """0.999/(2N(N-1)) rounded down to 6 significant digits, computed here independently."""
    x = Fraction(999, 2000 * N * (N - 1))
    k = 0
    while x * 10**k < 10**5:
        k += 1
    return Fraction(math.floor(x * 10**k), 10**k)


def test_frac_prevs_answers(certs):
    c = certs["frac_prevs"]
    A = c["answers"]
    eps = Fraction(c["outputs"][0]["epsilon"])
    assert c["outputs"][0]["margin"] == "1/112"  # 1/7 and 1/8 are the closest distinct hard values
    assert eps < Fraction(1, 112)
    assert c["status"] == "proved"
    # 1. exact at the compiled temperature for every n <= 8, and no further (the table)
    assert A["compiled"]["status"] == "proved" and A["compiled"]["exact_up_to"] == 8
    assert "positional table" in A["compiled"]["limited_by"]
    lam = Fraction(A["compiled"]["inv_tau"])
    assert lam * lam * 10 <= 100 * 100 < (lam + Fraction(1, 10**28)) ** 2 * 10
    # 2. the smallest 1/tau for n <= 8 solves S/(1+S) = eps at n = 8
    with mpmath.workdps(40):
        e = mpmath.mpf(eps.numerator) / eps.denominator
        star = mpmath.findroot(lambda x: _frac_prevs_err(8, x) - e, 9.5)
        mi = A["min_inv_tau"]
        assert mi["status"] == "proved" and mi["binding"] == "out:frac_prevs_3"
        assert float(Fraction(mi["inv_tau"])) == pytest.approx(float(star), rel=1e-8)
        assert Fraction(mi["refuted_below"]) < float(star) <= Fraction(mi["inv_tau"])
        # beyond max_seq_len the hard values are fractions a/b, b <= n, distinct ones >= 1/(n(n-1))
        # apart: the tolerance at length N is 0.999/(2N(N-1)) rounded down to 6 digits (at N = 8: eps)
        assert _eps_at(8) == eps

        def within(N, lam):
            t = _eps_at(N)
            return _frac_prevs_err(N, lam) <= mpmath.mpf(t.numerator) / t.denominator
        # 3. longer inputs (hypothetical): the largest n with S/(1+S) <= eps(n) at the compiled 1/tau
        L = mpmath.mpf(100) / mpmath.sqrt(10)
        n_star = max(k for k in range(8, 5000) if within(k, L))
        assert not any(within(k, L) for k in range(n_star + 1, 5000))
        a3 = A["longer_inputs"]
        assert a3["status"] == "proved" and a3["premise"] == "hypothetical" and a3["exact_up_to"] == n_star == 1917
        assert a3["tolerance_at_exact_up_to"] == {"out:frac_prevs_3": str(_eps_at(n_star))}
        # 4. compiled for max_seq_len N: key_size N + 2, 1/tau = 100/sqrt(N + 2); the largest N with the
        #    bound at n = N within eps(N)
        a4 = A["recompiled"]
        assert "N + 2" in a4["key_size_rule"]
        Nc = max(N for N in range(8, 400) if within(N, 100 / mpmath.sqrt(N + 2)))
        assert a4["status"] == "proved" and a4["N_c"] == Nc == 37
        assert {cl["tolerance"] for cl in _claims(c, "recompiled")} == {str(_eps_at(37))}
    # every proved claim has its Z3 proof and an agreeing arb check
    for cl in c["claims"]:
        assert cl["status"] == ("refuted" if cl["role"].endswith(("-next", "-below")) else "proved"), cl["id"]
        assert cl["second_check"]["status"] in (cl["status"], "unknown")
        assert not cl["disagreement"]


def test_hist_answers(certs):
    c = certs["hist"]
    A = c["answers"]
    assert c["status"] == "proved" and A["compiled"]["exact_up_to"] == 8
    (mlp,) = c["mlps"]
    r_min = Fraction(mlp["analysis"]["r_min"])  # the linear region: 1/8 sits inside a ramp
    assert math.isclose(float(r_min), 1 / 8 - (1 / 7 + 1 / 8) / 2 + 1 / 100, rel_tol=1e-5)
    # the tolerance region (the rows of each count): on the ramp at 1/8 (slope 100) the output leaves
    # epsilon after an input error epsilon/100
    assert Fraction(mlp["condition"]["r_min"]) == Fraction(c["outputs"][0]["epsilon"]) / 100
    assert mlp["decoder"]["max_count_decoded"] == 9 and mlp["decoder"]["agrees_with_weights"]
    # the binding claim is the MLP resolution condition: t/(2+t) <= r_min, t = (n-1)e^{-lambda}
    with mpmath.workdps(60):
        L = mpmath.mpf(100) / mpmath.sqrt(5)
        r = mpmath.mpf(r_min.numerator) / r_min.denominator
        n_star = int(mpmath.floor(2 * r / (1 - r) / mpmath.exp(-L))) + 1
        a3 = A["longer_inputs"]
        assert a3["premise"] == "extension" and a3["exact_up_to"] == n_star and a3["binding"] == "mlp:L0.mlp"
        assert any("decodes a count of 9 as 8" in s for s in a3["hard_vs_program"])
        # per count w (MLP context z = 1/(w+1)): the rows there have w + 1 keys in the argmax (BOS tied
        # with the w equal tokens) and 8 - w competitors at gap 1, so the leak is t/(w+1+t),
        # t = (8-w)e^{-lambda}; it moves z from the argmax mean 1/(w+1) towards the competitors' value
        # 0, so z's error is leak/(w+1); the MLP's tolerance region at z (checked against the raw
        # arrays in tests/constructions/test_tracr.py) turns it into the output error L_w * that
        region = {r["z"]: r for r in c["mlps"][0]["region"]}
        eps = Fraction(c["outputs"][0]["epsilon"])
        e = mpmath.mpf(eps.numerator) / eps.denominator
        roots = []
        for w in range(1, 8):
            Lw = Fraction(region[f"1/{w + 1}"]["L"])
            Lm = mpmath.mpf(Lw.numerator) / Lw.denominator
            roots.append(mpmath.findroot(
                lambda x: Lm * (8 - w) * mpmath.exp(-x) / ((w + 1) * (w + 1 + (8 - w) * mpmath.exp(-x))) - e, 3))
        lam_star = float(Fraction(A["min_inv_tau"]["inv_tau"]))
        assert lam_star == pytest.approx(float(max(roots)), rel=1e-8)
        assert A["min_inv_tau"]["binding"] == "out:hist_6"
    # against the model run (float64 soft passes on the words a^w b^(8-w)): at lam_star no output
    # moves by epsilon; 1 % below it one does — the certified minimum is the measured one
    hm = load_tracr(DIR / "hist").hard_model()
    tr = hm.transformer()
    o = hm.outputs[0]
    cols = [tr.labels.index(hm.labels[k]) for k in o.coords]
    words = [["a"] * w + ["b"] * (8 - w) for w in range(1, 9)]
    tok = tr.encode(words)
    hard = forward(tr, tok, mode="hard").x[:, 1:, cols]

    def worst(lam):
        return float(np.max(np.abs(forward(tr, tok, mode="soft", inv_tau=lam).x[:, 1:, cols] - hard)))
    assert worst(lam_star) <= float(eps) < worst(lam_star * 0.99)
    a4 = A["recompiled"]
    assert a4["N_c"] == 9 and a4["hard_failure_next"] == {"N": 10, "count": 10, "decoded": 9}
    assert {cl["n_hi"] for cl in _claims(c, "recompiled")} == set(range(1, 10))


def test_numeric_confirmation(certs):
    fp = certs["frac_prevs"]["numeric"]
    assert fp["ok"] and fp["examples"]["count"] == 20 and fp["examples"]["hard_reproduced"] is True
    assert fp["examples"]["max_abs_soft_minus_stored_numpy_soft"] < 1e-12
    rows = fp["all_words"]["per_inv_tau"][0]["rows"]
    assert [r["n"] for r in rows] == list(range(1, 9))
    # the bound is attained: observed/bound = 1 up to float64 rounding, and to 12 digits at 50 digits
    assert all(abs(r["ratio"] - 1) < 1e-8 for r in rows)
    assert abs(fp["all_words"]["high_precision"][0]["ratio"] - 1) < 1e-12
    hi = certs["hist"]["numeric"]
    assert hi["ok"] and hi["examples"]["hard_reproduced"] is True and hi["examples"]["soft_reproduced"] is True
    assert all(not r["resolved_in_float64"] for r in hi["all_words"]["per_inv_tau"][0]["rows"])
    hp = hi["all_words"]["high_precision"][0]
    assert 0 < float(hp["observed_mp50"]) <= float(hp["bound"])


def _tampered(cert, fn):
    t = copy.deepcopy(cert)
    fn(t)
    t["hashes"] = compute_hashes(t)  # rewrite the hashes too: the replay must still catch it
    return verify_certificate(t)


def _names(rep, field):
    return not rep.ok and any(f == field for f, _ in rep.problems)


@pytest.mark.parametrize("name", ["frac_prevs", "hist"])
def test_verify_round_trip_and_tampering(certs, name, tmp_path):
    cert = certs[name]
    assert cert["schema"] == "softhard-certificate" and cert["schema_version"] == 2 and cert["kind"] == "tracr"
    p = write_certificate(cert, tmp_path / "c.json")
    rep = verify_certificate(load_certificate(p))
    assert rep.ok, rep.problems
    assert any("exhaustive enumeration" in s for s in rep.checked)

    def tol(t):
        t["claims"][0]["tolerance"] = "1/2"
    r = _tampered(cert, tol)
    assert _names(r, "claims[0].tolerance"), r.problems

    def ans(t):
        t["answers"]["longer_inputs"]["exact_up_to"] += 1
    r = _tampered(cert, ans)
    assert not r.ok and any(f.startswith("answers.longer_inputs") for f, _ in r.problems)

    def stated(t):  # the stated value and every field derived from it, consistently: its re-proof fails
        N = t["search"]["longer_inputs"]["exact_up_to"] + 1
        t["search"]["longer_inputs"]["exact_up_to"] = N
        t["answers"]["longer_inputs"]["exact_up_to"] = N
    r = _tampered(cert, stated)
    assert not r.ok and any(f.startswith(("answers.longer_inputs", "claims")) for f, _ in r.problems), r.problems

    def weight(t):
        layer = next(L for L in t["source"]["model"]["layers"] if L["heads"])
        layer["heads"][0]["W_K"][1][0] = 2
        t["source"]["model_sha256"] = doc_sha256(t["source"]["model"])
    r = _tampered(cert, weight)
    assert not r.ok and any(f.startswith(("heads", "premises", "claims", "outputs")) for f, _ in r.problems), r.problems

    def status(t):
        t["status"] = "refuted"
    r = _tampered(cert, status)
    assert _names(r, "status"), r.problems

    def observed(t):  # a numeric row whose ratio no longer matches observed/bound (found by review)
        t["numeric"]["all_words"]["per_inv_tau"][0]["rows"][7]["ratio"] = 0.5
    r = _tampered(cert, observed)
    assert _names(r, "numeric.all_words.per_inv_tau[0].rows[7].ratio"), r.problems

    def violations(t):
        t["numeric"]["all_words"]["violations"] = 3
    r = _tampered(cert, violations)
    assert _names(r, "numeric.all_words.violations"), r.problems

    def example(t):  # the stored examples are re-run: a RASP output that the hard model does not give
        t["source"]["tracr"]["examples"][0]["rasp"][1] = "99" if name == "hist" else 0.75
    r = _tampered(cert, example)
    assert _names(r, "numeric.examples.hard_reproduced"), r.problems

    # an edit without rewriting the hashes is reported by section
    t = copy.deepcopy(cert)
    t["answers"]["compiled"]["limited_by"] = "nothing"
    r = verify_certificate(t)
    assert any(f == "answers" and "hash" in m for f, m in r.problems)


def _setter(path: tuple, value):
    """An edit for :func:`_tampered`: set the field at ``path`` (keys and list indices) to ``value``,
    which must differ from the stored one."""
    def edit(t):
        obj = t
        for k in path[:-1]:
            obj = obj[k]
        assert obj[path[-1]] != value
        obj[path[-1]] = value
    return edit


@pytest.mark.parametrize("name,path,value", [
    ("hist", ("answers", "recompiled", "decoders", "L0.mlp", "correct_for_max_seq_len_up_to"), 12),
    ("frac_prevs", ("answers", "compiled", "n_range"), [1, 100]),
    ("frac_prevs", ("answers", "min_inv_tau", "n"), 1000),
    ("hist", ("answers", "min_inv_tau", "n"), 1000),
])
def test_answer_edits_rejected(certs, name, path, value):
    """The issue-12 forgeries of a Tracr certificate's answers (each field re-derived by the replay)."""
    where = ".".join(path)
    r = _tampered(certs[name], _setter(path, value))
    assert not r.ok and any(f == where or f.startswith(where + "[") for f, _ in r.problems), r.problems


@pytest.mark.parametrize("path,value", [
    (("numeric", "all_words", "per_inv_tau", 0, "rows", 2, "word"), "a"),
    (("numeric", "all_words", "per_inv_tau", 0, "rows", 2, "row"), 4),
    (("numeric", "all_words", "high_precision", 0, "words_tried"), 3),
    (("numeric", "all_words", "high_precision", 0, "word"), "x y"),
    (("numeric", "all_words", "note"), "proves"),
])
def test_measured_all_words_edits_rejected(certs, path, value):
    """Found by a new-user trial (rehashed edits of measured fields were accepted): an all-words
    row's attaining word must have its length over the alphabet and its row be a position in it
    (row 2 is length 3); the 50-digit run's word count and word follow from the stored rows and the
    fixed pairs s t…t, s…s t; the note is the fixed text."""
    where = ".".join(f"[{p}]" if isinstance(p, int) else p for p in path).replace(".[", "[")
    assert certs["hist"]["numeric"]["all_words"]["per_inv_tau"][0]["rows"][2]["n"] == 3
    r = _tampered(certs["hist"], _setter(path, value))
    assert not r.ok and any(f == where for f, _ in r.problems), r.problems


def test_every_edit_detected(certs):
    """Every leaf edited and every key/item deleted (outside the measured fields and the
    provenance annotations), the hashes recomputed: verify rejects each, and names the edited
    field unless it is an input (the embedded model, the export's metadata, the parameters, the
    stated search values), which shows up in the fields derived from it."""
    bad = undetected(certs["frac_prevs"], "tracr", verify_certificate,
                     inputs=("source", "search.min_inv_tau", "search.longer_inputs", "search.recompiled"))
    assert bad == []


def test_memoised_schema_validation_equals_plain_jsonschema(certs):
    """verify's validator (valid sections remembered, ISSUE 16) yields exactly the errors, in the
    same order, of a plain Draft 2020-12 validator, on copies with one of every 12 nodes edited
    or deleted (each validated twice: the memo cold, then warm) and on type-changed sections."""
    plain, memo = jsonschema.Draft202012Validator(schema()), validator()

    def errs(v, c):
        return [(list(e.absolute_path), e.message, e.validator) for e in v.iter_errors(c)]
    cert = certs["frac_prevs"]
    base = json.loads(json.dumps(cert))  # as read from a file; neither validator mutates it (checked below)
    text = json.dumps(base)
    cases = []
    for i, (path, v) in enumerate(_nodes(cert)):  # every 12th node: its leaf edited, or the node deleted
        if i % 12 or not path or path[0] == "hashes":
            continue
        c = parent = dict(base)  # a fresh copy of each container on the path; the rest shared with base
        for p in path[:-1]:
            parent[p] = child = dict(parent[p]) if isinstance(parent[p], dict) else list(parent[p])
            parent = child
        if isinstance(v, (dict, list)) and v:
            del parent[path[-1]]
        else:
            parent[path[-1]] = _edited(v)
        cases.append(c)
    cases += [{**cert, k: v} for k, v in (("heads", {}), ("claims", [1]), ("source", {**cert["source"], "model": []}),
                                          ("numeric", {**cert["numeric"], "all_words": [cert["numeric"]]}))]
    assert errs(plain, cert) == [] == errs(memo, cert)
    bad = 0
    for c in cases:
        want = errs(plain, c)
        assert errs(memo, c) == want and errs(memo, c) == want
        bad += bool(want)
    assert bad >= 20  # schema violations among them, not only valid copies
    assert json.dumps(base) == text  # the cases' shared (unedited) parts were not changed


def test_schema_1_certificate_one_line(certs, tmp_path, capsys):
    old = {k: v for k, v in certs["hist"].items() if k not in ("kind", "search")}
    old.update(schema="softhard-tracr-certificate", schema_version=1)
    rep = verify_certificate(old)
    assert [f for f, _ in rep.problems] == ["schema_version"] and "re-certify" in rep.problems[0][1]
    p = tmp_path / "old.json"
    p.write_text(json.dumps(old))
    assert main(["verify", str(p)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "schema 1" in err[0] and "re-certify" in err[0], err


def test_cli_certify_and_verify(tmp_path, capsys):
    out = tmp_path / "hist.json"
    rc = main(["certify", "--tracr", str(DIR / "hist"), "--no-numeric", "-o", str(out)])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "within epsilon for every n in [1, 8]" in " ".join(text.split())
    assert "smallest 1/tau" in text and "status: proved" in text
    assert main(["verify", str(out)]) == 0
    assert "valid certificate" in capsys.readouterr().out
    rc = main(["run", "--tracr", str(DIR / "frac_prevs"), "x y x", "--json"])
    res = json.loads(capsys.readouterr().out)
    assert rc == 0 and [r["hard"] for r in res["positions"]] == [1.0, 0.5, 2 / 3]
    assert all(r["max_abs_soft_minus_hard"] < 2e-7 for r in res["positions"])
    assert main(["certify", "--tracr", str(DIR / "hist"), "--find-tau"]) == 2
    assert "do not apply to --tracr" in capsys.readouterr().err


def test_epsilon_option_and_refutation(capsys):
    """A tolerance below the compiled model's error at n = 8: the compiled claim is refuted at its
    smallest failing length, and the answer names the largest length still proved."""
    tm = load_tracr(DIR / "frac_prevs")
    with mpmath.workdps(40):
        L = mpmath.mpf(100) / mpmath.sqrt(10)
        mid = (_frac_prevs_err(3, L) + _frac_prevs_err(4, L)) / 2  # the error grows with n: fails from n = 4
        eps = Fraction(mpmath.nstr(mid, 30))
    cert = certify_tracr(tm, epsilon=eps, numeric=False)
    a1 = cert["answers"]["compiled"]
    assert cert["status"] == "refuted" and a1["first_failure"] == 4 and a1["exact_up_to"] == 3
    assert [c["status"] for c in cert["claims"] if c["role"] == "compiled-largest"] == ["proved"]
    assert verify_certificate(cert).ok


def test_causal_variant_bound_does_not_grow(tmp_path, capsys):
    """frac_prevs with Tracr's causal mask (j <= i): the later indices are masked, so no key but BOS
    competes; the bound no longer grows with n.  With a fixed epsilon the longer-inputs answer holds
    for every n; with the default tolerance, which follows the hard values' spacing 1/(n(n-1)),
    it holds up to the n where the constant bound meets 0.999/(2n(n-1))."""
    for ext in (".json", ".npz"):
        (tmp_path / f"frac_prevs{ext}").write_bytes((DIR / f"frac_prevs{ext}").read_bytes())
    meta = json.loads((tmp_path / "frac_prevs.json").read_text())
    meta["config"]["causal"] = True
    (tmp_path / "frac_prevs.json").write_text(json.dumps(meta))
    lam_c = mpmath.mpf(100) / mpmath.sqrt(10)
    with mpmath.workdps(30):
        def const_err(lam):
            return mpmath.exp(-lam / 2) / (1 + mpmath.exp(-lam / 2))

        def within(N, lam):
            t = _eps_at(N)
            return const_err(lam) <= mpmath.mpf(t.numerator) / t.denominator
        n_star = max(k for k in range(2, 10**4) if within(k, lam_c))
        Nc = max(N for N in range(2, 1000) if within(N, 100 / mpmath.sqrt(N + 2)))
    cert = certify_tracr(load_tracr(tmp_path / "frac_prevs"), numeric=False)
    t = cert["heads"][0]["table"]
    assert t["meets"]["indices=0, one=1"] == 1 and t["meets"]["indices=7, one=1"] == 8
    assert cert["heads"][0]["leak_bound"]["text"] == "exp(-1/(2*tau))/(1 + exp(-1/(2*tau)))"
    a3 = cert["answers"]["longer_inputs"]
    assert a3["status"] == "proved" and a3["exact_up_to"] == n_star and a3["tolerance_rule"]
    assert cert["answers"]["recompiled"]["N_c"] == Nc
    assert verify_certificate(cert).ok
    # a fixed epsilon: every n at the compiled temperature
    cert = certify_tracr(load_tracr(tmp_path / "frac_prevs"), epsilon=Fraction(1, 200), numeric=False)
    a3 = cert["answers"]["longer_inputs"]
    assert a3["status"] == "proved" and a3["all_n"] and a3["exact_up_to"] is None
    (x,) = [c for c in cert["claims"] if c["role"] == "longer"]
    assert x["n_hi"] is None and x["status"] == "proved"
    with mpmath.workdps(30):
        e = Fraction(cert["outputs"][0]["epsilon"])
        need = 2 * mpmath.log((1 - mpmath.mpf(e.numerator) / e.denominator) / (mpmath.mpf(e.numerator) / e.denominator))
        Nc = max(N for N in range(1, 1000) if 100 / mpmath.sqrt(N + 2) >= need)
    assert cert["answers"]["recompiled"]["N_c"] == Nc
    assert verify_certificate(cert).ok
