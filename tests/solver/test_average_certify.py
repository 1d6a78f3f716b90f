"""Certificates with average-hard selections (THEORY §4b): the issue-13 target (a formula of P
nodes certified at n_max = 10^6 with 1/tau <= 50), the per-node choice with the alternative's
requirement, replay, and --construction on the command line."""

from __future__ import annotations

import copy
import json

import mpmath
import pytest

from softhard.bounds.params import Params
from softhard.constructions.parse import load_spec
from softhard.solver.certificate import certify
from softhard.solver.certjson import compute_hashes
from softhard.solver.cli import main
from softhard.solver.kinds import verify_certificate
from softhard.solver.pipeline import build_formula

FAST = {"exhaustive_len": 6, "random_count": 64, "random_n_max": 64, "adversarial_ns": (10, 100)}
FORMULA = "(b & P a) | P(b & P a)"


def exact_requirement(n: int, eta=mpmath.mpf(1) / 4) -> mpmath.mpf:
    """1/tau at which (x + (n-2)x^2)/(1 + x + (n-2)x^2) = eta, x = e^{-1/(2 tau)}: the positive root
    of (n-2)x^2 + x = eta/(1-eta), solved here with mpmath's polynomial root finder."""
    k = eta / (1 - eta)
    roots = mpmath.polyroots([n - 2, 1, -k], extraprec=100)
    x = max(r.real for r in roots)
    return -2 * mpmath.log(x)


@pytest.fixture(scope="module")
def cert():
    c = build_formula(load_spec(FORMULA, alphabet="ab"), Params(regime="T", eta="1/4"))
    return certify(c, n_max=10**6, find_tau=True, numeric_opts=FAST)


def test_target_certified_below_50(cert):
    assert cert["status"] == "proved"
    x = mpmath.mpf(cert["construction"]["inv_tau_decimal"])
    assert x <= 50
    want = exact_requirement(10**6)
    assert want <= x <= want * (1 + mpmath.mpf(10) ** -8)
    for node in cert["nodes"]:
        ch = node["choice"]
        assert node["kind"] == "average-selection" and node["quantity"] == "output"
        assert ch["attention"] == "average" and ch["alternative"] == "unique" and ch["method"] == "auto"
        assert ch["alternative_inv_tau_tight"] > 5e6  # the unique construction: Theta(n)
        assert node["numeric"]["violations"] == 0
        # the numeric runs attain the output bound (the one-key-position word of THEORY §4b)
        assert 0.999 <= node["numeric"]["ratio"] <= 1 + 1e-9
    assert cert["numeric"]["ok"]
    assert verify_certificate(cert).ok


def test_edited_choice_is_rejected(cert):
    for path, value in ((("choice", "attention"), "unique"), (("choice", "alternative_inv_tau_tight"), 1.0),
                        (("quantity",), "leak")):
        bad = copy.deepcopy(cert)
        node = bad["nodes"][0]
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
        bad["hashes"] = compute_hashes(bad)
        rep = verify_certificate(bad)
        assert not rep.ok and any(p[0].startswith("nodes[0]") for p in rep.problems)
    bad = copy.deepcopy(cert)
    bad["source"]["construction"] = "unique"  # an input: the replay builds the unique heads, fields differ
    bad["hashes"] = compute_hashes(bad)
    assert not verify_certificate(bad).ok


def test_unique_construction_is_kept_on_request(tmp_path, capsys):
    out = tmp_path / "c.json"
    code = main(["certify", "P a", "--alphabet", "ab", "--n-max", "1000", "--tau", "1/40", "--construction",
                 "unique", "--json", "-o", str(out)])
    capsys.readouterr()
    c = json.loads(out.read_text())
    assert c["source"]["construction"] == "unique"
    (node,) = c["nodes"]
    assert node["kind"] == "selection" and node["choice"]["attention"] == "unique"
    assert node["choice"]["alternative"] == "average"
    assert node["choice"]["alternative_inv_tau_tight"] < node["choice"]["inv_tau_tight"]
    assert code == 1  # 1/tau = 40 is far too warm for the unique construction at n = 1000 (needs ~4400)
    assert main(["verify", str(out)]) == 0


def test_average_outside_regime_t_is_bad_input(capsys):
    assert main(["bound", "P a", "--regime", "U", "--construction", "average"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs regime T" in err[0]


def test_layernorm_eps_0_certificate_is_for_all_n(tmp_path, capsys):
    """THEORY §1, §5 (a): the ln comparator with eps_ln = 0 is exact for every n, in regime T too."""
    out = tmp_path / "maj.json"
    assert main(["certify", "#a > #b", "--alphabet", "ab", "--comparator", "ln", "--eps-ln", "0", "--tau", "1",
                 "--n-max", "1000", "--json", "-o", str(out)]) == 0
    capsys.readouterr()
    c = json.loads(out.read_text())
    assert c["range"]["all_n"] is True
    assert [(cl["n_lo"], cl["n_hi"], cl["status"]) for cl in c["claims"]] == [(1, None, "proved")]
    assert main(["verify", str(out)]) == 0
    capsys.readouterr()
    bad = json.loads(out.read_text())
    bad["range"]["all_n"] = False  # an input: the claims' ranges re-derived from it differ
    bad["hashes"] = compute_hashes(bad)
    assert not verify_certificate(bad).ok


def test_hahn_says_why_layernorm_is_not_covered(capsys):
    assert main(["hahn", "#a > #b", "--alphabet", "ab", "--comparator", "ln", "--tau", "1", "--json"]) == 1
    r = json.loads(capsys.readouterr().out)
    assert r["applicable"] is False and r["layernorm_nodes"] and "Lipschitz" in r["reason"]
    assert r["eps_ln"] == "0" and "third escape" in r["reason"]
